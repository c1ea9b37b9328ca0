"""Parity with the torch-based libraries: torchvision, timm, open_clip,
ultralytics. Each skips when its library (and torch) is absent; `make
export-test-torch` runs them in a session that has installed them. The
reference is the library's own transform on the image as the library loads it,
on every photo of the corpus that Pillow opens (each folder of
helpers.CORPUS_DIRS), less 16-bit grey PNGs (helpers.not_16bit_grey)."""

import numpy as np
import pytest
from PIL import Image

from sluice_export import ExportError, export_open_clip, export_timm, export_torchvision, export_ultralytics
from helpers import (CORPUS_DIRS, EXACT, all_photos, assert_parity, corpus_photos, run_per_folder,
                     skip_unless_supported, sluice_bin)



def _check(pipeline, reference, tmp_path, label, photos=None):
    b = sluice_bin()
    skip_unless_supported(b, pipeline)
    photos = photos or all_photos()
    res = run_per_folder(b, pipeline, photos, tmp_path)
    # Per folder, so that a failure or a diff says where.
    worst, failures = 0.0, []
    for d in sorted({p.parent for p in photos}):
        sub = {p: o for p, o in res.items() if p.parent == d}
        try:
            where = f"{d.parent.name}/{d.name}" if d.parent.name == "jpeg" else d.name
            _, w = assert_parity(sub, reference, atol=0 if pipeline.out_dtype == "UINT8" else EXACT,
                                 label=f"{label} {where}")
            worst = max(worst, w)
        except AssertionError as e:
            failures.append(f"{d.name}: {e}")
    print(f"parity {label}: {len(res)} images in all, max abs diff {worst:.3g}")
    assert not failures, "\n".join(failures)
    assert len(res) == len(photos)


def _tv_transforms():
    torch = pytest.importorskip("torch")
    T = pytest.importorskip("torchvision.transforms")
    v2 = pytest.importorskip("torchvision.transforms.v2")
    I = T.InterpolationMode
    m, s = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    f32 = v2.ToDtype(torch.float32, scale=True)
    return {
        "resnet50_v2": T.Compose([T.Resize(232), T.CenterCrop(224), T.ToTensor(), T.Normalize(m, s)]),
        "vit_b_16": T.Compose([T.Resize(256, I.BILINEAR), T.CenterCrop(224), T.ToTensor(), T.Normalize(m, s)]),
        "efficientnet_b0": T.Compose([T.Resize(256, I.BICUBIC), T.CenterCrop(224), T.ToTensor(), T.Normalize(m, s)]),
        "nearest_max_size": T.Compose([T.Resize(200, I.NEAREST, max_size=300), T.CenterCrop(180), T.ToTensor()]),
        "v2": v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.ToImage(), f32, v2.Normalize(m, s)]),
        # tensor first: torch's uint8 resize (torch_linear, torch_cubic)
        "v2_tensor": v2.Compose([v2.ToImage(), v2.Resize(256), v2.CenterCrop(224), f32, v2.Normalize(m, s)]),
        "v2_tensor_bicubic": v2.Compose([v2.ToImage(), v2.Resize(232, I.BICUBIC), v2.CenterCrop(224), f32,
                                         v2.Normalize(m, s)]),
        "v2_tensor_no_aa": v2.Compose([v2.ToImage(), v2.Resize((300, 200), antialias=False), f32]),
        "v2_tensor_bicubic_no_aa": v2.Compose([v2.PILToTensor(), v2.Resize(256, I.BICUBIC, antialias=False),
                                               v2.CenterCrop(240)]),
        "v2_tensor_uint8": v2.Compose([v2.ToImage(), v2.Resize(256, max_size=400), v2.CenterCrop(224)]),
    }


def _presets():
    """torchvision's weights presets, as weights.transforms() gives them (no
    weights are downloaded), and a detection preset after a fixed resize."""
    T = pytest.importorskip("torchvision.transforms")
    models = pytest.importorskip("torchvision.models")
    from torchvision.models.detection import FasterRCNN_ResNet50_FPN_Weights
    from torchvision.transforms._presets import SemanticSegmentation
    return {
        "ResNet50_Weights.IMAGENET1K_V2": models.ResNet50_Weights.IMAGENET1K_V2.transforms(),
        "ViT_B_16_Weights.IMAGENET1K_V1": models.ViT_B_16_Weights.IMAGENET1K_V1.transforms(),
        "ConvNeXt_Tiny_Weights.IMAGENET1K_V1": models.ConvNeXt_Tiny_Weights.IMAGENET1K_V1.transforms(),
        "EfficientNet_B0_Weights.IMAGENET1K_V1": models.EfficientNet_B0_Weights.IMAGENET1K_V1.transforms(),
        "Swin_T_Weights.IMAGENET1K_V1": models.Swin_T_Weights.IMAGENET1K_V1.transforms(),
        "FasterRCNN after Resize((480, 640))": T.Compose([T.Resize((480, 640)),
                                                          FasterRCNN_ResNet50_FPN_Weights.DEFAULT.transforms()]),
        # FCN's own preset resizes the shorter side (a per-image size): without it, after a fixed resize
        "SemanticSegmentation after Resize((520, 520))": T.Compose([
            T.Resize((520, 520), T.InterpolationMode.BICUBIC), SemanticSegmentation(resize_size=None)]),
    }


@pytest.mark.parametrize("case", ["resnet50_v2", "vit_b_16", "efficientnet_b0", "nearest_max_size", "v2", "v2_tensor",
                                  "v2_tensor_bicubic", "v2_tensor_no_aa", "v2_tensor_bicubic_no_aa", "v2_tensor_uint8"])
def test_torchvision(case, tmp_path):
    t = _tv_transforms()[case]
    p = export_torchvision(t)  # no allow_approx: every case is exact
    assert ("torch_" in p.text()) == case.startswith("v2_tensor")
    _check(p, lambda p: t(Image.open(p).convert("RGB")).numpy(), tmp_path, case)


@pytest.mark.parametrize("case", ["ResNet50_Weights.IMAGENET1K_V2", "ViT_B_16_Weights.IMAGENET1K_V1",
                                  "ConvNeXt_Tiny_Weights.IMAGENET1K_V1", "EfficientNet_B0_Weights.IMAGENET1K_V1",
                                  "Swin_T_Weights.IMAGENET1K_V1", "FasterRCNN after Resize((480, 640))",
                                  "SemanticSegmentation after Resize((520, 520))"])
def test_torchvision_preset(case, tmp_path):
    """weights.transforms() on a PIL image: Pillow's resize, the centre crop,
    pil_to_tensor, convert_image_dtype, normalize; the export reads
    resize_size, crop_size, interpolation, antialias, mean and std off the
    object, and a pickled preset (torch.save, then the CLI's
    --torchvision-pickle) exports the same."""
    torch = pytest.importorskip("torch")
    from sluice_export.__main__ import main

    t = _presets()[case]
    p = export_torchvision(t)
    f = tmp_path / "preset.pt"
    torch.save(t, f)
    out = tmp_path / "model"
    assert main(["export", "--torchvision-pickle", str(f), "-o", str(out), "--name", p.name]) == 0
    assert (out / "1" / "pipeline.pbtxt").read_text() == p.text()
    _check(p, lambda path: t(Image.open(path).convert("RGB")).numpy(), tmp_path, case)
    for k in ("resize_size", "crop_size"):
        if hasattr(t, k):
            assert f"{k} {getattr(t, k)}" in p.text()


@pytest.mark.parametrize("model", ["resnet50.a1_in1k", "convnext_tiny.fb_in1k", "vit_base_patch16_224.augreg2_in21k_ft_in1k",
                                   "efficientnet_b0.ra_in1k"])
def test_timm(model, tmp_path):
    timm = pytest.importorskip("timm")
    from timm.data import create_transform, resolve_data_config
    # The pretrained_cfg ships with timm (no weights are downloaded).
    cfg = resolve_data_config({}, pretrained_cfg=timm.models.get_pretrained_cfg(model).to_dict())
    t = create_transform(**cfg)
    _check(export_timm(cfg), lambda p: t(Image.open(p).convert("RGB")).numpy(), tmp_path, model)


def _modes(photos):
    out = {}
    for p in photos:
        with Image.open(p) as im:
            out[p] = im.mode
    return out


def test_open_clip(tmp_path):
    """open_clip's preprocess converts to RGB after Resize and CenterCrop, so
    on an image Pillow opens in another mode it resizes in that mode: a
    palette image with NEAREST (Pillow's rule for mode P), a CMYK JPEG as its
    inks, RGBA premultiplied. The export's resize does the same (source_mode):
    it equals preprocess(Image.open(p)) on every photo. The palette PNG, CMYK
    JPEG and semi-transparent RGBA PNG are among them, and there the answer
    differs from the RGB-first one (asserted, so that the test keeps judging
    what source_mode is for)."""
    open_clip = pytest.importorskip("open_clip")
    t = open_clip.image_transform(224, is_train=False, mean=open_clip.OPENAI_DATASET_MEAN,
                                  std=open_clip.OPENAI_DATASET_STD)
    pipeline = export_open_clip(t)
    assert 'name: "source_mode" bool: true' in pipeline.text()
    photos = all_photos()
    modes = _modes(photos)
    _check(pipeline, lambda p: t(Image.open(p)).numpy(), tmp_path / "own", "open_clip", photos=photos)
    other = [p for p in photos if modes[p] not in ("RGB", "L")]
    assert {modes[p] for p in other} == {"P", "CMYK", "RGBA"}, {p.name: modes[p] for p in other}
    diff = {}
    for p in other:
        own, rgb_first = t(Image.open(p)).numpy(), t(Image.open(p).convert("RGB")).numpy()
        diff[p] = float(np.abs(own - rgb_first).max())
        print(f"open_clip's preprocess on {p.name} ({modes[p]}): max diff {diff[p]:.3g} from the RGB-first answer")
    # every palette and CMYK photo, and some RGBA one (an opaque one resizes alike)
    for m in ("P", "CMYK", "RGBA"):
        ds = [d for p, d in diff.items() if modes[p] == m]
        assert (max(ds) if m == "RGBA" else min(ds)) > 0.01, (m, ds)


def test_ultralytics_letterbox(tmp_path):
    """The reference reads as ultralytics does, with cv2.imread (EXIF
    orientation applied, alpha dropped, 16-bit samples to their high byte,
    CMYK converted with OpenCV's truncating arithmetic): the export, whose
    decode says cmyk: opencv, equals it on every photo, CMYK JPEGs too."""
    pytest.importorskip("ultralytics")
    cv2 = pytest.importorskip("cv2")
    from ultralytics.data.augment import LetterBox
    lb = LetterBox(new_shape=(640, 640), auto=False, stride=32)

    def out(bgr):
        im = lb(image=bgr)
        return np.ascontiguousarray(im[..., ::-1].transpose(2, 0, 1)).astype(np.float32) / 255

    # Every photo, 16-bit grey PNGs too: cv2.imread keeps their high byte, as sluice does.
    photos = [p for d in CORPUS_DIRS for p in corpus_photos(d)]
    assert any(m == "CMYK" for m in _modes(photos).values())  # the case the cmyk rule is for
    pipeline = export_ultralytics(lb)
    assert 'name: "cmyk" str: "opencv"' in pipeline.text()
    _check(pipeline, lambda p: out(cv2.imread(str(p))), tmp_path / "cv2", "ultralytics", photos=photos)


@pytest.mark.parametrize("interp, aa", [("linear", True), ("linear", False), ("cubic", True), ("cubic", False)])
def test_torchvision_v1_uint8_bound(interp, aa, tmp_path):
    """torchvision.transforms (v1) resizes a uint8 tensor in float32 and
    rounds; its export (with allow_approx) runs torch's uint8 kernels. The
    bound the export prints (TORCH_V1_UINT8_BOUND) is the largest difference
    of the two on the corpus, in levels of 255, at the sizes it was measured
    at (shrinking and, for the small photos, enlarging), against `sluice run`
    itself."""
    T = pytest.importorskip("torchvision.transforms")
    from sluice_export.torchvision_export import TORCH_V1_UINT8_BOUND

    mode = {"linear": T.InterpolationMode.BILINEAR, "cubic": T.InterpolationMode.BICUBIC}[interp]
    photos = all_photos()
    b = sluice_bin()
    worst = 0
    for size in ((224, 224), (256, 320), (480, 640)):
        t = T.Compose([T.PILToTensor(), T.Resize(size, mode, antialias=aa)])
        with pytest.raises(ExportError, match="v2"):
            export_torchvision(t)
        logged = []
        p = export_torchvision(t, allow_approx=True, log=logged.append)
        assert logged and "approximation accepted" in logged[0]
        skip_unless_supported(b, p)
        for q, out in run_per_folder(b, p, photos, tmp_path / f"{size[0]}x{size[1]}").items():
            want = t(Image.open(q).convert("RGB")).numpy().astype(int)
            worst = max(worst, int(np.abs(out["PIXELS"].astype(int) - want).max()))
    print(f"torchvision v1 uint8 {interp} antialias={aa}: at most {worst} levels from the export")
    assert worst == TORCH_V1_UINT8_BOUND[(interp, aa)], worst
