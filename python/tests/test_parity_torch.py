"""Parity with the torch-based libraries: torchvision, timm, open_clip,
ultralytics. Each skips when its library (and torch) is absent; `make
export-test-torch` runs them in a session that has installed them. The
reference is the library's own transform on the image as the library loads it,
on every photo of the corpus that Pillow opens (each folder of
helpers.CORPUS_DIRS), less 16-bit grey PNGs (helpers.not_16bit_grey)."""

import numpy as np
import pytest
from PIL import Image

from sluice_export import export_open_clip, export_timm, export_torchvision, export_ultralytics
from helpers import (CORPUS_DIRS, assert_parity, corpus_photos, not_16bit_grey, run_exported, skip_unless_supported,
                     sluice_bin)


def _photos():
    return [p for d in CORPUS_DIRS for p in not_16bit_grey(corpus_photos(d))]


def _check(pipeline, reference, tmp_path, label, photos=None):
    b = sluice_bin()
    skip_unless_supported(b, pipeline)
    photos = photos or _photos()
    # One sluice run per folder: outputs are named by file stem.
    res = {}
    for i, d in enumerate(sorted({p.parent for p in photos})):
        res.update(run_exported(b, pipeline, [p for p in photos if p.parent == d], tmp_path / f"run{i}"))
    # Per folder, so that a failure or a diff says where.
    worst, failures = 0.0, []
    for d in sorted({p.parent for p in photos}):
        sub = {p: o for p, o in res.items() if p.parent == d}
        try:
            where = f"{d.parent.name}/{d.name}" if d.parent.name == "jpeg" else d.name
            _, w = assert_parity(sub, reference, label=f"{label} {where}")
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
    return {
        "resnet50_v2": T.Compose([T.Resize(232), T.CenterCrop(224), T.ToTensor(), T.Normalize(m, s)]),
        "vit_b_16": T.Compose([T.Resize(256, I.BILINEAR), T.CenterCrop(224), T.ToTensor(), T.Normalize(m, s)]),
        "efficientnet_b0": T.Compose([T.Resize(256, I.BICUBIC), T.CenterCrop(224), T.ToTensor(), T.Normalize(m, s)]),
        "nearest_max_size": T.Compose([T.Resize(200, I.NEAREST, max_size=300), T.CenterCrop(180), T.ToTensor()]),
        "v2": v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.ToImage(),
                          v2.ToDtype(torch.float32, scale=True), v2.Normalize(m, s)]),
    }


@pytest.mark.parametrize("case", ["resnet50_v2", "vit_b_16", "efficientnet_b0", "nearest_max_size", "v2"])
def test_torchvision(case, tmp_path):
    t = _tv_transforms()[case]
    _check(export_torchvision(t), lambda p: t(Image.open(p).convert("RGB")).numpy(), tmp_path, case)


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
    photos = _photos()
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


def _all_photos():
    return not_16bit_grey([p for d in CORPUS_DIRS for p in corpus_photos(d)])


@pytest.mark.parametrize("interp", ["linear", "cubic"])
def test_torch_uint8_bound(interp):
    """The bound an accepted approximation prints for a Resize of a uint8
    tensor (TORCH_UINT8_BOUND) is the largest difference torch's uint8
    kernels make against Pillow's on the corpus."""
    pytest.importorskip("torch")
    F = pytest.importorskip("torchvision.transforms.functional")
    from torchvision.transforms import InterpolationMode as I

    from sluice_export.torchvision_export import TORCH_UINT8_BOUND

    mode = {"linear": I.BILINEAR, "cubic": I.BICUBIC}[interp]
    worst = 0
    for p in _all_photos():
        with Image.open(p) as im:
            im = im.convert("RGB")
        a = np.asarray(F.center_crop(F.resize(im, 256, mode, antialias=True), 224)).astype(int)
        t = F.center_crop(F.resize(F.pil_to_tensor(im), 256, mode, antialias=True), 224)
        worst = max(worst, int(np.abs(a - t.permute(1, 2, 0).numpy().astype(int)).max()))
    assert worst == TORCH_UINT8_BOUND[interp]


@pytest.mark.parametrize("cls", ["ViTImageProcessor", "CLIPImageProcessor", "SiglipImageProcessor", "ConvNextImageProcessor"])
def test_transformers_torch_backend_bound(cls):
    """The bound printed for a transformers processor on its torchvision
    backend (TRANSFORMERS_TORCH_BOUND): its largest difference from the
    Pillow class on the corpus, in levels of 255."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from sluice_export.torchvision_export import TRANSFORMERS_TORCH_BOUND

    pil, fast = getattr(transformers, cls + "Pil")(), getattr(transformers, cls)()
    std = np.array(pil.image_std, dtype=np.float32).reshape(3, 1, 1)
    worst = 0.0
    for p in _all_photos():
        with Image.open(p) as im:
            if not pil.do_convert_rgb and im.mode != "RGB":
                continue  # both refuse it (three means, other channels)
            a = pil(im, return_tensors="np")["pixel_values"][0]
            b = fast(im, return_tensors="pt")["pixel_values"][0].numpy()
        worst = max(worst, float((np.abs(a - b) * std * 255).max()))
    assert round(worst) == TRANSFORMERS_TORCH_BOUND[cls]
