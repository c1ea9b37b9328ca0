"""Each exporter's mapping and refusals, from dicts and stand-in objects (no
torch: torchvision transforms are recognised by class name and attributes, so
look-alike classes exercise the same code; the real ones are in
test_parity_torch.py)."""

import enum

import pytest

from helpers import CLIP
from sluice_export import (ExportError, export_open_clip, export_timm, export_torchvision, export_transformers,
                           export_ultralytics)


def args_of(p, op):
    return {k: v for n in p.nodes if n.op == op for k, (_t, v) in n.args.items()}


# ------------------------------------------------------------------ stand-ins named as torchvision's classes

class InterpolationMode(enum.Enum):
    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    LANCZOS = "lanczos"


def T(cls, **attrs):
    return type(cls, (), {})() if not attrs else _with(type(cls, (), {})(), attrs)


def V2(cls, **attrs):
    """A stand-in for torchvision.transforms.v2's class of that name (the module tells v1 from v2)."""
    return _with(type(cls, (), {"__module__": "torchvision.transforms.v2._geometry"})(), attrs)


def _with(o, attrs):
    o.__dict__.update(attrs)
    return o


def Compose(*ts):
    return T("Compose", transforms=list(ts))


def Resize(size, interp=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    return T("Resize", size=size, interpolation=interp, max_size=max_size, antialias=antialias)


def CenterCrop(s):
    return T("CenterCrop", size=(s, s) if isinstance(s, int) else s)


def Normalize(mean, std):
    return T("Normalize", mean=mean, std=std)


MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def test_torchvision_imagenet():
    p = export_torchvision(Compose(Resize(256), CenterCrop(224), T("ToTensor"), Normalize(MEAN, STD)))
    assert args_of(p, "decode") == {"color": "RGB", "orient": False}
    assert args_of(p, "resize") == {"shorter": 256, "interp": "linear"}
    assert args_of(p, "crop") == {"size": [224, 224]}  # torchvision's half-even rule, the default
    n = args_of(p, "normalize")
    assert n["scale"] == 1 / 255 and n["mean"] == MEAN and n["std"] == STD and n["dtype"] == "FP32"
    assert p.output_dims() == [3, 224, 224]


@pytest.mark.parametrize("resize, want", [
    (Resize([232], InterpolationMode.BICUBIC), {"shorter": 232, "interp": "cubic"}),
    (Resize(256, max_size=300), {"shorter": 256, "max_size": 300, "interp": "linear"}),
    (Resize((240, 320), InterpolationMode.NEAREST), {"size": [240, 320], "interp": "nearest"}),
    (Resize(None, max_size=512), {"longer": 512, "interp": "linear"}),
    (Resize(256, 3), {"shorter": 256, "interp": "cubic"}),  # old torchvision: a PIL code
])
def test_torchvision_resize_forms(resize, want):
    p = export_torchvision(Compose(resize, CenterCrop(224), T("ToTensor")))
    assert args_of(p, "resize") == want


def test_torchvision_v2_uint8_path():
    p = export_torchvision(Compose(Resize(256), CenterCrop(224), T("ToImage"),
                                   T("ToDtype", dtype="torch.float32", scale=True), Normalize(MEAN, STD)))
    assert args_of(p, "normalize")["scale"] == 1 / 255
    p = export_torchvision(Compose(Resize(256), CenterCrop(224), T("PILToTensor")))
    assert args_of(p, "normalize")["dtype"] == "UINT8"
    p = export_torchvision(Compose(CenterCrop(224), T("PILToTensor"), T("ConvertImageDtype", dtype="torch.float32")))
    assert args_of(p, "normalize")["scale"] == 1 / 255


@pytest.mark.parametrize("compose, match", [
    (Compose(Resize(256, InterpolationMode.LANCZOS), CenterCrop(224), T("ToTensor")), "lanczos"),
    (Compose(T("ToTensor"), Resize(256), CenterCrop(224)), "float tensor"),
    (Compose(T("PILToTensor"), Resize(256), CenterCrop(224)), "allow_approx"),
    (Compose(T("RandomResizedCrop"), T("ToTensor")), "random augmentation"),
    (Compose(Resize(256), CenterCrop(224)), "ends with a PIL image"),
    (Compose(CenterCrop(224), T("ToTensor"), Normalize(MEAN, STD), CenterCrop(200)), "after Normalize"),
    (Compose(CenterCrop(224), T("PILToTensor"), T("ToDtype", dtype="torch.float16", scale=True)), "float16"),
    (Compose(CenterCrop(224), T("Grayscale"), T("ToTensor")), "Grayscale"),
    (Compose(Resize(256), CenterCrop(224), T("Lambda"), T("ToTensor")), "Lambda"),
])
def test_torchvision_refusals_name_the_transform(compose, match):
    with pytest.raises(ExportError, match=match):
        export_torchvision(compose)


def test_torchvision_uint8_nearest_refused_even_approx():
    with pytest.raises(ExportError, match="nearest on a uint8 tensor picks other pixels"):
        export_torchvision(Compose(T("PILToTensor"), Resize(256, InterpolationMode.NEAREST)), allow_approx=True)


def test_torchvision_v1_uint8_resize_with_allow_approx_prints_bound():
    """torchvision.transforms (v1) resizes a uint8 tensor in float32 and rounds:
    only with allow_approx, mapped to torch's uint8 kernels, its bound printed."""
    with pytest.raises(ExportError, match=r"v2\.Resize \(exact\)"):
        export_torchvision(Compose(T("PILToTensor"), Resize(256, antialias=True), CenterCrop(224)))
    logged = []
    p = export_torchvision(Compose(T("PILToTensor"), Resize(256, antialias=True), CenterCrop(224)),
                           allow_approx=True, log=logged.append)
    assert logged and "at most 1 level of 255" in logged[0]  # bilinear
    assert args_of(p, "resize") == {"shorter": 256, "interp": "torch_linear", "antialias": True}
    assert "approximation accepted" in p.text()


def V2Resize(size, interp=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    return V2("Resize", size=size, interpolation=interp, max_size=max_size, antialias=antialias)


@pytest.mark.parametrize("resize, want", [
    (V2Resize(256), {"shorter": 256, "interp": "torch_linear", "antialias": True}),
    (V2Resize([232], InterpolationMode.BICUBIC), {"shorter": 232, "interp": "torch_cubic", "antialias": True}),
    (V2Resize((300, 200), antialias=False), {"size": [300, 200], "interp": "torch_linear", "antialias": False}),
    # None is torchvision's legacy value: False for tensors
    (V2Resize(256, InterpolationMode.BICUBIC, antialias=None), {"shorter": 256, "interp": "torch_cubic",
                                                                "antialias": False}),
    (V2Resize(256, max_size=400), {"shorter": 256, "max_size": 400, "interp": "torch_linear", "antialias": True}),
])
def test_torchvision_v2_tensor_resize_is_torch_kernels(resize, want):
    """v2's Resize of a uint8 tensor (after ToImage) is torch's uint8 kernels:
    Sluice's torch_linear/torch_cubic, exact, no allow_approx."""
    logged = []
    p = export_torchvision(Compose(V2("ToImage"), resize, CenterCrop(224),
                                   V2("ToDtype", dtype="torch.float32", scale=True), Normalize(MEAN, STD)),
                           log=logged.append)
    assert args_of(p, "resize") == want
    assert logged == [] and "approximation" not in p.text()
    assert args_of(p, "normalize")["scale"] == 1 / 255


@pytest.mark.parametrize("interp, match", [(InterpolationMode.NEAREST, "nearest on a uint8 tensor"),
                                           (4, "box interpolation exists only for PIL images")])
def test_torchvision_tensor_nearest_and_box_refused(interp, match):
    """No Sluice filter is torch's nearest or box: refused even with allow_approx."""
    with pytest.raises(ExportError, match=match):
        export_torchvision(Compose(V2("ToImage"), V2Resize(256, interp), CenterCrop(224)), allow_approx=True)


def ImageClassification(crop_size=224, resize_size=256, interpolation=InterpolationMode.BILINEAR, antialias=True,
                        mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)):
    # the attributes torchvision's preset keeps (transforms/_presets.py)
    return T("ImageClassification", crop_size=[crop_size], resize_size=[resize_size], mean=list(mean),
             std=list(std), interpolation=interpolation, antialias=antialias)


def test_torchvision_image_classification_preset():
    """weights.transforms(): its resize, crop, pil_to_tensor, convert_image_dtype
    and normalize, read off the object; the same pipeline as the hand-written
    Compose but for the header, which names the preset and its settings."""
    preset = ImageClassification(crop_size=224, resize_size=232)
    p = export_torchvision(preset)
    compose = export_torchvision(Compose(Resize(232), CenterCrop(224), T("ToTensor"), Normalize(MEAN, STD)))
    assert p.text().split("version: 1")[1] == compose.text().split("version: 1")[1]
    assert "ImageClassification preset" in p.text() and "resize_size [232], crop_size [224]" in p.text()
    p = export_torchvision(ImageClassification(crop_size=384, resize_size=384, interpolation=InterpolationMode.BICUBIC,
                                               mean=(0.5,) * 3, std=(0.5,) * 3))
    assert args_of(p, "resize") == {"shorter": 384, "interp": "cubic"}
    assert args_of(p, "normalize")["mean"] == [0.5] * 3 and p.output_dims() == [3, 384, 384]


def test_torchvision_other_presets():
    with pytest.raises(ExportError, match=r"ObjectDetection: .*per-image size.*Resize to a fixed"):
        export_torchvision(T("ObjectDetection"))
    p = export_torchvision(Compose(Resize((480, 640)), T("ObjectDetection")))
    assert args_of(p, "normalize") == {"scale": 1 / 255, "layout": "CHW", "dtype": "FP32"}
    p = export_torchvision(Compose(Resize((520, 520)), T("SemanticSegmentation", resize_size=None, mean=MEAN, std=STD,
                                                         interpolation=InterpolationMode.BILINEAR, antialias=True)))
    assert args_of(p, "normalize")["std"] == STD and p.output_dims() == [3, 520, 520]
    with pytest.raises(ExportError, match="video"):
        export_torchvision(T("VideoClassification", crop_size=[112, 112], resize_size=[128, 171]))


def test_torchvision_unknown_class_names_the_route():
    with pytest.raises(ExportError) as e:
        export_torchvision(Compose(T("MyResize"), T("ToTensor")))
    msg = str(e.value)
    assert "MyResize" in msg and "ImageClassification" in msg and "v2.Compose" in msg and "docs/pipelines.md" in msg


def _convert_to_rgb(image):  # open_clip's function, by name
    return image.convert("RGB")


def test_open_clip_header_says_one_thing_in_both_routes():
    """The pickled route (export_torchvision) and export_open_clip write the
    same file: headed open_clip, input Image.open(path) as it is, which the
    note says the export is exact against."""
    oc = Compose(Resize(224, InterpolationMode.BICUBIC), CenterCrop(224), _convert_to_rgb, T("ToTensor"),
                 Normalize(MEAN, STD))
    quiet = dict(log=lambda *_: None)
    text = export_torchvision(oc, **quiet).text()
    assert text == export_open_clip(oc, **quiet).text()
    assert text.startswith("# Exported from open_clip by sluice_export. Input as PIL.Image.open(path), no EXIF")
    assert "convert('RGB'):" not in text.split("\n")[0] + text.split("\n")[1]
    assert "Exact against\n# preprocess(Image.open(p))" in text


def test_open_clip_preprocess():
    p = export_open_clip(Compose(Resize(224, InterpolationMode.BICUBIC), CenterCrop(224), _convert_to_rgb,
                                 T("ToTensor"), Normalize([0.48145466, 0.4578275, 0.40821073],
                                                          [0.26862954, 0.26130258, 0.27577711])))
    # open_clip converts after resizing: the resize follows each image's mode
    assert args_of(p, "resize") == {"shorter": 224, "interp": "cubic", "source_mode": True}
    assert args_of(p, "decode")["orient"] is False
    assert "premultiplied" in p.text() and "CMYK" in p.text()  # and says why


def test_rgb_conversion_placement():
    """source_mode (and its note and log line) only where the conversion
    follows a Resize: converted first, every mode resizes as RGB; a crop
    alone commutes with it."""
    norm = Normalize([0.5] * 3, [0.5] * 3)
    logs = []
    late = export_open_clip(Compose(Resize(224, InterpolationMode.BICUBIC), CenterCrop(224), _convert_to_rgb,
                                    T("ToTensor"), norm), log=logs.append)
    assert len(logs) == 1 and "palette" in logs[0] and "CMYK" in logs[0]
    assert "NEAREST" in late.text()
    logs = []
    early = export_open_clip(Compose(_convert_to_rgb, Resize(224, InterpolationMode.BICUBIC), CenterCrop(224),
                                     T("ToTensor"), norm), log=logs.append)
    assert logs == [] and "NEAREST" not in early.text()
    assert args_of(late, "resize") == dict(args_of(early, "resize"), source_mode=True)
    crop_only = export_open_clip(Compose(CenterCrop(224), _convert_to_rgb, T("ToTensor"), norm), log=logs.append)
    assert logs == [] and "source_mode" not in crop_only.text()


# ------------------------------------------------------------------ timm

@pytest.mark.parametrize("cfg, shorter, crop", [
    ({"input_size": (3, 224, 224), "crop_pct": 0.875, "interpolation": "bicubic"}, 256, [224, 224]),
    ({"input_size": (3, 224, 224), "crop_pct": 0.95}, 235, [224, 224]),   # floor(235.78...)
    ({"input_size": (3, 288, 288), "crop_pct": 1.0}, 288, [288, 288]),
    ({}, 256, [224, 224]),                                                 # resolve_data_config's defaults
    ({"input_size": (3, 384, 384), "crop_pct": 0.9}, 426, [384, 384]),    # floor(426.66...)
])
def test_timm_center(cfg, shorter, crop):
    p = export_timm(cfg)
    assert args_of(p, "resize")["shorter"] == shorter
    assert args_of(p, "crop") == {"size": crop}
    assert args_of(p, "decode")["orient"] is False


def test_timm_squash_and_pretrained_cfg():
    p = export_timm({"input_size": (3, 224, 224), "crop_pct": 0.9, "crop_mode": "squash", "interpolation": "bilinear",
                     "mean": (0.5, 0.5, 0.5), "std": (0.5, 0.5, 0.5), "test_input_size": (3, 256, 256)})
    assert args_of(p, "resize") == {"size": [248, 248], "interp": "linear"}
    assert args_of(p, "normalize")["mean"] == [0.5, 0.5, 0.5]
    p = export_timm({"input_size": (3, 224, 224), "test_input_size": (3, 256, 256), "test_crop_pct": 1.0},
                    use_test_size=True)
    assert args_of(p, "resize")["shorter"] == 256


@pytest.mark.parametrize("cfg, match", [
    ({"crop_mode": "border"}, "border"),
    ({"input_size": (3, 224, 320)}, "non-square"),
    ({"interpolation": "lanczos"}, "lanczos"),
    ({"input_size": (1, 224, 224)}, "3-channel"),
    ({"crop_mode": "weird"}, "weird"),
    ({"crop_border_pixels": 4}, "crop_border_pixels"),
])
def test_timm_refusals(cfg, match):
    with pytest.raises(ExportError, match=match):
        export_timm(cfg)


# ------------------------------------------------------------------ transformers

def test_transformers_clip_pil():
    p = export_transformers(CLIP, backend="pil")
    assert args_of(p, "decode") == {"color": "RGB", "orient": False, "background": [255, 255, 255]}
    assert args_of(p, "resize") == {"shorter": 224, "interp": "cubic"}
    assert args_of(p, "crop") == {"size": [224, 224], "rounding": "floor"}
    assert args_of(p, "normalize")["scale"] == 0.00392156862745098


def test_transformers_pil_class_name_and_json(tmp_path):
    import json
    f = tmp_path / "preprocessor_config.json"
    f.write_text(json.dumps(dict(CLIP, image_processor_type="CLIPImageProcessorPil")))
    assert export_transformers(str(f)).text() == export_transformers(CLIP, backend="pil").text()
    assert export_transformers(str(tmp_path)).text() == export_transformers(json.dumps(CLIP), backend="pil").text()


def test_transformers_defaults_and_legacy_int_size():
    p = export_transformers({"image_processor_type": "ViTImageProcessor", "size": 384}, backend="pil")
    assert args_of(p, "resize") == {"size": [384, 384], "interp": "linear"}
    assert "crop" not in [n.op for n in p.nodes] and "background" not in args_of(p, "decode")
    p = export_transformers({"image_processor_type": "CLIPImageProcessor", "size": 336,
                             "crop_size": 336}, backend="pil")
    assert args_of(p, "resize")["shorter"] == 336 and args_of(p, "crop")["size"] == [336, 336]


def test_transformers_convnext_crop_pct():
    p = export_transformers({"image_processor_type": "ConvNextImageProcessor", "size": {"shortest_edge": 224},
                             "crop_pct": 0.875}, backend="pil")
    assert args_of(p, "resize") == {"shorter": 256, "interp": "cubic"}  # int(224 / 0.875)
    assert args_of(p, "crop") == {"size": [224, 224], "rounding": "floor"}
    p = export_transformers({"image_processor_type": "ConvNextImageProcessor", "size": {"shortest_edge": 384}},
                            backend="pil")
    assert args_of(p, "resize") == {"size": [384, 384], "interp": "cubic"}


@pytest.mark.parametrize("cfg, match", [
    (dict(CLIP, resample=1), "LANCZOS"),
    (dict(CLIP, image_processor_type="Qwen2VLImageProcessor"), "Qwen2VLImageProcessor is not"),
    (dict(CLIP, size={"shortest_edge": 800, "longest_edge": 1333}), "longest_edge"),
    (dict(CLIP, do_pad=True), "do_pad"),
    (dict(CLIP, do_flip_channel_order=True), "do_flip_channel_order"),
    ({"size": 224}, "image_processor_type"),
])
def test_transformers_refusals(cfg, match):
    with pytest.raises(ExportError, match=match):
        export_transformers(cfg, backend="pil")


def test_transformers_torchvision_backend():
    """transformers 5's default backend: torch's uint8 resize with antialias,
    the floor crop, exact without allow_approx."""
    logged = []
    p = export_transformers(CLIP, backend="torchvision", log=logged.append)
    assert logged == [] and "approximation" not in p.text()
    assert args_of(p, "resize") == {"shorter": 224, "interp": "torch_cubic", "antialias": True}
    assert args_of(p, "crop") == {"size": [224, 224], "rounding": "floor"}
    assert args_of(p, "decode")["background"] == [255, 255, 255]
    assert export_transformers(dict(CLIP, image_processor_type="CLIPImageProcessorFast")).text() == p.text()
    vit = export_transformers({"image_processor_type": "ViTImageProcessor"}, backend="torchvision")
    assert args_of(vit, "resize") == {"size": [224, 224], "interp": "torch_linear", "antialias": True}
    siglip = export_transformers({"image_processor_type": "SiglipImageProcessor"}, backend="torchvision")
    assert args_of(siglip, "resize") == {"size": [224, 224], "interp": "torch_cubic", "antialias": True}
    cn = export_transformers({"image_processor_type": "ConvNextImageProcessor", "size": {"shortest_edge": 224},
                              "crop_pct": 0.875}, backend="torchvision")
    assert args_of(cn, "resize") == {"shorter": 256, "interp": "torch_cubic", "antialias": True}
    assert args_of(cn, "crop") == {"size": [224, 224], "rounding": "floor"}


@pytest.mark.parametrize("cfg, match", [
    (dict(CLIP, resample=0), "NEAREST_EXACT"),
    (dict(CLIP, resample=1), "LANCZOS"),
    (dict(CLIP, crop_size={"height": 256, "width": 256}), "pads"),
    (dict(CLIP, do_resize=False), "pads"),
    ({"image_processor_type": "ConvNextImageProcessor", "size": {"shortest_edge": 224}, "crop_pct": 1.2}, "pads"),
])
def test_transformers_torchvision_refusals_name_the_flag(cfg, match):
    """What the torchvision backend does that Sluice cannot follow is refused,
    naming the command-line flag for the Pillow class."""
    with pytest.raises(ExportError, match=match) as e:
        export_transformers(cfg, backend="torchvision")
    assert "--transformers-backend pil" in str(e.value)


@pytest.mark.parametrize("here, other", [("torchvision", "pil"), ("pil", "torchvision")])
def test_transformers_default_backend_is_explained(monkeypatch, here, other):
    """A saved config names no backend (save_pretrained writes the class
    without its Pil suffix): the export follows what AutoImageProcessor picks
    on this machine, and says so, with the flag for the other one."""
    import sluice_export.transformers_export as tx
    monkeypatch.setattr(tx, "default_backend", lambda: here)
    logged = []
    p = export_transformers(CLIP, log=logged.append)
    assert len(logged) == 1 and "save_pretrained" in logged[0] and f"--transformers-backend {other}" in logged[0]
    assert f"({here} backend)" in p.text() and "save_pretrained" in p.text()
    logged = []
    export_transformers(CLIP, backend=here, log=logged.append)  # named: nothing to explain
    export_transformers(dict(CLIP, image_processor_type="CLIPImageProcessorPil"), log=logged.append)
    assert logged == []


def test_transformers_cli_explains_backend(tmp_path, capsys, monkeypatch):
    import json

    import sluice_export.transformers_export as tx
    from sluice_export.__main__ import main
    monkeypatch.setattr(tx, "default_backend", lambda: "torchvision")
    assert main(["export", "--transformers", json.dumps(CLIP), "-o", str(tmp_path / "m")]) == 0
    assert "--transformers-backend pil" in capsys.readouterr().err
    assert main(["export", "--transformers", json.dumps(dict(CLIP, resample=0)), "-o", str(tmp_path / "n")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("sluice_export: refused:") and "--transformers-backend pil" in err


def test_transformers_object_attributes():
    class CLIPImageProcessorPil:  # a stand-in with the attributes a processor carries
        backend = "pil"
        do_resize, size, resample = True, {"shortest_edge": 256}, 2
        do_center_crop, crop_size = True, {"height": 240, "width": 240}
        do_rescale, rescale_factor, do_normalize = True, 1 / 255, True
        image_mean, image_std, do_convert_rgb = [0.5] * 3, [0.5] * 3, False
    p = export_transformers(CLIPImageProcessorPil())
    assert args_of(p, "resize") == {"shorter": 256, "interp": "linear"}
    assert args_of(p, "crop")["size"] == [240, 240] and "background" not in args_of(p, "decode")


# ------------------------------------------------------------------ ultralytics

def test_ultralytics_letterbox():
    p = export_ultralytics({"new_shape": (640, 640), "auto": False, "scaleup": False, "stride": 32,
                            "padding_value": 114})
    assert args_of(p, "decode")["orient"] is True
    assert args_of(p, "letterbox") == {"size": [640, 640], "fill": [114.0], "scaleup": False, "interp": "opencv_linear"}
    assert [o[0] for o in p.outputs()] == ["PIXELS", "SCALE", "OFFSET"]
    p = export_ultralytics("imgsz=480x640,scale_fill=true")
    assert args_of(p, "resize") == {"size": [480, 640], "interp": "opencv_linear"}


def test_ultralytics_letterbox_object():
    class LetterBox:
        new_shape, auto, scale_fill, scaleup, center, stride, padding_value = (320, 320), False, False, True, True, 32, 0
    assert args_of(export_ultralytics(LetterBox()), "letterbox")["fill"] == [0.0]


@pytest.mark.parametrize("s, match", [
    ("imgsz=640,auto=true", "auto=True"),
    ("imgsz=640,center=false", "center=False"),
    ("imgsz=640,interpolation=3", "INTER_LINEAR"),
    ("imgsz=640,mosaic=1", "unknown"),
    ("imgsz=640,auto=maybe", "not a boolean"),
])
def test_ultralytics_refusals(s, match):
    with pytest.raises(ExportError, match=match):
        export_ultralytics(s)


@pytest.mark.parametrize("mean, std", [(CLIP["image_mean"], CLIP["image_std"]), (MEAN, STD), ([0.5] * 3, [0.5] * 3)])
def test_fused_rescale_normalize_is_float_rounding(mean, std):
    """transformers' torchvision backend fuses rescale and normalize in float32,
    (x - float32(mean) * 255) / (float32(std) * 255); Sluice's normalize is
    (x * scale - mean) / std in float64, rounded to float32 (ops/normalize.go).
    Over every 0-255 value they stay within 4.8e-7, far inside the parity
    tests' 1e-5 (docs/pipelines.md says so)."""
    np = pytest.importorskip("numpy")
    x = np.arange(256, dtype=np.float32)
    worst = 0.0
    for m, s in zip(mean, std):
        sluice = ((x.astype(np.float64) * (1 / 255) - m) / s).astype(np.float32)
        fused = (x - np.float32(m) * np.float32(255.0)) / (np.float32(s) * np.float32(255.0))
        worst = max(worst, float(np.abs(sluice.astype(np.float64) - fused.astype(np.float64)).max()))
    assert worst <= 4.8e-7
