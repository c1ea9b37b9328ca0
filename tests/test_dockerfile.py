"""docker/Dockerfile stays consistent with the Makefile and the tested
Triton version (no Docker needed: the files are read, nothing is built).

The image must build the backend the way a developer does (`make backend
build`, so the flags are the Makefile's), install what the Makefile and
scripts/pic-libs.sh need, copy the backend to where Triton looks for
it, and run the Triton release the real-server tests use.
"""

import fnmatch
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "docker" / "Dockerfile"
TRITON_BACKENDS = "/opt/tritonserver/backends/sluice/"


def logical_lines(text):
    """Dockerfile instructions: comments dropped, continuations joined."""
    out, cur = [], ""
    for line in text.splitlines():
        s = line.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if cur and s.startswith("#"):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        out.append(cur + s)
        cur = ""
    if cur:
        out.append(cur)
    return out


class Stage:
    def __init__(self, image, name, written):
        # image: with the global ARGs' defaults put in; written: as in the file.
        self.image, self.name, self.written, self.lines = image, name, written, []

    def instr(self, kind):
        return [line.split(None, 1)[1] for line in self.lines if line.split(None, 1)[0].upper() == kind]


@pytest.fixture(scope="module")
def docker():
    lines = logical_lines(DOCKERFILE.read_text())
    args, stages = {}, []
    for line in lines:
        kind, rest = line.split(None, 1)
        kind = kind.upper()
        if kind == "FROM":
            m = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            image = re.sub(r"\$\{?(\w+)\}?", lambda v: args.get(v.group(1), v.group(0)), m.group(1))
            stages.append(Stage(image, m.group(2), m.group(1)))
        elif not stages and kind == "ARG":
            k, _, v = rest.partition("=")
            args[k.strip()] = v.strip()
        elif stages:
            stages[-1].lines.append(line)
    assert len(stages) >= 2, "docker/Dockerfile: expected a build stage and a runtime stage"
    return stages


def global_args():
    lines = logical_lines(DOCKERFILE.read_text())
    first = next(i for i, line in enumerate(lines) if line.split()[0].upper() == "FROM")
    return [line.split(None, 1)[1].partition("=")[0].strip() for line in lines[:first] if line.split()[0].upper() == "ARG"]


def stage(docker, name):
    for st in docker:
        if st.name == name:
            return st
    raise AssertionError(f"docker/Dockerfile: no stage named {name}")


def makefile_var(name):
    m = re.search(rf"^{name}\s*[:?]?=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert m, f"Makefile: no {name}"
    return m.group(1).strip()


def test_build_stage_is_bookworm_with_go_of_go_mod(docker):
    build = stage(docker, "build")
    m = re.fullmatch(r"golang:(\d+)\.(\d+)(?:\.\d+)?-bookworm", build.image)
    assert m, f"build stage FROM {build.image}: want golang:<go.mod's version>-bookworm (Debian 12)"
    want = re.search(r"^go (\d+)\.(\d+)", (ROOT / "go.mod").read_text(), re.M)
    assert m.groups() == want.groups(), f"{build.image} vs go.mod's go {'.'.join(want.groups())}"


def test_builds_with_the_makefile_targets(docker):
    build = stage(docker, "build")
    runs = build.instr("RUN")
    makes = [r for r in runs if re.search(r"(^|&&|;)\s*make\b", r)]
    targets = {t for r in makes for t in re.findall(r"\bmake\s+([\w\s-]+)", r)[0].split()}
    assert {"backend", "build"} <= targets, f"want `make backend build`, found make targets {sorted(targets)}"
    for r in runs:
        # Flags belong to the Makefile: no build commands of the image's own.
        assert not re.search(r"\bgo\s+(build|install)\b|-buildmode|-ldflags|\bgcc\b\s+-|\bcmake\b\s+-", r), (
            f"docker/Dockerfile builds on its own instead of through the Makefile: RUN {r}"
        )
    for env in build.instr("ENV") + build.instr("ARG"):
        assert not re.match(r"(CGO_\w+|GOFLAGS|CC|CFLAGS|LDFLAGS)\b", env), f"flag override in the image: {env}"
    # The Makefile still has those targets.
    mk = (ROOT / "Makefile").read_text()
    for t in ("backend", "build", "pic-libs", "deps"):
        assert re.search(rf"^{re.escape(t)}:", mk, re.M), f"Makefile lost target {t}"


def test_installs_what_the_build_installs_itself(docker):
    """The packages `make deps` and scripts/pic-libs.sh would install,
    installed up front (one cached layer)."""
    runs = " ".join(stage(docker, "build").instr("RUN"))
    assert "apt-get install" in runs
    installed = set(re.findall(r"[\w.+-]+", runs.split("apt-get install", 1)[1].split("&&", 1)[0]))
    pic_deps = re.search(r"^PIC_DEPS := ((?:.*\\\n)*.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert pic_deps, "the Makefile lost PIC_DEPS"
    want = set(re.findall(r"[\w.+-]+", pic_deps.group(1)))
    want |= set(re.findall(r"missing\+=\(([\w.+-]+)\)", (ROOT / "scripts" / "pic-libs.sh").read_text()))
    assert {"libturbojpeg0-dev", "libwebp-dev", "cmake", "meson", "nasm", "dpkg-dev"} <= want, want
    assert want <= installed, f"build stage does not install {sorted(want - installed)}"


def test_runtime_stage(docker):
    final = docker[-1]
    m = re.fullmatch(r"nvcr\.io/nvidia/tritonserver:(\d\d)\.(\d\d)-py3", final.image)
    assert m, f"final stage FROM {final.image}: want NVIDIA's tritonserver:<YY.MM>-py3 image"
    # NGC releases are monthly and Triton's minor version counts them:
    # 22.01 was 2.18.0, 24.02 was 2.43.0, so 24.10 is 2.51.0.
    yy, mm = int(m.group(1)), int(m.group(2))
    minor = 18 + (yy - 22) * 12 + (mm - 1)
    tested = re.search(r"tritonclient\[[\w,]+\]==2\.(\d+)\.", (ROOT / "tests/triton/requirements.txt").read_text())
    assert minor == int(tested.group(1)), (
        f"{final.image} is Triton 2.{minor}, the tests run 2.{tested.group(1)} (tests/triton/requirements.txt)"
    )

    copies = final.instr("COPY")
    backend_so = makefile_var("BACKEND_SO").replace("$(BUILD)", makefile_var("BUILD"))
    backend_dir = str(pathlib.PurePosixPath(backend_so).parent) + "/"
    build_name = stage(docker, "build").name
    want = re.compile(rf"--from={build_name}\s+/\S+/{re.escape(backend_dir)}\s+{re.escape(TRITON_BACKENDS)}$")
    assert any(want.search(c) for c in copies), f"no COPY of {backend_dir} to {TRITON_BACKENDS}: {copies}"
    assert any(re.fullmatch(r"model_repository/?\s+/models/?", c) for c in copies), copies

    # The hardware JPEG decoder needs the driver's video capability.
    caps = [e for e in final.instr("ENV") if re.match(r"NVIDIA_DRIVER_CAPABILITIES[=\s]", e)]
    assert caps, "runtime stage sets no NVIDIA_DRIVER_CAPABILITIES (want compute,utility,video)"
    value = re.split(r"[=\s]", caps[-1], maxsplit=1)[1].strip().strip('"')
    assert value == "all" or {"compute", "utility", "video"} <= set(value.split(",")), value

    cmd = " ".join(final.instr("CMD"))
    assert "tritonserver" in cmd and "--model-repository=/models" in cmd, cmd


def test_dockerignore_keeps_the_sources():
    patterns = [
        p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines() if p.strip() and not p.startswith("#")
    ]

    def ignored(path):
        parts = path.split("/")
        return any(
            fnmatch.fnmatch(path, q) or any(fnmatch.fnmatch(x, q) for x in parts)
            for q in (p.removeprefix("**/") for p in patterns)
            if not q.startswith("!")
        )

    for kept in ("Makefile", "go.mod", "go.sum", "scripts/pic-libs.sh", "scripts/lib.sh", "cgo/main.go", "cgo/shim.c",
                 "codec", "model_repository/preprocess_imagenet/1/model.sluice", "docker/Dockerfile"):  # fmt: skip
        assert not ignored(kept), f".dockerignore leaves out {kept}, which the build needs"
    for gone in ("build", ".venv-triton", ".venv", ".git"):
        assert ignored(gone), f".dockerignore should leave out {gone}"


def test_kernels_stage_builds_the_ptx_with_make(docker):
    """The PTX and the sm_90 cubin are rebuilt with `make ptx` and Debian's
    nvcc, and the build stage embeds those instead of the committed copies."""
    kernels = stage(docker, "kernels")
    assert kernels.image == "debian:bookworm", kernels.image
    runs = " ".join(kernels.instr("RUN"))
    assert "nvidia-cuda-toolkit" in runs and "non-free" in runs, runs
    assert re.search(r"\bmake ptx\b", runs), runs
    assert re.search(r"^ptx:", (ROOT / "Makefile").read_text(), re.M), "Makefile lost target ptx"
    copies = stage(docker, "build").instr("COPY")
    built = ("sluice.ptx", "sluice_sm90.cubin", "sluice_sm90.cubin.sha256")
    want = r"--from=kernels\s+" + r"\s+".join(re.escape("/src/kernels/" + f) for f in built) + r"\s+kernels/"
    assert any(re.fullmatch(want, c) for c in copies), copies


def test_every_base_is_a_build_argument(docker):
    """Another registry or a local test base can stand in for each official
    image: every FROM names a global ARG (the runtime's is BASE_IMAGE), and
    docker/image_bases.sh hands docker/image.sh a test base for each."""
    written = {st.name or "runtime": st.written for st in docker}
    for name, image in written.items():
        assert re.fullmatch(r"\$\{?\w+\}?", image), f"stage {name}: FROM {image} is not a build argument"
    assert written["runtime"] in ("${BASE_IMAGE}", "$BASE_IMAGE"), written["runtime"]
    from_args = {image.strip("${}") for image in written.values()}
    assert from_args <= set(global_args()), f"FROM arguments without a global ARG: {from_args - set(global_args())}"
    bases = set(re.findall(r'^echo "(\w+)=', (ROOT / "docker" / "image_bases.sh").read_text(), re.M))
    assert bases == from_args, f"docker/image_bases.sh provides {sorted(bases)}, the Dockerfile's bases are {sorted(from_args)}"
