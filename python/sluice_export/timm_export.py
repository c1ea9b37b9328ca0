"""timm data config -> Sluice pipeline, as timm's transforms_imagenet_eval builds
the eval transform (no timm or torch needed).

Input: resolve_data_config's output (input_size, interpolation, mean, std,
crop_pct, crop_mode) or a model's pretrained_cfg (the same keys, some left out:
resolve_data_config's defaults fill them). timm's datasets load images with
PIL.Image.open(...).convert('RGB'): no EXIF orientation, alpha dropped."""

import math

from .builder import ONE_255, ExportError, Pipeline

# timm.data.constants
DEFAULT_CROP_PCT = 0.875
IMAGENET_DEFAULT_MEAN = (0.485, 0.456, 0.406)
IMAGENET_DEFAULT_STD = (0.229, 0.224, 0.225)

# timm's str_to_interp_mode names -> Sluice's interp
_INTERP = {"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest", "box": "area"}


def resolve(cfg, use_test_size=False):
    """The eval settings from a data config or pretrained_cfg, with
    resolve_data_config's defaults for what is left out."""
    cfg = dict(cfg)
    size = cfg.get("test_input_size") if use_test_size and cfg.get("test_input_size") else cfg.get("input_size")
    if size is None and cfg.get("img_size") is not None:
        s = cfg["img_size"]
        size = (3, s, s) if isinstance(s, int) else (3, *s)
    size = tuple(size or (3, 224, 224))
    crop_pct = cfg.get("test_crop_pct") if use_test_size and cfg.get("test_crop_pct") else cfg.get("crop_pct")
    return {
        "input_size": size,
        "interpolation": cfg.get("interpolation") or "bicubic",
        "mean": tuple(cfg.get("mean") or IMAGENET_DEFAULT_MEAN),
        "std": tuple(cfg.get("std") or IMAGENET_DEFAULT_STD),
        "crop_pct": crop_pct or DEFAULT_CROP_PCT,
        "crop_mode": cfg.get("crop_mode") or "center",
    }


def export_timm(cfg, name="preprocess", use_test_size=False):
    d = resolve(cfg, use_test_size)
    if cfg.get("crop_border_pixels"):
        raise ExportError("timm: crop_border_pixels (TrimBorder) cuts a border off the original image, which no "
                          "Sluice operator before the resize does")
    size = d["input_size"]
    if len(size) != 3 or size[0] != 3:
        raise ExportError(f"timm: input_size {size!r}: only 3-channel (3, H, W) inputs are exported")
    img_size = (int(size[1]), int(size[2]))
    interp = d["interpolation"]
    if interp not in _INTERP:
        raise ExportError(f"timm: interpolation {interp!r} has no Sluice filter ({', '.join(_INTERP)} do)")
    crop_pct = float(d["crop_pct"])
    # transforms_imagenet_eval: scale_size = floor(img_size / crop_pct), per side
    scale_size = tuple(math.floor(x / crop_pct) for x in img_size)
    mode = d["crop_mode"]
    p = Pipeline(name)
    p.note("Exported from a timm data config by sluice_export: transforms_imagenet_eval's arithmetic.\n"
           f"input_size {size}, interpolation {interp}, crop_pct {crop_pct}, crop_mode {mode}:\n"
           f"scale_size = floor(img_size / crop_pct) = {scale_size}.\n"
           "Input as timm loads it: PIL.Image.open(path).convert('RGB'): no EXIF orientation, alpha dropped.")
    p.decode(color="RGB", orient=False)
    if mode == "squash":
        p.resize(size=scale_size, interp=_INTERP[interp])
    elif mode == "center":
        if scale_size[0] != scale_size[1]:
            raise ExportError(f"timm: crop_mode center with a non-square scale size {scale_size} uses ResizeKeepRatio, "
                              "which rounds the sides to nearest; Sluice's resize truncates (torchvision's rule)")
        p.resize(shorter=scale_size[0], interp=_INTERP[interp])
    elif mode == "border":
        raise ExportError("timm: crop_mode border uses ResizeKeepRatio(longest=1) and CenterCropOrPad, which round "
                          "sizes to nearest; no Sluice resize computes its size that way")
    else:
        raise ExportError(f"timm: crop_mode {mode!r} is not center, squash or border")
    p.crop(size=img_size)  # torchvision's CenterCrop: the default half_even rule
    p.normalize(scale=ONE_255, mean=d["mean"], std=d["std"], layout="CHW", dtype="FP32")
    return p
