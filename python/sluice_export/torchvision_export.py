"""torchvision (and open_clip) Compose -> Sluice pipeline.

The transforms are recognised by class name and attributes, so torch is
imported only by whoever built the object (or unpickles it). The input is
taken to be what torchvision's ImageFolder hands its transform:
PIL.Image.open(path).convert("RGB"), which does not apply the EXIF orientation
(decode orient: false) and drops alpha as decode's color RGB does; a transform
that converts to RGB itself takes PIL.Image.open(path) as it is.

A Resize of a PIL image is Pillow's (Sluice's nearest, linear, cubic, area);
a Resize of a uint8 tensor (after PILToTensor or ToImage) is torch's uint8
kernels (Sluice's torch_linear, torch_cubic). torchvision's weights presets
(ImageClassification, ObjectDetection, SemanticSegmentation: what
ResNet50_Weights.IMAGENET1K_V2.transforms() returns) are read as the steps
their forward runs."""

from .builder import ONE_255, TORCH_INTERPS, ExportError, Pipeline

# torchvision's InterpolationMode values (and the PIL codes older versions
# stored) -> Sluice's interp. The others (lanczos, hamming, nearest-exact)
# have no Sluice filter.
_INTERP = {"nearest": "nearest", "bilinear": "linear", "bicubic": "cubic", "box": "area",
           0: "nearest", 2: "linear", 3: "cubic", 4: "area"}
_PIL_NAMES = {1: "lanczos", 5: "hamming"}

# The torchvision.transforms (v1) Resize of a uint8 tensor is not torch's
# uint8 kernels: it resizes in float32 and rounds (and clamps after bicubic),
# where v2's (and Sluice's torch_linear/torch_cubic) keep 8-bit intermediates.
# The largest difference of one pixel between the two, in levels of 255,
# measured on the corpus (its 141 photos resized to 224x224, 256x320 and
# 480x640; 2026-12-07, torch 2.15.0 / torchvision 0.29.2), by (filter,
# antialias); test_parity_torch.py measures it again against `sluice run`:
TORCH_V1_UINT8_BOUND = {("linear", True): 1, ("linear", False): 1, ("cubic", True): 21, ("cubic", False): 30}


def bound_text(levels):
    """The measured bound, for the refusal and for the note of an accepted approximation."""
    unit = "level" if levels == 1 else "levels"
    return f"measured on the corpus at three sizes: at most {levels} {unit} of 255 per pixel"


_RANDOM_HINT = "a random augmentation, not an eval transform"

# What this exporter reads; an unknown class's refusal names it.
SUPPORTED = ("Compose/v2.Compose of Resize, CenterCrop, ToTensor, PILToTensor/ToImage, ToDtype/ConvertImageDtype "
             "(float32), Normalize, and torchvision's weights presets (weights.transforms(): ImageClassification, "
             "ObjectDetection, SemanticSegmentation)")


def _interp_of(t, where):
    mode = getattr(t, "interpolation", 2)
    key = getattr(mode, "value", mode)
    if isinstance(key, str):
        key = key.lower()
    if key not in _INTERP:
        name = _PIL_NAMES.get(key, key)
        raise ExportError(f"{where}: interpolation {name!r} has no Sluice filter (nearest, bilinear, bicubic and box do)")
    return _INTERP[key]


def _Step(kind, **attrs):
    """One step of a preset's forward: an object of a class named as the transform class
    that does the same (of this module, not torchvision.transforms.v2), with its attributes."""
    return type(kind, (), attrs)()


def _preset_steps(t, cls):
    """The steps of a torchvision weights preset's forward (torchvision/transforms/_presets.py),
    from its attributes; None for any other class. Their functionals are torchvision.transforms'
    (v1): on a PIL image a Pillow resize, on a tensor the float resize."""
    def resize(size):
        return _Step("Resize", size=size, interpolation=getattr(t, "interpolation", 2), max_size=None,
                     antialias=getattr(t, "antialias", True))

    # if not isinstance(img, Tensor): img = F.pil_to_tensor(img); then F.convert_image_dtype(img, torch.float)
    to_float = [_Step("MaybePILToTensor"), _Step("ConvertImageDtype", dtype="float32")]
    norm = [_Step("Normalize", mean=list(getattr(t, "mean", ())), std=list(getattr(t, "std", ())))]
    if cls == "ImageClassification":
        return [resize(list(t.resize_size)), _Step("CenterCrop", size=list(t.crop_size))] + to_float + norm
    if cls == "SemanticSegmentation":
        rs = getattr(t, "resize_size", None)
        return ([resize(list(rs))] if isinstance(rs, (list, tuple)) else []) + to_float + norm
    if cls == "ObjectDetection":
        return to_float
    if cls in ("VideoClassification", "OpticalFlow"):
        raise ExportError(f"{cls}: torchvision's preset for {'video clips' if cls[0] == 'V' else 'image pairs'}; "
                          "a Sluice pipeline takes one image")
    return None


def _is_v2(t):
    return type(t).__module__.startswith("torchvision.transforms.v2")


def _flatten(obj):
    """[(transform, preset or None)]: Compose and Sequential opened, a preset as its steps."""
    ts = getattr(obj, "transforms", None)
    if ts is not None and type(obj).__name__ in ("Compose", "Sequential"):
        return [x for t in ts for x in _flatten(t)]
    steps = _preset_steps(obj, type(obj).__name__)
    return [(obj, None)] if steps is None else [(s, obj) for s in steps]


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


def _source_of(steps):
    """open_clip where its classes (or its _convert_to_rgb) are in the Compose, else torchvision."""
    for t, _ in steps:
        mod = type(t).__module__ or ""
        if mod.startswith("open_clip") or getattr(t, "__name__", None) == "_convert_to_rgb":
            return "open_clip"
    return "torchvision"


def export_torchvision(transform, name="preprocess", allow_approx=False, source=None, log=print):
    """A torchvision transforms.Compose / v2.Compose of eval transforms, or a weights preset
    (weights.transforms()) -> Pipeline.

    Refuses (ExportError) any transform it cannot express exactly, naming it and
    why. With allow_approx, a torchvision.transforms (v1) Resize of a uint8 tensor
    (float kernels, rounded) is accepted as torch's uint8 kernels and its bound printed."""
    steps = _flatten(transform)
    source = source or _source_of(steps)
    p = Pipeline(name)
    p.decode(color="RGB", orient=False)
    # stage: "pil", "uint8" (tensor 0..255), "float" (tensor x*scale), "normalized"
    stage, scale, mean, std = "pil", None, None, None
    geometry_seen = False  # a Resize or CenterCrop already met (before an RGB conversion: source_mode)
    rgb_where = None  # the transform that converts to RGB, if any
    presets = []
    for i, (t, preset) in enumerate(steps):
        cls = type(t).__name__
        fname = getattr(t, "__name__", None) if callable(t) and cls == "function" else None
        if preset is not None and not any(preset is q for q in presets):
            presets.append(preset)
        where = f"transform {i} ({type(preset).__name__}: {cls})" if preset is not None else f"transform {i} ({fname or cls})"
        # open_clip 3.x writes the conversion as MaybeConvertMode("RGB"),
        # older ones as the function _convert_to_rgb.
        rgb_mode = cls == "MaybeConvertMode" and getattr(t, "mode", None) == "RGB"
        if fname in ("_convert_to_rgb", "convert_to_rgb") or cls in ("RGB",) or rgb_mode:
            if stage != "pil":
                raise ExportError(f"{where}: RGB conversion of a tensor is not an image mode conversion Sluice can follow")
            rgb_where = where
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
                interp, aa = _tensor_resize(t, where, interp, aa, allow_approx, p, log)
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
            geometry_seen = True
        elif cls == "CenterCrop":
            geometry_seen = True
            if stage == "normalized":
                raise ExportError(f"{where}: CenterCrop after Normalize pads with 0 in normalized units, "
                                  "which Sluice's crop (it runs before normalize) cannot give")
            size = _scalar_list(t.size)
            # torchvision's rule on PIL images and tensors alike: the default half_even
            p.crop(size=(int(size[0]), int(size[-1])))
        elif cls == "ToTensor" or (cls == "MaybeToTensor" and stage == "pil"):
            if stage != "pil":
                raise ExportError(f"{where}: ToTensor of something other than a PIL image")
            stage, scale = "float", ONE_255
        elif cls in ("PILToTensor", "ToImage", "ToImageTensor") or (cls == "MaybePILToTensor" and stage == "pil"):
            if stage != "pil":
                raise ExportError(f"{where}: {cls} of something other than a PIL image")
            stage = "uint8"
        elif cls in ("MaybeToTensor", "MaybePILToTensor"):
            continue  # already a tensor: these pass it through
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
            raise ExportError(f"{where}: no Sluice equivalent is known for {cls}. This exporter reads {SUPPORTED}; "
                              "rewrite the transform with those (a Lambda or a class of your own cannot be read), "
                              "or write the pipeline by hand (docs/pipelines.md)")
    if stage == "pil":
        raise ExportError("the transform ends with a PIL image: add ToTensor (or PILToTensor) to get a tensor")
    try:
        if stage == "uint8":
            p.normalize(layout="CHW", dtype="UINT8", comment="PILToTensor: uint8 CHW, unscaled")
        else:
            p.normalize(scale=scale, mean=mean, std=std, layout="CHW", dtype="FP32")
        p.output_dims()
    except ExportError as e:
        if p.hw is None and presets:
            raise ExportError(f"{type(presets[-1]).__name__}: {e} (this preset keeps each image's own size: put it "
                              "in a Compose after a Resize to a fixed (h, w))") from None
        raise
    p.notes.insert(0, _header(source, presets, rgb_where))
    return p


def _tensor_resize(t, where, interp, aa, allow_approx, p, log):
    """(interp, antialias) for a Resize of a uint8 tensor: torch's uint8 kernels."""
    if interp == "area":
        raise ExportError(f"{where}: box interpolation exists only for PIL images")
    if interp == "nearest":
        raise ExportError(f"{where}: nearest on a uint8 tensor picks other pixels than Pillow's (floor(i * in / out), "
                          "up to 255 levels apart on the corpus) and Sluice has no torch nearest; resize the PIL "
                          "image instead (Resize before PILToTensor/ToImage)")
    # antialias None is False for tensors (torchvision's legacy value)
    aa = bool(aa) if aa is not None else False
    tinterp = TORCH_INTERPS[interp]
    bound = bound_text(TORCH_V1_UINT8_BOUND[(interp, aa)])
    if _is_v2(t):
        if interp == "linear":
            # torchvision keeps a bilinear uint8 resize in uint8 only where torch
            # has the kernel (x86-64 with AVX2); the bicubic one everywhere on a CPU.
            p.note(f"{where} of a uint8 tensor: torch's uint8 kernels (interp {tinterp}), as torchvision.transforms.v2\n"
                   "runs them on an x86-64 CPU with AVX2; without AVX2, and on CUDA, torchvision resizes in float32\n"
                   f"and rounds ({bound} from these).")
        return tinterp, aa
    if not allow_approx:
        raise ExportError(f"{where}: torchvision.transforms (v1) resizes a uint8 tensor in float32 and rounds, "
                          f"where Sluice's {tinterp} is torch's uint8 kernels (torchvision.transforms.v2's): {bound}. "
                          "Use torchvision.transforms.v2.Resize (exact), resize the PIL image (Resize before "
                          "PILToTensor, exact), or pass allow_approx=True (--allow-approx) to accept")
    msg = f"approximation accepted: {where} (v1) of a uint8 tensor mapped to torch's uint8 kernels ({tinterp}), {bound}"
    log(msg)
    p.note(msg)
    return tinterp, aa


def _header(source, presets, rgb_where):
    """The pipeline's first comment: where it came from and what input it takes."""
    if presets:
        attrs = [f"{k} {getattr(getattr(t, k), 'value', getattr(t, k))}" for t in presets
                 for k in ("resize_size", "crop_size", "interpolation", "antialias") if hasattr(t, k)]
        text = f"Exported from {source}'s {' and '.join(type(t).__name__ for t in presets)} preset by sluice_export"
        text += (":\n" + ", ".join(attrs) + ".\n") if attrs else ".\n"
    else:
        text = f"Exported from {source} by sluice_export. "
    if rgb_where:
        return text + (f"Input as PIL.Image.open(path), no EXIF\norientation (orient: false); "
                       f"{rgb_where.split(' (')[0]} converts it to RGB.")
    return text + ("Input as torchvision's ImageFolder loads it:\n"
                   "PIL.Image.open(path).convert('RGB'): no EXIF orientation (orient: false), alpha dropped.")
