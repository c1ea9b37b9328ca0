"""ultralytics LetterBox settings -> Sluice pipeline (no ultralytics needed).

ultralytics reads images with cv2.imread, which applies the EXIF orientation
(decode orient: true), drops alpha and gives BGR; its preprocess then flips to
RGB, lays out CHW and divides by 255. LetterBox resizes with cv2.resize
INTER_LINEAR: Sluice's interp "opencv_linear"."""

from .builder import ONE_255, ExportError, Pipeline

_KEYS = {"new_shape", "imgsz", "auto", "scale_fill", "scaleFill", "scaleup", "center", "stride", "padding_value",
         "interpolation"}
_CV2_INTER_LINEAR = 1


def _truthy(v):
    if isinstance(v, str):
        if v.lower() in ("1", "true", "yes"):
            return True
        if v.lower() in ("0", "false", "no"):
            return False
        raise ExportError(f"ultralytics: {v!r} is not a boolean")
    return bool(v)


def parse_settings(text):
    """'imgsz=640,stride=32,auto=false' (imgsz may be HxW) -> dict."""
    out = {}
    for part in filter(None, (s.strip() for s in text.split(","))):
        if "=" not in part:
            raise ExportError(f"ultralytics: {part!r} is not key=value")
        k, v = (x.strip() for x in part.split("=", 1))
        if k in ("imgsz", "new_shape"):
            v = [int(x) for x in v.lower().replace("x", " ").split()]
        elif k in ("stride", "padding_value", "interpolation"):
            v = int(v)
        out[k] = v
    return out


def _settings_of(obj):
    if isinstance(obj, str):
        return parse_settings(obj)
    if isinstance(obj, dict):
        return dict(obj)
    # a LetterBox object
    return {k: getattr(obj, k) for k in _KEYS if hasattr(obj, k)}


def export_ultralytics(settings, name="preprocess"):
    s = _settings_of(settings)
    unknown = set(s) - _KEYS
    if unknown:
        raise ExportError(f"ultralytics: unknown LetterBox setting(s) {', '.join(sorted(unknown))} "
                          f"(known: {', '.join(sorted(_KEYS))})")
    shape = s.get("new_shape", s.get("imgsz", 640))
    if isinstance(shape, int):
        shape = [shape]
    shape = list(shape)
    if len(shape) == 1:
        shape = shape * 2
    h, w = int(shape[0]), int(shape[1])
    if _truthy(s.get("auto", False)):
        raise ExportError("ultralytics: LetterBox auto=True pads only to a multiple of stride, so each image's canvas "
                          "has its own size; a Triton output needs a static one (export with auto=false)")
    if not _truthy(s.get("center", True)):
        raise ExportError("ultralytics: LetterBox center=False puts the image top-left; Sluice's letterbox centres it "
                          "and its resize cannot compute ultralytics' rounded size any other way")
    interp = int(s.get("interpolation", _CV2_INTER_LINEAR))
    if interp != _CV2_INTER_LINEAR:
        raise ExportError(f"ultralytics: LetterBox interpolation {interp} is not cv2.INTER_LINEAR (1), the one "
                          "Sluice's opencv_linear reproduces")
    fill = s.get("padding_value", 114)
    p = Pipeline(name)
    p.note(f"Exported from ultralytics LetterBox settings by sluice_export: {s}.\n"
           "Input as cv2.imread: EXIF orientation applied (orient: true), alpha dropped, CMYK JPEGs converted\n"
           "with OpenCV's arithmetic (cmyk: opencv); pixels RGB, CHW, /255.")
    p.decode(color="RGB", orient=True, cmyk="opencv")
    if _truthy(s.get("scale_fill", s.get("scaleFill", False))):
        p.resize(size=(h, w), interp="opencv_linear")
        p.note("scale_fill: the image is stretched to the canvas, no padding (no SCALE/OFFSET outputs).")
    else:
        p.letterbox(size=(h, w), fill=[fill], scaleup=_truthy(s.get("scaleup", True)), interp="opencv_linear")
    # FP32: ultralytics' half mode divides in float16, which Sluice does not reproduce.
    p.normalize(scale=ONE_255, layout="CHW", dtype="FP32")
    return p
