"""transformers image processor -> Sluice pipeline (no transformers needed).

Input: a preprocessor_config.json (path or dict) or the processor object.
Both of transformers 5's backends are exact:

- Pillow (CLIPImageProcessorPil, ...): Pillow resize (Sluice's nearest,
  linear, cubic, area), numpy crop at (H - h) // 2 (crop rounding "floor"),
  float64 rescale cast to float32, float32 normalize.
- torchvision (CLIPImageProcessor, the default where torchvision is
  installed; *Fast in configs saved by transformers 4): the PIL image as a
  uint8 tensor, torchvision.transforms.v2.functional.resize with
  antialias=True (Sluice's torch_linear, torch_cubic), center crop at
  int((H - h) / 2), then rescale and normalize fused in float32:
  (x - 255 * mean) / (255 * std). Sluice's normalize computes
  (x / 255 - mean) / std in float64 rounded to float32: at most 4.8e-7
  apart for any 0-255 input and CLIP's, ImageNet's or 0.5 means and stds.

save_pretrained writes the class without its Pil suffix, so a saved config
does not say which backend ran: AutoImageProcessor picks torchvision where it
is installed, else Pillow. The exporter does the same unless told
(backend=, --transformers-backend), and says which it took."""

import dataclasses
import json
import os
import pathlib
import textwrap

from .builder import TORCH_INTERPS, ExportError, Pipeline

# PIL.Image.Resampling codes -> Sluice's interp (1 LANCZOS, 5 HAMMING: none)
_RESAMPLE = {0: "nearest", 2: "linear", 3: "cubic", 4: "area"}
_RESAMPLE_NAMES = {1: "LANCZOS", 5: "HAMMING"}

OPENAI_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
IMAGENET_STANDARD_MEAN = [0.5, 0.5, 0.5]
IMAGENET_STANDARD_STD = [0.5, 0.5, 0.5]

# Class defaults (transformers 5.x, models/*/image_processing_pil_*.py) for
# keys a config leaves out. Only classes whose preprocessing is the generic
# resize -> center_crop -> rescale -> normalize (or ConvNext's crop_pct rule)
# are here: any other class may do more, so it is refused.
_BASE = dict(do_resize=True, do_center_crop=False, do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
             do_convert_rgb=None, resample=2, default_to_square=True, crop_size=None)
CLASSES = {
    "CLIPImageProcessor": dict(resample=3, image_mean=OPENAI_CLIP_MEAN, image_std=OPENAI_CLIP_STD,
                               size={"shortest_edge": 224}, default_to_square=False,
                               crop_size={"height": 224, "width": 224}, do_center_crop=True, do_convert_rgb=True),
    "BitImageProcessor": dict(resample=3, image_mean=OPENAI_CLIP_MEAN, image_std=OPENAI_CLIP_STD,
                              size={"shortest_edge": 224}, default_to_square=False,
                              crop_size={"height": 224, "width": 224}, do_center_crop=True, do_convert_rgb=True),
    "ViTImageProcessor": dict(resample=2, image_mean=IMAGENET_STANDARD_MEAN, image_std=IMAGENET_STANDARD_STD,
                              size={"height": 224, "width": 224}),
    "SiglipImageProcessor": dict(resample=3, image_mean=IMAGENET_STANDARD_MEAN, image_std=IMAGENET_STANDARD_STD,
                                 size={"height": 224, "width": 224}, default_to_square=False, do_convert_rgb=True),
    "DeiTImageProcessor": dict(resample=3, image_mean=IMAGENET_STANDARD_MEAN, image_std=IMAGENET_STANDARD_STD,
                               size={"height": 256, "width": 256}, crop_size={"height": 224, "width": 224},
                               do_center_crop=True),
    "BlipImageProcessor": dict(resample=3, image_mean=OPENAI_CLIP_MEAN, image_std=OPENAI_CLIP_STD,
                               size={"height": 384, "width": 384}, do_convert_rgb=True),
    "ConvNextImageProcessor": dict(resample=3, image_mean=IMAGENET_STANDARD_MEAN, image_std=IMAGENET_STANDARD_STD,
                                   size={"shortest_edge": 384}, default_to_square=False, crop_pct=224 / 256),
}
_HANDLED = {"do_resize", "do_center_crop", "do_rescale", "do_normalize", "do_convert_rgb"}


def _load(source):
    """(dict, class name, backend or None) from a path, JSON text, dict or object."""
    if isinstance(source, (str, os.PathLike)):
        s = str(source)
        if s.lstrip().startswith("{"):
            return _load(json.loads(s))
        path = pathlib.Path(s)
        if path.is_dir():
            path = path / "preprocessor_config.json"
        if not path.exists():
            raise ExportError(f"transformers: {path} not found (give a preprocessor_config.json, its folder, or JSON)")
        return _load(json.loads(path.read_text()))
    if isinstance(source, dict):
        cfg = dict(source)
        cls = cfg.get("image_processor_type") or cfg.get("feature_extractor_type")
        if not cls:
            raise ExportError("transformers: the config names no image_processor_type")
        backend = None
        if cls.endswith("Pil"):
            cls, backend = cls[:-3], "pil"
        elif cls.endswith("Fast"):
            cls, backend = cls[:-4], "torchvision"
        cls = cls.replace("FeatureExtractor", "ImageProcessor")
        return cfg, cls, backend
    # An image processor object: its attributes are the effective settings.
    cls = type(source).__name__
    backend = getattr(source, "backend", None)
    if not isinstance(backend, str):
        backend = "pil" if cls.endswith("Pil") else ("torchvision" if cls.endswith("Fast") else None)
    for suffix in ("Pil", "Fast"):
        if cls.endswith(suffix):
            cls = cls[: -len(suffix)]
    cfg = {}
    for k in ("do_resize", "size", "resample", "do_center_crop", "crop_size", "do_rescale", "rescale_factor",
              "do_normalize", "image_mean", "image_std", "do_convert_rgb", "crop_pct", "default_to_square"):
        if hasattr(source, k):
            v = getattr(source, k)
            if dataclasses.is_dataclass(v):  # transformers' SizeDict
                v = dataclasses.asdict(v)
            if hasattr(v, "items"):
                v = {a: b for a, b in dict(v).items() if b is not None}
            cfg[k] = getattr(v, "value", v)
    for k in dir(type(source)):
        if k.startswith("do_") and k not in cfg and not callable(getattr(source, k, None)):
            cfg[k] = getattr(source, k)
    return cfg, cls, backend


def _size_dict(size, default_to_square, what):
    if isinstance(size, int):
        return {"height": size, "width": size} if default_to_square else {"shortest_edge": size}
    if isinstance(size, (list, tuple)) and len(size) == 2:
        return {"height": size[0], "width": size[1]}
    if isinstance(size, dict):
        return {k: v for k, v in size.items() if v is not None}
    raise ExportError(f"transformers: {what} {size!r} is not an int, (h, w) or a dict")


def default_backend():
    """What AutoImageProcessor picks when none is named: torchvision where it is
    importable, else pil (transformers 5's _resolve_backend)."""
    import importlib.util
    return "torchvision" if importlib.util.find_spec("torchvision") else "pil"


_PIL_FLAG = "--transformers-backend pil (backend='pil')"
_TV_FLAG = "--transformers-backend torchvision (backend='torchvision')"


def export_transformers(source, name="preprocess", backend=None, allow_approx=False, log=print):
    """A transformers image processor or its saved config -> Pipeline, exact on both backends.

    allow_approx is accepted for symmetry with the other exporters: nothing here
    is approximate (what is not exact is refused)."""
    cfg, cls, named_backend = _load(source)
    chosen = None  # why the backend is what it is, when neither the caller nor the config said
    if backend is None and named_backend is None:
        backend = default_backend()
        chosen = (f"the config names no backend (save_pretrained writes {cls}, without the Pil suffix of the Pillow "
                  f"class), so this export follows what AutoImageProcessor picks on this machine: {backend}"
                  + (" (torchvision is installed)" if backend == "torchvision" else " (torchvision is not installed)")
                  + ". If the model's processor ran on the other backend, export again with "
                  + (_PIL_FLAG if backend == "torchvision" else _TV_FLAG))
    backend = backend or named_backend
    if backend not in ("pil", "torchvision"):
        raise ExportError(f"transformers: backend {backend!r} is not pil or torchvision")
    if cls not in CLASSES:
        raise ExportError(f"transformers: {cls} is not a processor this exporter knows to be plain resize, crop, "
                          f"rescale, normalize ({', '.join(sorted(CLASSES))}); its own steps may differ")
    d = dict(_BASE)
    d.update(CLASSES[cls])
    d.update({k: v for k, v in cfg.items() if v is not None})
    for k, v in d.items():
        if k.startswith("do_") and k not in _HANDLED and v:
            raise ExportError(f"transformers: {cls} has {k}=True, a step Sluice's pipeline does not take")
    tv = backend == "torchvision"
    p = Pipeline(name)
    p.note(f"Exported from transformers' {cls} ({backend} backend) by sluice_export.\n"
           "Input as processor(PIL.Image.open(path)): no EXIF orientation (orient: false).")
    if chosen:
        log("note: " + chosen)
        p.note(textwrap.fill(chosen, 100, break_long_words=False, break_on_hyphens=False))
    if d["do_convert_rgb"]:
        # convert_to_rgb composites alpha onto white (Image.alpha_composite);
        # the torchvision backend calls the same function on a PIL image.
        p.decode(color="RGB", orient=False, background=[255, 255, 255])
    else:
        p.decode(color="RGB", orient=False)
        p.note("do_convert_rgb false: transformers then takes the image's own mode; exact for RGB images only.")
    resample = d["resample"]
    resample = getattr(resample, "value", resample)
    if d["do_resize"]:
        interp = _interp(resample, tv, cls)
        aa = True if tv else None  # the torchvision backend's resize: tvF.resize(..., antialias=True)
        size = _size_dict(d.get("size"), d["default_to_square"], "size")
        if cls == "ConvNextImageProcessor":
            se = size.get("shortest_edge")
            if se is None or len(size) != 1:
                raise ExportError(f"transformers: ConvNextImageProcessor needs size {{'shortest_edge': N}}, got {size!r}")
            if se < 384:
                # int(shortest_edge / crop_pct), aspect kept (truncated), then a floor-centred crop
                shorter = int(se / d["crop_pct"])
                if tv and shorter < se:
                    raise ExportError(f"transformers: ConvNextImageProcessor crop_pct {d['crop_pct']} above 1 pads "
                                      "the crop; the torchvision backend puts an odd padding row at the bottom, "
                                      f"Sluice's floor rounding at the top. Export with {_PIL_FLAG} if that is the "
                                      "class you run")
                p.resize(shorter=shorter, interp=interp, antialias=aa)
                p.crop(size=(se, se), rounding="floor")
            else:
                p.resize(size=(se, se), interp=interp, antialias=aa)
            resized = (se, se)  # the smallest the resized image can be, height and width
        elif set(size) == {"shortest_edge"}:
            p.resize(shorter=size["shortest_edge"], interp=interp, antialias=aa)
            resized = (size["shortest_edge"],) * 2
        elif set(size) == {"height", "width"}:
            p.resize(size=(size["height"], size["width"]), interp=interp, antialias=aa)
            resized = (size["height"], size["width"])
        else:
            raise ExportError(f"transformers: size {size!r}: only shortest_edge or height/width map to a Sluice resize "
                              "(longest_edge and max_height/max_width round differently)")
    if d["do_center_crop"]:
        cs = _size_dict(d.get("crop_size"), True, "crop_size")
        if set(cs) != {"height", "width"}:
            raise ExportError(f"transformers: crop_size {cs!r} needs height and width")
        ch, cw = cs["height"], cs["width"]
        if tv:
            # transformers' torchvision center_crop: int((H - h) / 2), the floor
            # rule, where the image covers the crop; where it does not, it pads
            # (w - W) // 2 on the left and the rest on the right, the odd
            # column on the right, where Sluice's floor rounding puts it on the
            # left. Exact where no image can need padding.
            if not (d["do_resize"] and ch <= resized[0] and cw <= resized[1]):
                raise ExportError(f"transformers: {cls} crop_size {ch}x{cw} can exceed the resized image, and the "
                                  "torchvision backend's center_crop then pads with the odd row at the bottom (the "
                                  f"Pillow class and Sluice's floor rounding: at the top). Export with {_PIL_FLAG} "
                                  "if that is the class you run")
        p.crop(size=(ch, cw), rounding="floor")
    scale = float(d["rescale_factor"]) if d["do_rescale"] else None
    if d["do_normalize"]:
        p.normalize(scale=scale, mean=_list(d["image_mean"]), std=_list(d["image_std"]), layout="CHW", dtype="FP32")
    else:
        p.normalize(scale=scale, layout="CHW", dtype="FP32")
    return p


def _interp(resample, tv, cls):
    if tv:
        # transformers' pil_torch_interpolation_mapping: BILINEAR and BICUBIC stay,
        # NEAREST becomes NEAREST_EXACT, BOX/HAMMING/LANCZOS their torchvision modes
        if resample in (2, 3):
            return TORCH_INTERPS[_RESAMPLE[resample]]
        name = {0: "NEAREST (torchvision's NEAREST_EXACT)", 4: "BOX"}.get(resample, _RESAMPLE_NAMES.get(resample, resample))
        raise ExportError(f"transformers: {cls} on the torchvision backend resamples {name} with torch's kernels, "
                          "which no Sluice filter reproduces (its torch modes are BILINEAR 2 and BICUBIC 3). "
                          f"Export with {_PIL_FLAG} if you run the Pillow class ({cls}Pil)")
    if resample not in _RESAMPLE:
        raise ExportError(f"transformers: resample {_RESAMPLE_NAMES.get(resample, resample)} has no Sluice filter "
                          "(NEAREST 0, BILINEAR 2, BICUBIC 3, BOX 4 do)")
    return _RESAMPLE[resample]


def _list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]
