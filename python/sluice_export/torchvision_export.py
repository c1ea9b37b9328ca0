"""torchvision (and open_clip) Compose -> Sluice pipeline.

The transforms are recognised by class name and attributes, so torch is
imported only by whoever built the object. The input is taken to be what
torchvision's ImageFolder hands its transform: PIL.Image.open(path).convert("RGB"),
which does not apply the EXIF orientation (decode orient: false) and drops alpha
as decode's color RGB does."""

from .builder import ONE_255, ExportError, Pipeline

# torchvision's InterpolationMode values (and the PIL codes older versions
# stored) -> Sluice's interp. The others (lanczos, hamming, nearest-exact)
# have no Sluice filter.
_INTERP = {"nearest": "nearest", "bilinear": "linear", "bicubic": "cubic", "box": "area",
           0: "nearest", 2: "linear", 3: "cubic", 4: "area"}
_PIL_NAMES = {1: "lanczos", 5: "hamming"}

# How far torch's uint8 resize kernels land from Pillow's, measured on the
# corpus (140 photos, 2026-12-01, torch 2.15.0 / torchvision 0.29.2 /
# transformers 5.24.0), as the largest difference of one pixel in levels of
# 255: torchvision's Resize(256) + CenterCrop(224) of a uint8 tensor, and
# transformers' torchvision-backed processors at their defaults.
TORCH_UINT8_BOUND = {"linear": 1, "cubic": 17}
TRANSFORMERS_TORCH_BOUND = {"ViTImageProcessor": 1, "CLIPImageProcessor": 2, "SiglipImageProcessor": 4,
                            "ConvNextImageProcessor": 8}


def bound_text(levels):
    """The measured bound, for the refusal and for the note of an accepted approximation."""
    if levels is None:
        return "not measured for this one (torch's uint8 resize kernels, not Pillow's)"
    unit = "level" if levels == 1 else "levels"
    return f"measured on the corpus: at most {levels} {unit} of 255 per pixel (torch's uint8 kernels vs Pillow)"

_RANDOM_HINT = "a random augmentation, not an eval transform"


def _interp_of(t, where):
    mode = getattr(t, "interpolation", 2)
    key = getattr(mode, "value", mode)
    if isinstance(key, str):
        key = key.lower()
    if key not in _INTERP:
        name = _PIL_NAMES.get(key, key)
        raise ExportError(f"{where}: interpolation {name!r} has no Sluice filter (nearest, bilinear, bicubic and box do)")
    return _INTERP[key]


def _flatten(obj):
    ts = getattr(obj, "transforms", None)
    if ts is None or type(obj).__name__ not in ("Compose", "Sequential"):
        return [obj]
    out = []
    for t in ts:
        out += _flatten(t)
    return out


def _dtype_name(d):
    # torch.float32 -> "float32"; a v2 ToDtype may hold a dict per tensor type.
    if isinstance(d, dict):
        vals = {str(v) for v in d.values()}
        if len(vals) != 1:
            raise ExportError(f"ToDtype: different dtypes per input type {d!r}")
        d = next(iter(d.values()))
    return str(d).replace("torch.", "")


def _scalar_list(v):
    if hasattr(v, "tolist"):
        v = v.tolist()
    return list(v) if isinstance(v, (list, tuple)) else [v]


def export_torchvision(transform, name="preprocess", allow_approx=False, source="torchvision", log=print):
    """A torchvision transforms.Compose / v2.Compose of eval transforms -> Pipeline.

    Refuses (ExportError) any transform it cannot express exactly, naming it and
    why. With allow_approx, a Resize on a uint8 tensor (after PILToTensor or
    ToImage) is accepted as Pillow's and its bound printed."""
    p = Pipeline(name)
    p.decode(color="RGB", orient=False)
    p.note(f"Exported from {source} by sluice_export. Input as torchvision's ImageFolder loads it:\n"
           "PIL.Image.open(path).convert('RGB'): no EXIF orientation (orient: false), alpha dropped.")
    # stage: "pil", "uint8" (tensor 0..255), "float" (tensor x*scale), "normalized"
    stage, scale, mean, std, pending_crop = "pil", None, None, None, []
    geometry_after_tensor = False
    geometry_seen = False  # a Resize or CenterCrop already met (before an RGB conversion: source_mode)
    for i, t in enumerate(_flatten(transform)):
        cls = type(t).__name__
        fname = getattr(t, "__name__", None) if callable(t) and cls == "function" else None
        where = f"transform {i} ({fname or cls})"
        # open_clip 3.x writes the conversion as MaybeConvertMode("RGB"),
        # older ones as the function _convert_to_rgb.
        rgb_mode = cls == "MaybeConvertMode" and getattr(t, "mode", None) == "RGB"
        if fname in ("_convert_to_rgb", "convert_to_rgb") or cls in ("RGB",) or rgb_mode:
            if stage != "pil":
                raise ExportError(f"{where}: RGB conversion of a tensor is not an image mode conversion Sluice can follow")
            if geometry_seen and any(n.op == "resize" for n in p.nodes):
                # The library resizes in the mode Image.open gave the image
                # and converts after: so does the resize with source_mode.
                # A crop alone commutes with the conversion.
                msg = (f"{where}: the RGB conversion comes after Resize/CenterCrop, so the library resizes each\n"
                       "image in the mode Image.open gives it (a palette image with NEAREST, RGBA premultiplied,\n"
                       "a CMYK JPEG as its inks), then converts; so does this resize (source_mode). Exact against\n"
                       "preprocess(Image.open(p)), as open_clip's loaders call it; on palette, RGBA and CMYK\n"
                       "images not against preprocess(Image.open(p).convert('RGB')).")
                log("note: " + msg.replace("\n", " "))
                p.source_mode().note(msg)
            continue
        if cls == "Resize":
            if stage in ("float", "normalized"):
                raise ExportError(f"{where}: Resize of a float tensor runs torch's float kernels, "
                                  "unrounded, which no Sluice resize reproduces (put Resize before ToTensor)")
            interp = _interp_of(t, where)
            aa = getattr(t, "antialias", True)
            if stage == "uint8":
                if interp == "area":
                    raise ExportError(f"{where}: box interpolation exists only for PIL images")
                if interp == "nearest":
                    # Not an approximation: torch picks other source pixels.
                    raise ExportError(f"{where}: nearest on a uint8 tensor picks other pixels than Pillow's "
                                      "(up to 255 levels apart on the corpus); not accepted even with allow_approx")
                if not allow_approx:
                    raise ExportError(f"{where}: Resize of a uint8 tensor runs torch's uint8 kernels, not Pillow's: "
                                      f"{bound_text(TORCH_UINT8_BOUND.get(interp))}; pass allow_approx=True (--allow-approx) to accept that")
                msg = f"approximation accepted: {where} on a uint8 tensor mapped to Pillow's filter, {bound_text(TORCH_UINT8_BOUND.get(interp))}"
                log(msg)
                p.note(msg)
                aa = bool(aa) if aa is not None else True
            else:
                aa = None  # a PIL image always resizes antialiased; torchvision ignores antialias there
            size = getattr(t, "size", None)
            max_size = getattr(t, "max_size", None)
            if isinstance(size, int):
                size = [size]
            if size is None:
                if not max_size:
                    raise ExportError(f"{where}: neither size nor max_size")
                p.resize(longer=max_size, interp=interp, antialias=aa)
            elif len(size) == 1:
                p.resize(shorter=int(size[0]), max_size=max_size, interp=interp, antialias=aa)
            elif len(size) == 2:
                if max_size:
                    raise ExportError(f"{where}: max_size with a (h, w) size is an error in torchvision")
                p.resize(size=(int(size[0]), int(size[1])), interp=interp, antialias=aa)
            else:
                raise ExportError(f"{where}: size {size!r} is not an int or (h, w)")
            geometry_after_tensor |= stage != "pil"
            geometry_seen = True
        elif cls == "CenterCrop":
            geometry_seen = True
            if stage == "normalized":
                raise ExportError(f"{where}: CenterCrop after Normalize pads with 0 in normalized units, "
                                  "which Sluice's crop (it runs before normalize) cannot give")
            size = _scalar_list(t.size)
            p.crop(size=(int(size[0]), int(size[-1])))  # torchvision's rule: the default half_even
        elif cls in ("ToTensor", "MaybeToTensor"):
            if stage != "pil":
                raise ExportError(f"{where}: ToTensor of something other than a PIL image")
            stage, scale = "float", ONE_255
        elif cls in ("PILToTensor", "ToImage", "MaybePILToTensor", "ToImageTensor"):
            if stage != "pil":
                raise ExportError(f"{where}: {cls} of something other than a PIL image")
            stage = "uint8"
        elif cls in ("ConvertImageDtype", "ToDtype", "ConvertDtype"):
            dt = _dtype_name(t.dtype)
            do_scale = getattr(t, "scale", True) if cls == "ToDtype" else True
            if stage == "float" and dt == "float32":
                continue
            if stage != "uint8":
                raise ExportError(f"{where}: converting a {stage} image to {dt} is not supported")
            if dt != "float32":
                raise ExportError(f"{where}: dtype {dt}: Sluice computes in float32 and outputs FP32, FP16 or UINT8; "
                                  f"torch's {dt} arithmetic is not reproduced")
            stage, scale = "float", (ONE_255 if do_scale else 1.0)
        elif cls == "Normalize":
            if stage != "float":
                raise ExportError(f"{where}: Normalize needs a float tensor (after ToTensor), here a {stage} one")
            mean, std = _scalar_list(t.mean), _scalar_list(t.std)
            stage = "normalized"
        elif cls in ("ToPureTensor", "Identity"):
            continue
        elif cls.startswith("Random") or cls in ("ColorJitter", "AutoAugment", "RandAugment", "TrivialAugmentWide",
                                                 "AugMix", "GaussianBlur", "RandomErasing"):
            raise ExportError(f"{where}: {_RANDOM_HINT}")
        elif cls in ("ResizeKeepRatio", "CenterCropOrPad", "TrimBorder"):
            raise ExportError(f"{where}: timm/open_clip's {cls} rounds sizes to nearest (round()) where Sluice's "
                              "resize truncates; not expressible exactly")
        else:
            raise ExportError(f"{where}: no Sluice equivalent is known for {cls}")
    if stage == "pil":
        raise ExportError("the transform ends with a PIL image: add ToTensor (or PILToTensor) to get a tensor")
    if stage == "uint8":
        p.normalize(layout="CHW", dtype="UINT8", comment="PILToTensor: uint8 CHW, unscaled")
    else:
        p.normalize(scale=scale, mean=mean, std=std, layout="CHW", dtype="FP32")
    return p
