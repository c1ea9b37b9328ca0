"""Parity with the torch-based libraries: torchvision, timm, open_clip,
ultralytics. Each skips when its library (and torch) is absent; `make
export-test-torch` runs them in a session that has installed them. The
reference is the library's own transform on the image as the library loads it."""

import numpy as np
import pytest
from PIL import Image

from sluice_export import export_open_clip, export_timm, export_torchvision, export_ultralytics
from helpers import assert_parity, corpus_photos, run_exported, skip_unless_supported, sluice_bin


def _photos():
    return corpus_photos("jpeg/derived") + corpus_photos("jpeg/exif")


def _check(pipeline, reference, tmp_path, photos=None):
    b = sluice_bin()
    skip_unless_supported(b, pipeline)
    photos = photos or _photos()
    res = run_exported(b, pipeline, photos, tmp_path)
    n, _ = assert_parity(res, reference)
    assert n == len(photos)


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
    _check(export_torchvision(t), lambda p: t(Image.open(p).convert("RGB")).numpy(), tmp_path)


@pytest.mark.parametrize("model", ["resnet50.a1_in1k", "convnext_tiny.fb_in1k", "vit_base_patch16_224.augreg2_in21k_ft_in1k",
                                   "efficientnet_b0.ra_in1k"])
def test_timm(model, tmp_path):
    timm = pytest.importorskip("timm")
    from timm.data import create_transform, resolve_data_config
    # The pretrained_cfg ships with timm (no weights are downloaded).
    cfg = resolve_data_config({}, pretrained_cfg=timm.models.get_pretrained_cfg(model).to_dict())
    t = create_transform(**cfg)
    _check(export_timm(cfg), lambda p: t(Image.open(p).convert("RGB")).numpy(), tmp_path)


def test_open_clip(tmp_path):
    open_clip = pytest.importorskip("open_clip")
    t = open_clip.image_transform(224, is_train=False, mean=open_clip.OPENAI_DATASET_MEAN,
                                  std=open_clip.OPENAI_DATASET_STD)
    _check(export_open_clip(t), lambda p: t(Image.open(p)).numpy(), tmp_path)


def test_ultralytics_letterbox(tmp_path):
    pytest.importorskip("ultralytics")
    cv2 = pytest.importorskip("cv2")
    from ultralytics.data.augment import LetterBox
    lb = LetterBox(new_shape=(640, 640), auto=False, stride=32)

    def reference(p):
        im = lb(image=cv2.imread(str(p)))
        return np.ascontiguousarray(im[..., ::-1].transpose(2, 0, 1)).astype(np.float32) / 255

    _check(export_ultralytics(lb), reference, tmp_path)
