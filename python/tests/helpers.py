"""Shared by the exporter's tests: the sluice CLI, the corpus photos, running an
exported pipeline, and skipping where the binary is older than an argument the
export uses (SLUICE_BIN may name an installed one)."""

import collections
import glob
import os
import pathlib
import subprocess

import numpy as np
import pytest

from sluice_export.capabilities import missing_features

REPO = pathlib.Path(__file__).resolve().parents[2]
# Normalized units; one 0-255 level is about 1/(255*0.22) = 0.018 of them, so
# this is float rounding, far below a level.
ATOL = 2e-5
# Exact: float32 rounding in normalized units (one 0-255 level is about 0.018
# of them after ImageNet's std), 0 where the output is uint8.
EXACT = 1e-5


def sluice_bin():
    """The CLI the exported pipelines run on: $SLUICE_BIN (an installed one
    will do), else this checkout's build/sluice; skips without one. It never
    builds, as the exporter needs no Go; tests/helpers.py's sluice_bin, for the
    tests of the CLI itself, builds this checkout instead."""
    b = os.environ.get("SLUICE_BIN") or str(REPO / "build" / "sluice")
    if not pathlib.Path(b).exists():
        pytest.skip(f"no sluice binary at {b} (go build -o build/sluice ./cmd/sluice, or set SLUICE_BIN)")
    return b


def corpus_photos(sub="jpeg/derived"):
    root = pathlib.Path(os.environ.get("SLUICE_CORPUS", REPO.parent / "shared" / "corpus"))
    d = root / sub
    if not d.is_dir():
        if os.environ.get("SLUICE_REQUIRE_CORPUS") == "1":
            pytest.fail(f"photo corpus not found at {root}; SLUICE_REQUIRE_CORPUS=1", pytrace=False)
        pytest.skip(f"photo corpus not found at {root} (set SLUICE_CORPUS)")
    files = sorted(p for p in d.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    assert files, d
    return files


# Every folder of valid images in the corpus (broken/ holds the files every
# decoder must reject): the parity tests run on all of them.
CORPUS_DIRS = ("jpeg/derived", "jpeg/exif", "jpeg/native", "jpeg/large", "jpeg/tiny", "png", "edge")


def not_16bit_grey(paths):
    """paths less 16-bit grey PNGs. Pillow opens them as mode I;16, and its
    convert("RGB"), which every library here calls, clips each sample to 255
    (nearly every pixel of a real photo becomes white), where sluice's decode
    keeps the high byte, as for every 16-bit sample; no library's preprocessing
    means that clipping, so there is nothing to match (tests/
    test_transformers_crop_alpha.py skips them for the same reason). 16-bit RGB
    PNGs stay: Pillow opens those as RGB from the high bytes, as sluice does."""
    from PIL import Image

    keep = []
    for p in paths:
        with Image.open(p) as im:
            if im.mode not in ("I", "I;16", "I;16B", "I;16L"):
                keep.append(p)
    return keep


def skip_unless_supported(binary, pipeline):
    missing = missing_features(binary, pipeline.text())
    if missing:
        pytest.skip(f"this sluice build lacks {', '.join(missing)} (issue #25's Go side, not merged here yet)")


def run_exported(binary, pipeline, images, tmp_path):
    """`sluice run` of the pipeline over images: {path: {output: array}}."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    pfile = tmp_path / "pipeline.pbtxt"
    pfile.write_text(pipeline.text())
    out = tmp_path / "out"
    proc = subprocess.run([binary, "run", "--pipeline", str(pfile), "--out", str(out), *map(str, images)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    res = {}
    for img, name in zip(images, output_names(images)):
        # <name>.<OUTPUT>.npy exactly: a glob on the name alone would also take
        # another image's outputs where one stem extends another (jpeg/tiny's
        # go_video-001.q50.411 and go_video-001.q50.411.progressive).
        res[img] = {f.name[len(name) + 1:-4]: np.load(f) for f in out.glob(glob.escape(name) + ".*.npy")
                    if "." not in f.name[len(name) + 1:-4]}
    return res


def run_per_folder(binary, pipeline, photos, tmp_path):
    """run_exported over photos, one run per folder (a file name may recur in
    two folders): {path: {output: array}}."""
    res = {}
    for i, d in enumerate(sorted({p.parent for p in photos})):
        res.update(run_exported(binary, pipeline, [p for p in photos if p.parent == d], tmp_path / f"run{i}"))
    return res


def all_photos():
    """Every corpus photo of CORPUS_DIRS but the 16-bit grey PNGs (not_16bit_grey)."""
    return [p for d in CORPUS_DIRS for p in not_16bit_grey(corpus_photos(d))]


def output_names(images):
    """The names `sluice run` gives each image's outputs: its stem, or its file
    name where another image given has the same stem (x.bmp and x.avif)."""
    stems = collections.Counter(pathlib.Path(p).stem for p in images)
    return [pathlib.Path(p).name if stems[pathlib.Path(p).stem] > 1 else pathlib.Path(p).stem for p in images]


def assert_parity(results, reference, name="PIXELS", atol=ATOL, label=""):
    """reference(path) -> array; returns (images, max abs diff)."""
    worst = 0.0
    for img, outs in results.items():
        want = np.asarray(reference(img), dtype=np.float64)
        got = outs[name].astype(np.float64)
        assert got.shape == want.shape, (img.name, got.shape, want.shape)
        d = float(np.abs(got - want).max())
        assert d <= atol, f"{img.name}: max diff {d} > {atol}"
        worst = max(worst, d)
    print(f"parity{' ' + label if label else ''}: {len(results)} images, max abs diff {worst:.3g}")
    return len(results), worst


# openai/clip-vit-base-patch32's preprocessor_config.json: the exporter tests'
# transformers case and the docs' example.
CLIP = {"image_processor_type": "CLIPImageProcessor", "do_resize": True, "size": {"shortest_edge": 224},
        "resample": 3, "do_center_crop": True, "crop_size": {"height": 224, "width": 224}, "do_rescale": True,
        "rescale_factor": 0.00392156862745098, "do_normalize": True,
        "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
        "do_convert_rgb": True}
