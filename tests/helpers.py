"""Helpers of both test trees (tests/ and tests/triton): the photo corpus,
what Sluice says about its broken files, the sluice CLI and its outputs,
Pillow's decode as the reference; and the accuracy tests' `Sluice` runner
and pipelines. Fixtures defined here are imported by the conftests."""

import os
import pathlib
import subprocess
import textwrap

import numpy as np
import pytest

from tests.formats import pillow_pixels

ROOT = pathlib.Path(__file__).resolve().parent.parent

# ------------------------------------------------------------------ the photo corpus

# What Sluice must say about each file of corpus/broken (None: the file
# decodes). MANIFEST.tsv's kinds say how a file was broken, not this: Go's
# video-001.progressive.truncated.jpeg is "truncated" there, but its script
# ends with refinement pending, EOI present, and libjpeg and Pillow decode it.
BROKEN_CAUSES = {
    "bad_crc.png": "corrupt data",
    "corrupt_scan.jpg": "corrupt data",
    "go_video-001.progressive.truncated.jpeg": None,
    "skimage_truncated.jpg": "truncated",
    "truncated_90pct_progressive.jpg": "truncated",
    "truncated_idat.png": "truncated",
    "jpeg_bytes_named.png": None,  # valid bytes under a misleading name
    "png_bytes_named.jpg": None,
}


def corpus_dir():
    return pathlib.Path(os.environ.get("SLUICE_CORPUS", ROOT.parent / "shared" / "corpus"))


class Corpus:
    """The corpus folder and its MANIFEST.tsv; corpus / "jpeg/..." is a path in it."""

    def __init__(self, root):
        self.root = root
        self.entries = []  # (relative path, kind)
        with open(root / "MANIFEST.tsv") as f:
            head = f.readline().rstrip("\n").split("\t")
            ifile, ikind = head.index("file"), head.index("kind")
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) > ikind:
                    self.entries.append((cols[ifile], cols[ikind]))

    def __truediv__(self, rel):
        return self.root / rel

    def files(self, prefix=""):
        return [self.root / p for p, _ in self.entries if p.startswith(prefix)]

    def good(self):
        """Every image a decoder must accept (everything outside broken/)."""
        return [self.root / p for p, k in self.entries if not k.startswith("broken/")]

    def broken(self):
        return sorted((self.root / "broken").iterdir())


def has_corpus(d):
    return (d / "MANIFEST.tsv").exists()


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
    if not has_corpus(d):
        no_corpus(d)
    return Corpus(d)


# ------------------------------------------------------------------ the sluice CLI


@pytest.fixture(scope="session")
def sluice_bin(tmp_path_factory):
    """The CLI under test: $SLUICE_BIN, else built from this checkout (not
    build/sluice, which may be older than the sources it is to test).
    python/tests/helpers.py's sluice_bin, for the exporter's tests, never
    builds: they need any sluice, and skip without one."""
    if os.environ.get("SLUICE_BIN"):
        return os.environ["SLUICE_BIN"]
    out = tmp_path_factory.mktemp("bin") / "sluice"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/sluice"], cwd=ROOT, check=True)
    return str(out)


def sluice_run(binary, pipeline, out, images, extra=()):
    """`sluice run` of the pipeline file over images, writing to folder out:
    (completed process, {str(image): {output name: array}}), an empty dict
    for an image it wrote nothing for. Outputs are named by file stem, so
    images must have distinct stems."""
    cmd = [binary, "run", "--pipeline", str(pipeline), "--out", str(out), *extra, *map(str, images)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    results = {}
    for img in images:
        stem = pathlib.Path(img).stem
        outs = {}
        for f in pathlib.Path(out).glob(glob_escape(stem) + ".*.npy"):
            name = f.name[len(stem) + 1 : -len(".npy")]
            if "." not in name:
                outs[name] = np.load(f)
        results[str(img)] = outs
    return proc, results


def glob_escape(s):
    return "".join("[" + c + "]" if c in "[]*?" else c for c in s)


# ------------------------------------------------------------------ references


def pil_rgb(path, orient=True):
    """Pillow's decode as the accuracy tests' reference: upright (EXIF
    applied) RGB uint8."""
    return pillow_pixels(path, "RGB", orient)


def diff_stats(a, b):
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return d.mean(), d.max()


# ------------------------------------------------------------------ the accuracy tests' runner


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
        proc, results = sluice_run(self.binary, pfile, work / "out", images, extra)
        if expect_ok and proc.returncode != 0:
            raise AssertionError(f"{' '.join(proc.args)} failed ({proc.returncode}):\n{proc.stderr}")
        return {img: outs for img, outs in results.items() if outs}, proc


def run_grouped(sluice, images, make_pipeline, key):
    """Runs one CLI call per distinct key (e.g. image size), since a
    pipeline's outputs have one static shape."""
    groups = {}
    for p in images:
        groups.setdefault(key(p), []).append(p)
    results = {}
    for k, paths in groups.items():
        res, _ = sluice.run(make_pipeline(*k), paths)
        results.update(res)
    return results


def size_key(p):
    h, w = pil_rgb(p).shape[:2]
    return (h, w)


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
