"""Shared fixtures: the sluice CLI, the photo corpus, and a helper that runs a
pipeline over images and returns its outputs as NumPy arrays."""

import os
import pathlib
import subprocess
import textwrap

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# tests/triton needs a real tritonserver and its own venv (.venv-triton,
# numpy < 2): `make test-triton` runs it.
collect_ignore = ["triton"]


def corpus_dir():
    return pathlib.Path(os.environ.get("SLUICE_CORPUS", ROOT.parent / "shared" / "corpus"))


@pytest.fixture(scope="session")
def sluice_bin(tmp_path_factory):
    """The CLI under test: $SLUICE_BIN, else built from this checkout."""
    if os.environ.get("SLUICE_BIN"):
        return os.environ["SLUICE_BIN"]
    out = tmp_path_factory.mktemp("bin") / "sluice"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/sluice"], cwd=ROOT, check=True)
    return str(out)


def no_corpus(d):
    """Skips the test without the corpus, or fails it where
    SLUICE_REQUIRE_CORPUS=1 (CI): there a missing corpus is an error."""
    msg = f"photo corpus not found at {d} (set SLUICE_CORPUS)"
    if os.environ.get("SLUICE_REQUIRE_CORPUS") == "1":
        pytest.fail(msg + "; SLUICE_REQUIRE_CORPUS=1", pytrace=False)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def corpus():
    d = corpus_dir()
    if not (d / "MANIFEST.tsv").exists():
        no_corpus(d)
    return d


class Sluice:
    """Runs `sluice run` with a pipeline written from text."""

    def __init__(self, binary, tmp):
        self.binary = binary
        self.tmp = tmp
        self.n = 0

    def run(self, pipeline_text, images, expect_ok=True, extra=()):
        """Returns ({image path: {output: array}}, completed process)."""
        self.n += 1
        work = self.tmp / f"run{self.n}"
        work.mkdir()
        pfile = work / "pipeline.pbtxt"
        pfile.write_text(textwrap.dedent(pipeline_text))
        out = work / "out"
        cmd = [self.binary, "run", "--pipeline", str(pfile), "--out", str(out), *extra, *map(str, images)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if expect_ok and proc.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
        results = {}
        for img in images:
            base = pathlib.Path(img).stem
            outs = {}
            for f in out.glob(f"{glob_escape(base)}.*.npy"):
                name = f.name[len(base) + 1 : -len(".npy")]
                if "." not in name:
                    outs[name] = np.load(f)
            if outs:
                results[str(img)] = outs
        return results, proc


def glob_escape(s):
    return "".join("[" + c + "]" if c in "[]*?" else c for c in s)


@pytest.fixture
def sluice(sluice_bin, tmp_path):
    return Sluice(sluice_bin, tmp_path)


def decode_pipeline(h, w, color="RGB", orient=True, dct=False):
    """A pipeline whose output is the whole decoded image: a crop of the
    full frame gives the static shape a pipeline output needs."""
    return f"""
    version: 1
    input {{ name: "IMAGE" }}
    node {{ op: "decode" arg {{ name: "color" str: "{color}" }} arg {{ name: "orient" bool: {str(orient).lower()} }}
            arg {{ name: "dct_scale" bool: {str(dct).lower()} }} }}
    node {{ op: "crop" arg {{ name: "roi" ints {{ v: [0, 0, {h}, {w}] }} }} }}
    output {{ name: "PIXELS" }}
    """


def diff_stats(a, b):
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return d.mean(), d.max()
