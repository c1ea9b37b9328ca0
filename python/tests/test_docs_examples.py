"""docs/pipelines.md shows, for each library, what the exporter writes for
one of its well-known models; each block there must be the exporter's output
verbatim (so it changes with the exporter, or this fails). The torchvision
and open_clip ones need torch and run in `make export-test-torch`."""

import pathlib
import re

import pytest

from helpers import CLIP
from sluice_export import export_open_clip, export_timm, export_torchvision, export_transformers, export_ultralytics
from sluice_export import parse_settings

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "pipelines.md"

# timm's convnext_tiny.fb_in1k pretrained_cfg, the keys the exporter reads.
CONVNEXT_TINY = {"input_size": (3, 224, 224), "interpolation": "bicubic", "crop_pct": 0.875, "crop_mode": "center",
                 "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}


def doc_blocks():
    return re.findall(r"```pbtxt\n(.*?)```", DOC.read_text(), re.S)


def assert_in_doc(pipeline):
    text = pipeline.text()
    assert text in doc_blocks(), f"{DOC} has no pbtxt block equal to the export of {pipeline.name}:\n{text}"


def torchvision_resnet50_v2():
    models = pytest.importorskip("torchvision.models")
    # ResNet50_Weights.IMAGENET1K_V2's evaluation transforms, the preset object itself.
    return export_torchvision(models.ResNet50_Weights.IMAGENET1K_V2.transforms(), name="preprocess_resnet50")


def open_clip_vit_b32():
    open_clip = pytest.importorskip("open_clip")
    _, _, preprocess = open_clip.create_model_and_transforms("ViT-B-32", pretrained=None)
    return export_open_clip(preprocess, name="preprocess_open_clip_b32", log=lambda *_: None)


@pytest.mark.parametrize("make", [
    lambda: export_timm(CONVNEXT_TINY, name="preprocess_convnext_tiny"),
    lambda: export_transformers(CLIP, name="preprocess_clip_b32", backend="pil"),
    lambda: export_ultralytics(parse_settings("imgsz=640,stride=32"), name="preprocess_yolo"),
], ids=["timm", "transformers", "ultralytics"])
def test_doc_shows_export(make):
    assert_in_doc(make())


@pytest.mark.parametrize("make", [torchvision_resnet50_v2, open_clip_vit_b32], ids=["torchvision", "open_clip"])
def test_doc_shows_torch_export(make):
    assert_in_doc(make())
