"""Fixtures for the tests against a real tritonserver 2.51 (scripts/triton.sh).

One server per session, on free loopback ports, in explicit model-control
mode over a temporary copy of model_repository/ with two test models added:

  preprocess_imagenet_bytes  preprocess_imagenet's pipeline behind a
                             TYPE_STRING [1] input (several images per request)
  preprocess_broken          an invalid pipeline.pbtxt: must fail to load

The server starts with the Python stand-in classifier only; the Sluice
models are loaded through the API by the `sluice_models` fixture, so that a
missing backend library skips the Sluice tests (with a message) and a
failing one fails them with Triton's load error, while the rest still run.

Environment: SLUICE_CORPUS (photos, default ../shared/corpus),
SLUICE_BACKEND_DIR (holds sluice/libtriton_sluice.so, default build/backends),
SLUICE_BIN (the sluice CLI, default built from this checkout), TRITON_VENV
(default: the venv running pytest).
"""

import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.helpers import (  # noqa: F401 (fixtures: corpus, sluice_bin)
    ROOT,
    Corpus,
    corpus,
    corpus_dir,
    has_corpus,
    no_corpus,
    sluice_bin,
    sluice_run,
)
from tests.triton.helpers import (
    BROKEN_OP,
    IMAGENET,
    SLUICE_MODELS,
    TIMEOUT_S,
    InferenceServerException,
    grpcclient,
    httpclient,
    make_synthetic,
    read_bytes,
    say,
)

TRITON_SH = ROOT / "scripts" / "triton.sh"
BACKEND_DIR = pathlib.Path(os.environ.get("SLUICE_BACKEND_DIR", ROOT / "build" / "backends"))
BACKEND_SO = BACKEND_DIR / "sluice" / "libtriton_sluice.so"


# ------------------------------------------------------------------ photos


class Photos(list):
    """Valid images for the server tests: the corpus's ImageNet-size JPEGs
    (jpeg/derived, jpeg/native) and its PNGs, plus .large, one large JPEG;
    without the corpus, synthetic ones (helpers.make_synthetic)."""

    def __init__(self, paths, large, all_valid, corpus=None):
        super().__init__(paths)
        self.large = large
        self.all_valid = all_valid  # every image the decoders must accept
        self.corpus = corpus  # None: synthetic images

    def png(self):
        return [p for p in self if p.suffix == ".png"]

    def jpeg(self):
        return [p for p in self if p.suffix in (".jpg", ".jpeg")]


@pytest.fixture(scope="session")
def photos(request, tmp_path_factory):
    d = corpus_dir()
    if has_corpus(d):
        c = Corpus(d)
        normal = c.files("jpeg/derived/") + c.files("jpeg/native/") + c.files("png/")
        return Photos(normal, c.files("jpeg/large/")[0], c.good(), corpus=c)
    if os.environ.get("SLUICE_REQUIRE_CORPUS") == "1":
        no_corpus(d)
    say(request.config, f"\nphoto corpus not found at {d} (set SLUICE_CORPUS): synthetic images instead")
    paths = make_synthetic(tmp_path_factory.mktemp("synthetic"))
    return Photos(paths[:-1], paths[-1], paths)


# ------------------------------------------------------------------ the sluice CLI (reference outputs)


def pipeline_file(model_dir):
    """The file Sluice loads from a version folder: model.sluice first."""
    for name in ("model.sluice", "pipeline.pbtxt"):
        if (model_dir / "1" / name).exists():
            return model_dir / "1" / name
    raise FileNotFoundError(f"no pipeline in {model_dir}/1")


class Reference:
    """`sluice run` outputs of one pipeline, computed on demand and cached."""

    def __init__(self, binary, pipeline, tmp):
        self.binary, self.pipeline, self.tmp = binary, pipeline, tmp
        self.cache = {}
        self.n = 0

    def outputs(self, images):
        """{image path: {output name: array}}; images sluice rejects are absent."""
        todo = [p for p in images if str(p) not in self.cache]
        # One run per folder: `run` names outputs by file stem.
        by_dir = {}
        for p in todo:
            by_dir.setdefault(pathlib.Path(p).parent, []).append(pathlib.Path(p))
        for _, files in sorted(by_dir.items()):
            self.n += 1
            proc, outs = sluice_run(self.binary, self.pipeline, self.tmp / f"run{self.n}", files)
            for f in files:
                self.cache[str(f)] = outs[str(f)] or None
                if not outs[str(f)] and proc.returncode == 0:
                    raise AssertionError(f"sluice run wrote nothing for {f}:\n{proc.stderr}")
        return {str(p): self.cache[str(p)] for p in images if self.cache[str(p)] is not None}


@pytest.fixture(scope="session")
def reference(sluice_bin, tmp_path_factory):
    """reference(model) → Reference for that model's pipeline in model_repository/."""
    refs = {}

    def get(model):
        if model not in refs:
            refs[model] = Reference(
                sluice_bin, pipeline_file(ROOT / "model_repository" / model), tmp_path_factory.mktemp("ref-" + model)
            )
        return refs[model]

    return get


# ------------------------------------------------------------------ the server


BYTES_CONFIG = """\
# Test model: preprocess_imagenet's pipeline behind a BYTES input, so that
# one request carries several encoded images of any sizes.
name: "preprocess_imagenet_bytes"
backend: "sluice"
max_batch_size: 64
input [ { name: "IMAGE", data_type: TYPE_STRING, dims: [ 1 ] } ]
output [ { name: "PIXELS", data_type: TYPE_FP32, dims: [ 3, 224, 224 ] } ]
dynamic_batching { max_queue_delay_microseconds: 2000 }
instance_group [ { kind: KIND_CPU, count: 1 } ]
"""


def make_repository(dst):
    """A copy of model_repository/ plus the test models."""
    src = ROOT / "model_repository"
    shutil.copytree(src, dst)
    # BYTES input, same pipeline files.
    b = dst / "preprocess_imagenet_bytes"
    shutil.copytree(src / "preprocess_imagenet" / "1", b / "1")
    (b / "config.pbtxt").write_text(BYTES_CONFIG)
    # An invalid pipeline: text form only (beside a compact file it would
    # be refused for differing from it instead).
    bad = dst / "preprocess_broken"
    (bad / "1").mkdir(parents=True)
    text = (src / "preprocess_imagenet" / "1" / "pipeline.pbtxt").read_text()
    assert 'op: "resize"' in text
    (bad / "1" / "pipeline.pbtxt").write_text(text.replace('op: "resize"', f'op: "{BROKEN_OP}"'))
    (bad / "config.pbtxt").write_text(
        (src / "preprocess_imagenet" / "config.pbtxt")
        .read_text()
        .replace('name: "preprocess_imagenet"', 'name: "preprocess_broken"')
    )
    return dst


class Server:
    def __init__(self, env, work_dir, repo):
        self.env = env
        self.pid = int(env["TRITON_PID"])
        self.host = env["TRITON_HOST"]
        self.http_port = int(env["TRITON_HTTP_PORT"])
        self.grpc_port = int(env["TRITON_GRPC_PORT"])
        self.metrics_port = int(env["TRITON_METRICS_PORT"])
        self.log = pathlib.Path(env["TRITON_LOG"])
        self.work_dir = work_dir
        self.repo = repo
        self.http_url = f"{self.host}:{self.http_port}"
        self.grpc_url = f"{self.host}:{self.grpc_port}"
        self.http = self.http_client()
        self.grpc = grpcclient.InferenceServerClient(self.grpc_url)

    def http_client(self, concurrency=1):
        return httpclient.InferenceServerClient(
            self.http_url, concurrency=concurrency, connection_timeout=TIMEOUT_S, network_timeout=TIMEOUT_S
        )

    def get(self, path, port=None):
        url = f"http://{self.host}:{port or self.http_port}{path}"
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read().decode()

    def rss_kb(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def alive(self):
        try:
            os.kill(self.pid, 0)
            return True
        except OSError:
            return False

    def log_tail(self, n=40):
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError as e:
            return f"(no log: {e})"

    def model_state(self, name):
        for m in self.http.get_model_repository_index():
            if m["name"] == name:
                return m.get("state", ""), m.get("reason", "")
        return None, None

    def add_model(self, name, cfg, pipeline_text=None):
        """A model folder in the server's repository copy: config.pbtxt cfg and
        the given pipeline, or preprocess_imagenet's files. Returns the folder."""
        d = self.repo / name
        (d / "1").mkdir(parents=True, exist_ok=True)
        if pipeline_text is None:
            for f in (self.repo / "preprocess_imagenet" / "1").iterdir():
                (d / "1" / f.name).write_bytes(f.read_bytes())
        else:
            (d / "1" / "pipeline.pbtxt").write_text(pipeline_text)
        (d / "config.pbtxt").write_text(cfg)
        return d

    def ensure_loaded(self, *names):
        for name in names:
            if not self.http.is_model_ready(name):
                self.http.load_model(name)
            assert self.http.is_model_ready(name), f"{name} not ready after load"


@pytest.fixture(scope="session")
def server(request, tmp_path_factory):
    repo = make_repository(tmp_path_factory.mktemp("triton") / "model_repository")
    work = tmp_path_factory.mktemp("triton-work")
    venv = os.environ.get("TRITON_VENV", sys.prefix)
    cmd = [
        "bash", str(TRITON_SH),
        "--venv", venv,
        "--model-repo", str(repo),
        "--backend-dir", str(BACKEND_DIR),
        "--work-dir", str(work),
        "--timeout", "300",
        "--explicit", "--load-model", "classifier",
    ]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    took = time.monotonic() - t0
    if proc.returncode != 0:
        pytest.fail(f"scripts/triton.sh failed ({proc.returncode}):\n{shlex.join(cmd)}\n{proc.stderr[-6000:]}")
    env = dict(line.split("=", 1) for line in proc.stdout.split() if "=" in line)
    s = Server(env, work, repo)
    say(
        request.config,
        f"\ntritonserver pid {s.pid}: ready in {env.get('TRITON_STARTUP_S')}s "
        f"({took:.1f}s with scripts/triton.sh), http {s.http_port} grpc {s.grpc_port} metrics {s.metrics_port}, "
        f"log {s.log}",
    )
    yield s
    s.http.close()
    s.grpc.close()
    alive = s.alive()
    subprocess.run(["bash", str(TRITON_SH), "--stop", "--work-dir", str(work)], capture_output=True, timeout=120)
    if not alive:
        say(request.config, f"tritonserver had exited before the end of the session; log tail:\n{s.log_tail()}")


@pytest.fixture(scope="session")
def sluice_models(request, server):
    """Loads the Sluice models (skips when the backend library is not built)."""
    if not BACKEND_SO.exists():
        pytest.skip(f"Sluice backend not built: no {BACKEND_SO} (make backend)")
    t0 = time.monotonic()
    for name in SLUICE_MODELS:
        try:
            server.http.load_model(name)
        except InferenceServerException as e:
            pytest.fail(f"loading {name} failed: {e}\n--- server log tail:\n{server.log_tail()}")
    say(request.config, f"Sluice models {', '.join(SLUICE_MODELS)} loaded in {time.monotonic() - t0:.2f}s")
    return server


@pytest.fixture
def sluice_server(sluice_models):
    """The server with every Sluice model loaded (a test may have unloaded one)."""
    sluice_models.ensure_loaded(*SLUICE_MODELS)
    yield sluice_models
    assert sluice_models.alive(), f"tritonserver died:\n{sluice_models.log_tail()}"


@pytest.fixture(scope="module")
def normal(photos, reference):
    """A normal request's image and its `sluice run` output."""
    p = photos.jpeg()[0]
    return read_bytes(p), reference(IMAGENET).outputs([p])[str(p)]["PIXELS"]
