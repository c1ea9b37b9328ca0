"""transformers' Pillow processors (no torch) against `sluice run` of the
exported pipeline on every photo of the corpus that Pillow opens (each folder
of helpers.CORPUS_DIRS: JPEGs of every size, chroma layout, CMYK and grey, the
EXIF-tagged ones, the arithmetic-coded one, the PNGs: palette, interlaced, RGBA,
16-bit RGB), to float rounding. 16-bit grey PNGs are left out
(helpers.not_16bit_grey says why). Pipelines that use an argument this sluice
build lacks skip, naming it."""

import numpy as np
import pytest
from PIL import Image

from sluice_export import export_transformers
from helpers import (CORPUS_DIRS, assert_parity, corpus_photos, not_16bit_grey, run_exported, skip_unless_supported,
                     sluice_bin)

transformers = pytest.importorskip("transformers")

CASES = {
    # class, config (the rest: the class defaults, as a saved config carries them)
    "vit": ("ViTImageProcessorPil", {}),
    "vit_nearest_384": ("ViTImageProcessorPil", {"size": {"height": 384, "width": 384}, "resample": 0}),
    "convnext_384": ("ConvNextImageProcessorPil", {"size": {"shortest_edge": 384}}),
    "convnext_224": ("ConvNextImageProcessorPil", {"size": {"shortest_edge": 224}, "crop_pct": 0.875}),
    "clip": ("CLIPImageProcessorPil", {}),
    "clip_no_rgb": ("CLIPImageProcessorPil", {"do_convert_rgb": False}),
    "siglip": ("SiglipImageProcessorPil", {}),
    "deit": ("DeiTImageProcessorPil", {}),
    "bit": ("BitImageProcessorPil", {}),
}


@pytest.mark.parametrize("folder", CORPUS_DIRS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_transformers_pil_parity(case, folder, tmp_path):
    cls_name, overrides = CASES[case]
    proc = getattr(transformers, cls_name)(**overrides)
    # The config as transformers saves it (to_dict drops the Pil suffix), so
    # the exporter reads what a user's preprocessor_config.json holds.
    cfg = proc.to_dict()
    pipeline = export_transformers(cfg, backend="pil")
    assert export_transformers(proc).text() == pipeline.text()  # the object gives the same export
    b = sluice_bin()
    skip_unless_supported(b, pipeline)
    photos = not_16bit_grey(corpus_photos(folder))
    if not proc.do_convert_rgb:
        # Without convert_rgb transformers takes the mode as it is: a grey,
        # palette, CMYK or RGBA photo keeps its channel count, and normalize's
        # three means refuse it. Those photos have no reference (sluice, which
        # decodes to RGB, answers them): RGB photos only, after checking that
        # transformers does refuse the others.
        others = [p for p in photos if Image.open(p).mode != "RGB"]
        for p in others:
            with Image.open(p) as im, pytest.raises(ValueError):
                proc(im, return_tensors="np")
        photos = [p for p in photos if p not in others]
    assert photos, folder
    res = run_exported(b, pipeline, photos, tmp_path)

    def reference(path):
        with Image.open(path) as im:
            return np.asarray(proc(im, return_tensors="np")["pixel_values"][0])

    n, worst = assert_parity(res, reference, label=f"{case} {folder}")
    assert n == len(photos)


def test_transformers_alpha_onto_white(tmp_path):
    """convert_to_rgb's white background on an RGBA PNG (needs decode background)."""
    proc = transformers.CLIPImageProcessorPil()
    pipeline = export_transformers(proc.to_dict(), backend="pil")
    b = sluice_bin()
    skip_unless_supported(b, pipeline)
    rng = np.random.default_rng(25)
    rgba = rng.integers(0, 256, (300, 257, 4), dtype=np.uint8)
    rgba[:40, :, 3] = 0
    f = tmp_path / "alpha.png"
    Image.fromarray(rgba, "RGBA").save(f)
    res = run_exported(b, pipeline, [f], tmp_path)
    assert_parity(res, lambda p: proc(Image.open(p), return_tensors="np")["pixel_values"][0])
