"""interp "opencv_linear" against OpenCV itself: resize and letterbox, run
by `sluice run`, must equal cv2.resize(img, (w, h),
interpolation=cv2.INTER_LINEAR) byte for byte, on every corpus photo
(jpeg/derived, jpeg/native, png/) and on synthetic images of many sizes
and ratios, in 1, 3 and 4 channels.

The reference input is the decode of the same run (a crop of the whole
frame), so that only the resampling is under test: one pipeline per image
size decodes in GRAY, RGB and RGBA and resizes each to fixed sizes, to
sizes relative to the image (an exact halving takes OpenCV's 2x2 path,
one-axis resizes, one-pixel sides), through letterboxes, and through a
resize fused with a centre crop (which computes a window only)."""

import numpy as np
import pytest
from PIL import Image, ImageOps

from tests.helpers import run_grouped

cv2 = pytest.importorskip("cv2")

COLORS = ("GRAY", "RGB", "RGBA")
FILL = 114


def cv_resize(img, h, w):
    """cv2.resize with OpenCV's own same-size copy; grey stays HxWx1."""
    out = cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR)
    return out.reshape(h, w, img.shape[2])


def resize_targets(h, w):
    """(name, out h, out w) for an h x w image: fixed sizes, up and down,
    and sizes derived from the image."""
    t = {
        "f224": (224, 224), "f640": (640, 640), "f333x517": (333, 517), "f720x1280": (720, 1280),
        "one": (1, 1), "row": (1, 517), "col": (300, 1), "tiny": (7, 3),
        "half": (max(h // 2, 1), max(w // 2, 1)),   # exact 2x2 path when both even
        "double": (2 * h, 2 * w), "third": (max(h // 3, 1), max(w // 3, 1)),
        "wonly": (h, max(w // 2 + 1, 1)), "honly": (h * 3 // 2 + 1, w),
        "nudge": (max(h - 1, 1), w + 1), "up1_5": (h * 3 // 2, w * 3 // 2),
    }  # fmt: skip
    return [(k, oh, ow) for k, (oh, ow) in t.items() if oh * ow <= 4_000_000]


# (name, canvas h, canvas w, scaleup)
LETTERBOXES = [("lb640", 640, 640, True), ("lb384x640", 384, 640, True), ("lb32", 32, 32, True),
               ("lb1000", 1000, 1000, True), ("lb320keep", 320, 320, False)]  # fmt: skip


def letterbox_geometry(h, w, ch, cw, scaleup):
    """ultralytics' LetterBox rule, as ops/letterbox.go: r, the resized size
    (round half even, clamped to 1..canvas) and the top-left corner."""
    r = min(ch / h, cw / w)
    if not scaleup:
        r = min(r, 1.0)
    nw = min(max(round(w * r), 1), cw)
    nh = min(max(round(h * r), 1), ch)
    return nh, nw, round((ch - nh) / 2 - 0.1), round((cw - nw) / 2 - 0.1)


def crop_targets(h, w):
    """resize shorter=s then crop size=c: the fused window path (not on
    slivers, whose long side would grow past the size limit)."""
    if max(h, w) > 8 * min(h, w):
        return []
    return [("sc256", 256, 224), ("sc37", 37, 30)]


def shorter_size(h, w, s):
    """torchvision's size rule for shorter=s, as ops/resize.go."""
    if w <= h:
        return int(s * h / w), s
    return s, int(s * w / h)


def pipeline(h, w):
    nodes, outs = [], []  # outs: (output name, node name)
    for col in COLORS:
        d = f"d{col}"
        nodes.append(f'node {{ name: "{d}" op: "decode" input: "IMAGE" arg {{ name: "color" str: "{col}" }} }}')
        nodes.append(f'node {{ name: "src{col}" op: "crop" input: "{d}" arg {{ name: "roi" ints {{ v: [0, 0, {h}, {w}] }} }} }}')
        outs.append((f"SRC_{col}", f"src{col}"))
        for name, oh, ow in resize_targets(h, w):
            nodes.append(f'node {{ name: "{name}{col}" op: "resize" input: "{d}" '
                         f'arg {{ name: "size" ints {{ v: [{oh}, {ow}] }} }} arg {{ name: "interp" str: "opencv_linear" }} }}')
            outs.append((f"{name}_{col}", f"{name}{col}"))
        for name, ch, cw, up in LETTERBOXES:
            nodes.append(f'node {{ name: "{name}{col}" op: "letterbox" input: "{d}" arg {{ name: "size" ints {{ v: [{ch}, {cw}] }} }} '
                         f'arg {{ name: "scaleup" bool: {str(up).lower()} }} arg {{ name: "fill" floats {{ v: [{FILL}] }} }} '
                         f'arg {{ name: "interp" str: "opencv_linear" }} arg {{ name: "antialias" bool: false }} }}')
            outs.append((f"{name}_{col}", f"{name}{col}"))
        for name, s, c in crop_targets(h, w):
            nodes.append(f'node {{ name: "{name}r{col}" op: "resize" input: "{d}" arg {{ name: "shorter" int: {s} }} '
                         f'arg {{ name: "interp" str: "opencv_linear" }} }}')
            nodes.append(f'node {{ name: "{name}{col}" op: "crop" input: "{name}r{col}" arg {{ name: "size" ints {{ v: [{c}, {c}] }} }} }}')
            outs.append((f"{name}_{col}", f"{name}{col}"))
    lines = ["version: 1", 'input { name: "IMAGE" }', *nodes]
    lines += [f'output {{ name: "{o}" source: "{n}" }}' for o, n in outs]
    return "\n".join(lines) + "\n"


class Parity:
    def __init__(self):
        self.images, self.compared, self.maxdiff = 0, 0, 0

    def check(self, got, want, what):
        assert got.shape == want.shape and got.dtype == np.uint8, (what, got.shape, want.shape)
        d = int(np.abs(got.astype(np.int16) - want.astype(np.int16)).max()) if got.size else 0
        self.maxdiff = max(self.maxdiff, d)
        self.compared += 1
        if d:
            n = int((got != want).sum())
            pytest.fail(f"{what}: {n} values differ from cv2.resize, max {d}")


def check_image(par, outs, label):
    par.images += 1
    for col in COLORS:
        src = outs[f"SRC_{col}"]
        h, w = src.shape[:2]
        for name, oh, ow in resize_targets(h, w):
            par.check(outs[f"{name}_{col}"], cv_resize(src, oh, ow), f"{label} {col} resize {h}x{w}->{oh}x{ow}")
        for name, ch, cw, up in LETTERBOXES:
            nh, nw, top, left = letterbox_geometry(h, w, ch, cw, up)
            want = np.full((ch, cw, src.shape[2]), FILL, np.uint8)
            want[top:top + nh, left:left + nw] = cv_resize(src, nh, nw)
            par.check(outs[f"{name}_{col}"], want, f"{label} {col} letterbox {h}x{w}->{nh}x{nw} in {ch}x{cw}")
        for name, s, c in crop_targets(h, w):
            rh, rw = shorter_size(h, w, s)
            full = cv_resize(src, rh, rw)
            top, left = round((rh - c) / 2), round((rw - c) / 2)  # torchvision's centre crop
            want = np.full((c, c, src.shape[2]), 0, np.uint8)
            ys, xs = max(top, 0), max(left, 0)
            part = full[ys:top + c, xs:left + c]
            want[ys - top:ys - top + part.shape[0], xs - left:xs - left + part.shape[1]] = part
            par.check(outs[f"{name}_{col}"], want, f"{label} {col} shorter {s} + crop {c} on {h}x{w}")


def image_size(p):
    """The upright size, which decode (orient true) produces."""
    with Image.open(p) as im:
        return ImageOps.exif_transpose(im).size[::-1]


def run_and_check(sluice, paths, label):
    par = Parity()
    res = run_grouped(sluice, paths, pipeline, image_size)
    for p in paths:
        check_image(par, res[str(p)], f"{label} {p.name}")
    print(f"\nopencv_linear parity ({label}, OpenCV {cv2.__version__}): {par.images} images, "
          f"{par.compared} outputs compared, max diff {par.maxdiff}")
    return par


def test_corpus_photos(sluice, corpus):
    paths = corpus.files("jpeg/derived/") + corpus.files("jpeg/native/") + corpus.files("png/")
    assert len({p.stem for p in paths}) == len(paths), "stems must be distinct for sluice run"
    par = run_and_check(sluice, paths, "corpus")
    assert par.images == len(paths) and par.maxdiff == 0


SYNTH_SIZES = [(1, 1), (1, 2), (2, 1), (1, 640), (480, 1), (2, 2), (3, 5), (4, 4), (5, 3), (7, 13), (16, 16),
               (17, 31), (32, 33), (64, 48), (100, 1), (127, 255), (224, 224), (256, 342), (333, 500),
               (480, 640), (481, 639), (640, 480), (720, 1280), (1000, 999), (1080, 1920)]  # fmt: skip


def synthetic(h, w, seed):
    """RGBA noise over smooth gradients: noise works the rounding, the
    gradients the weights; some images blurred, some saturated."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) % 256, 255 - (x * y) % 256], -1)
    noise = rng.integers(0, 256, (h, w, 4))
    mix = [0.0, 0.3, 1.0][seed % 3]
    a = (base * (1 - mix) + noise * mix).astype(np.uint8)
    if seed % 4 == 3:
        a[rng.random((h, w)) < 0.2] = 255
    return a


def test_synthetic_sizes(sluice, tmp_path):
    paths = []
    for i, (h, w) in enumerate(SYNTH_SIZES):
        p = tmp_path / f"synth_{h}x{w}.png"
        Image.fromarray(synthetic(h, w, i), "RGBA").save(p)
        paths.append(p)
    par = run_and_check(sluice, paths, "synthetic")
    assert par.images == len(paths) and par.maxdiff == 0


def test_refusals(sluice, corpus):
    """antialias true is refused with opencv_linear, naming the argument."""
    p = corpus.files("png/")[0]
    text = """
    version: 1
    input { name: "IMAGE" }
    node { op: "decode" }
    node { op: "resize" arg { name: "size" ints { v: [8, 8] } } arg { name: "interp" str: "opencv_linear" }
           arg { name: "antialias" bool: true } }
    output { name: "OUT" }
    """
    _, proc = sluice.run(text, [p], expect_ok=False)
    assert proc.returncode != 0 and '"antialias"' in proc.stderr and "opencv_linear" in proc.stderr, proc.stderr
