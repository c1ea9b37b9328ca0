"""transformers' processors against `sluice run` of the exported pipeline on
every photo of the corpus that Pillow opens (each folder of
helpers.CORPUS_DIRS: JPEGs of every size, chroma layout, CMYK and grey, the
EXIF-tagged ones, the arithmetic-coded one, the PNGs: palette, interlaced, RGBA,
16-bit RGB), to 1e-5 (float rounding). 16-bit grey PNGs are left out
(helpers.not_16bit_grey says why). Pipelines that use an argument this sluice
build lacks skip, naming it.

The Pillow classes (CLIPImageProcessorPil, ...) need no torch and run in `make
export-test`; the torchvision-backend classes (CLIPImageProcessor, transformers
5's default where torchvision is installed) need torch and torchvision, which
`make export-test-torch` installs, and skip without them."""

import numpy as np
import pytest
from PIL import Image

from sluice_export import export_transformers
from helpers import (CORPUS_DIRS, EXACT, all_photos, assert_parity, corpus_photos, not_16bit_grey, run_exported,
                     run_per_folder, skip_unless_supported, sluice_bin)

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

    n, worst = assert_parity(res, reference, atol=EXACT, label=f"{case} {folder}")
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


# The torchvision backend's classes (transformers 5's default), at their
# defaults and as the Pillow cases vary them.
TV_CASES = {
    "clip": ("CLIPImageProcessor", {}),
    "vit": ("ViTImageProcessor", {}),
    "convnext_384": ("ConvNextImageProcessor", {}),
    "convnext_224": ("ConvNextImageProcessor", {"size": {"shortest_edge": 224}, "crop_pct": 0.875}),
    "siglip": ("SiglipImageProcessor", {}),
    "deit": ("DeiTImageProcessor", {}),
    "bit": ("BitImageProcessor", {}),
    "blip": ("BlipImageProcessor", {}),
    "vit_bicubic_enlarge": ("ViTImageProcessor", {"size": {"height": 700, "width": 900}, "resample": 3}),
}


@pytest.mark.parametrize("case", sorted(TV_CASES))
def test_transformers_torchvision_parity(case, tmp_path):
    """Each torchvision-backend processor against its export on the whole
    corpus: torch's uint8 resize (torch_linear, torch_cubic, antialias true),
    the crop at int((H - h) / 2) and rescale+normalize fused in float32."""
    pytest.importorskip("torchvision")
    cls_name, overrides = TV_CASES[case]
    proc = getattr(transformers, cls_name)(**overrides)
    assert proc.backend == "torchvision"
    cfg = proc.to_dict()
    pipeline = export_transformers(cfg, backend="torchvision")
    assert 'str: "torch_' in pipeline.text()
    # the object, and the saved config with the backend left to the exporter
    # (torchvision is installed here, as AutoImageProcessor would pick), agree
    assert export_transformers(proc).text() == pipeline.text()
    notes = []
    assert export_transformers(cfg, log=notes.append).text().split("version: 1")[1] == pipeline.text().split("version: 1")[1]
    assert notes and "--transformers-backend pil" in notes[0]
    b = sluice_bin()
    skip_unless_supported(b, pipeline)
    photos = all_photos()
    if not proc.do_convert_rgb:
        # As on the Pillow backend: a photo not opened as RGB keeps its own
        # channels, and the three means fail on it (torch's broadcast error).
        others = [p for p in photos if Image.open(p).mode != "RGB"]
        for p in others:
            with Image.open(p) as im, pytest.raises((ValueError, RuntimeError)):
                proc(im, return_tensors="pt")
        photos = [p for p in photos if p not in others]
    res = run_per_folder(b, pipeline, photos, tmp_path)

    def reference(path):
        with Image.open(path) as im:
            return proc(im, return_tensors="pt")["pixel_values"][0].numpy()

    n, worst = assert_parity(res, reference, atol=EXACT, label=f"{cls_name} torchvision {case}")
    assert n == len(photos)
