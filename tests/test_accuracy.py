"""Accuracy of the CPU operators against independent references: Pillow
(libjpeg-turbo ISLOW decode, its resampling filters) and OpenCV, on real
photos of the corpus and on images generated here."""

import shutil
import subprocess

import cv2
import numpy as np
import pytest
from PIL import Image

from tests import formats
from tests.helpers import BROKEN_CAUSES, ROOT, decode_pipeline, diff_stats, pil_rgb, run_grouped, size_key

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def jpegs(corpus, *folders):
    return sorted(p for f in folders for p in (corpus / f).glob("*.jp*g"))


# --- decode ---------------------------------------------------------------


def noisy_gradient():
    """A 97x61 RGB test image with detail at every frequency."""
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:61, 0:97]
    base = np.stack([x * 2.5, y * 4, (x + y) * 1.6], axis=2) + rng.normal(0, 12, (61, 97, 3))
    return Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))


def generated_jpegs(tmp_path):
    """JPEG variants made here, so the decoder is checked without the corpus."""
    img = noisy_gradient()
    variants = {
        "s444": dict(subsampling=0, quality=90),
        "s422": dict(subsampling=1, quality=80),
        "s420": dict(subsampling=2, quality=60),
        "progressive": dict(subsampling=2, quality=85, progressive=True),
        "optimized": dict(subsampling=0, quality=95, optimize=True),
        "restart": dict(subsampling=2, quality=85, restart_marker_rows=1),
    }
    paths = []
    for name, kw in variants.items():
        p = tmp_path / f"gen_{name}.jpg"
        img.save(p, "JPEG", **kw)
        paths.append(p)
    p = tmp_path / "gen_gray.jpg"
    img.convert("L").save(p, "JPEG", quality=80)
    paths.append(p)
    return paths


def test_decode_bit_exact_generated(sluice, tmp_path):
    paths = generated_jpegs(tmp_path)
    res, _ = sluice.run(decode_pipeline(61, 97), paths)
    for p in paths:
        np.testing.assert_array_equal(res[str(p)]["PIXELS"], pil_rgb(p), err_msg=str(p))


# A progressive scan script (cjpeg -scans) that codes luma up to
# coefficient 44, with successive approximation, chroma up to 20, and never
# the rest: legal, what an encoder dropping high frequencies writes.
LOW_PASS_SCANS = """
0,1,2: 0-0, 0, 0;
0: 1-5, 0, 1;
1: 1-20, 0, 0;
2: 1-20, 0, 0;
0: 6-44, 0, 1;
0: 1-44, 1, 0;
"""


def cjpeg(tmp_path, img, name, *args):
    """img encoded by libjpeg's cjpeg with args, for what Pillow cannot write."""
    exe = shutil.which("cjpeg")
    assert exe, "cjpeg not found (make test-deps installs libjpeg-turbo-progs)"
    src = tmp_path / f"{name}.ppm"
    img.save(src)
    out = tmp_path / f"{name}.jpg"
    subprocess.run([exe, *args, "-outfile", str(out), str(src)], check=True)
    return out


def test_decode_cjpeg_variants(sluice, tmp_path):
    """Legal JPEGs Pillow cannot write decode as Pillow decodes them: RGB
    components (Adobe transform 0, no colour conversion) and a scan script
    that leaves high frequencies uncoded."""
    img = noisy_gradient()
    scans = tmp_path / "lowpass.txt"
    scans.write_text(LOW_PASS_SCANS)
    rgb = cjpeg(tmp_path, img, "rgb", "-rgb", "-quality", "90")
    low = cjpeg(tmp_path, img, "lowpass", "-scans", str(scans), "-quality", "90")
    assert Image.open(rgb).info.get("adobe_transform") == 0
    res, _ = sluice.run(decode_pipeline(61, 97), [rgb, low])
    for p in rgb, low:
        np.testing.assert_array_equal(res[str(p)]["PIXELS"], pil_rgb(p), err_msg=str(p))


def test_decode_bit_exact_corpus(sluice, corpus):
    """Every JPEG of the corpus, EXIF orientation applied on both sides."""
    paths = jpegs(corpus, "jpeg/derived", "jpeg/native", "jpeg/tiny", "jpeg/exif", "jpeg/large", "edge")
    assert len(paths) > 100
    res = run_grouped(sluice, paths, decode_pipeline, size_key)
    for p in paths:
        got, want = res[str(p)]["PIXELS"], pil_rgb(p)
        if Image.open(p).mode == "CMYK":
            # CMYK→RGB is arithmetic, not libjpeg's: within one step.
            assert diff_stats(got, want)[1] <= 1, p
        else:
            np.testing.assert_array_equal(got, want, err_msg=str(p))


def test_decode_gray_and_bgr(sluice, corpus):
    p = corpus / "jpeg/derived/lom-bridge_full_512x384_b420q75.jpg"
    rgb = pil_rgb(p)
    res, _ = sluice.run(decode_pipeline(384, 512, color="BGR"), [p])
    np.testing.assert_array_equal(res[str(p)]["PIXELS"], rgb[:, :, ::-1])
    res, _ = sluice.run(decode_pipeline(384, 512, color="GRAY"), [p])
    gray = res[str(p)]["PIXELS"]
    assert gray.shape == (384, 512, 1)
    # Grey output is libjpeg's own YCbCr→grey (the luma plane); Pillow's
    # draft mode asks libjpeg for the same.
    ref = Image.open(p)
    ref.draft("L", ref.size)
    assert ref.mode == "L"
    np.testing.assert_array_equal(gray[:, :, 0], np.asarray(ref))


def test_png_corpus(sluice, corpus):
    paths = sorted((corpus / "png").glob("*.png"))
    assert len(paths) >= 8
    res = run_grouped(sluice, paths, decode_pipeline, size_key)
    for p in paths:
        np.testing.assert_array_equal(res[str(p)]["PIXELS"], pil_rgb(p), err_msg=str(p))


def test_png_alpha_kept(sluice, corpus):
    p = corpus / "png/derived_skimage-chelsea_451x300_rgba.png"
    res, _ = sluice.run(decode_pipeline(300, 451, color="RGBA"), [p])
    np.testing.assert_array_equal(res[str(p)]["PIXELS"], np.asarray(Image.open(p).convert("RGBA")))


def test_exif_orientations_upright(sluice, corpus):
    """Orientations 1-8 of one photo all decode to the same upright image."""
    paths = [corpus / f"jpeg/exif/derived_seeding_orient{i}.jpg" for i in range(1, 9)]
    res = run_grouped(sluice, paths, decode_pipeline, size_key)
    upright = res[str(paths[0])]["PIXELS"]
    for p in paths[1:]:
        got = res[str(p)]["PIXELS"]
        assert got.shape == upright.shape, p
        # Each file is its own encode of the turned photo, so pixels differ
        # by JPEG's losses: measured mean |diff| 0 to 1.21 (orientations
        # 5-8, transposed blocks); an image left turned differs by ~50.
        mean, _ = diff_stats(got, upright)
        assert mean < 1.5, (p, mean)
    # Switched off, orientations 5-8 keep their stored (transposed) shape.
    res, _ = sluice.run(decode_pipeline(upright.shape[1], upright.shape[0], orient=False), paths[4:])
    for p in paths[4:]:
        np.testing.assert_array_equal(res[str(p)]["PIXELS"], pil_rgb(p, orient=False))


# --- bad input -------------------------------------------------------------


def test_broken_files_fail_alone(sluice, corpus):
    good = corpus / "jpeg/derived/lom-bridge_full_512x384_b420q75.jpg"
    res, proc = sluice.run(decode_pipeline(384, 512), [good, *corpus.broken()], expect_ok=False)
    assert proc.returncode == 1
    np.testing.assert_array_equal(res[str(good)]["PIXELS"], pil_rgb(good))
    lines = proc.stderr.strip().splitlines()
    for name, cause in BROKEN_CAUSES.items():
        if cause is None:
            continue
        line = [l for l in lines if f"/{name}:" in l]
        assert len(line) == 1, (name, proc.stderr)
        assert f"decode: {cause}:" in line[0], line[0]
        assert str(corpus / "broken" / name) not in res
    assert "Traceback" not in proc.stderr and "goroutine" not in proc.stderr


def test_refinement_pending_decodes_as_pillow(sluice, corpus):
    """Go's video-001.progressive.truncated.jpeg is a progressive script
    that stops with refinement pending, EOI present: libjpeg and Pillow
    decode it without a warning, and so does Sluice, to Pillow's pixels."""
    p = corpus / "broken/go_video-001.progressive.truncated.jpeg"
    want = pil_rgb(p)
    res, _ = sluice.run(decode_pipeline(*want.shape[:2]), [p])
    np.testing.assert_array_equal(res[str(p)]["PIXELS"], want)


def test_misnamed_files_decode_by_content(sluice, corpus):
    """Servers see bytes, not file names: valid bytes under a wrong
    extension decode like their originals."""
    pairs = [("broken/jpeg_bytes_named.png", "jpeg/derived/lom-bridge_full_512x384_b420q75.jpg")]
    p, orig = corpus / pairs[0][0], corpus / pairs[0][1]
    res, _ = sluice.run(decode_pipeline(384, 512), [p, orig])
    np.testing.assert_array_equal(res[str(p)]["PIXELS"], res[str(orig)]["PIXELS"])
    p = corpus / "broken/png_bytes_named.jpg"
    res, _ = sluice.run(decode_pipeline(400, 600), [p])
    np.testing.assert_array_equal(res[str(p)]["PIXELS"], pil_rgb(corpus / "png/skimage_coffee.png"))


def test_pixel_limit(sluice, corpus):
    p = corpus / "jpeg/large/lom-seeding.jpg"
    _, proc = sluice.run(decode_pipeline(2988, 5312), [p], expect_ok=False, extra=["--max-pixels", "1000000"])
    assert proc.returncode == 1
    assert "too large" in proc.stderr and "1000000" in proc.stderr


# --- resize ----------------------------------------------------------------


def resize_pipeline(h, w, interp, antialias=True):
    return f"""
    version: 1
    input {{ name: "IMAGE" }}
    node {{ op: "decode" arg {{ name: "dct_scale" bool: false }} }}
    node {{ op: "resize" arg {{ name: "size" ints {{ v: [{h}, {w}] }} }} arg {{ name: "interp" str: "{interp}" }}
            arg {{ name: "antialias" bool: {str(antialias).lower()} }} }}
    output {{ name: "OUT" }}
    """


PIL_FILTER = {"nearest": Image.NEAREST, "linear": Image.BILINEAR, "cubic": Image.BICUBIC, "area": Image.BOX}
# (60, 500): from the 512x384 photos the height loses over twice as many
# pixels as the width, where Pillow 13 resizes vertically first.
TARGETS = [(224, 224), (97, 150), (700, 500), (333, 512), (60, 500)]


def resize_sample(corpus):
    return jpegs(corpus, "jpeg/derived")[::4] + [corpus / "jpeg/tiny/go_video-005.gray.q50.2x2.jpeg"]


@pytest.mark.parametrize("interp", ["linear", "cubic", "area"])
def test_resize_vs_pillow(sluice, corpus, interp):
    """Bit-exact with Pillow 13's Image.resize (README)."""
    paths = resize_sample(corpus)
    for h, w in TARGETS:
        res, _ = sluice.run(resize_pipeline(h, w, interp), paths)
        for p in paths:
            want = np.asarray(Image.fromarray(pil_rgb(p)).resize((w, h), PIL_FILTER[interp]))
            np.testing.assert_array_equal(res[str(p)]["OUT"], want, err_msg=f"{interp} {p.name} {(h, w)}")


def test_resize_nearest_exact(sluice, corpus):
    paths = resize_sample(corpus)
    for h, w in TARGETS + [(37, 1000), (1, 1)]:
        res, _ = sluice.run(resize_pipeline(h, w, "nearest"), paths)
        for p in paths:
            want = np.asarray(Image.fromarray(pil_rgb(p)).resize((w, h), Image.NEAREST))
            np.testing.assert_array_equal(res[str(p)]["OUT"], want, err_msg=f"{p.name} {(h, w)}")


def test_resize_no_antialias_vs_opencv(sluice, corpus):
    """Without antialias, linear is OpenCV's INTER_LINEAR (half-pixel centres)
    up to rounding: OpenCV weighs with 11-bit fixed point, Sluice with
    Pillow's 22 bits. Measured (OpenCV 5.0.0.93): worst mean |diff| 0.30,
    max 1 level."""
    paths = resize_sample(corpus)
    for h, w in [(224, 224), (300, 420), (600, 800)]:
        res, _ = sluice.run(resize_pipeline(h, w, "linear", antialias=False), paths)
        for p in paths:
            want = cv2.resize(pil_rgb(p), (w, h), interpolation=cv2.INTER_LINEAR)
            mean, mx = diff_stats(res[str(p)]["OUT"], want)
            assert mean <= 0.35 and mx <= 1, (p.name, (h, w), mean, mx)


# --- resize with source_mode ----------------------------------------------

# Decode colours and the Pillow mode each converts to after resizing, with
# the channel order to take from it. RGB and BGR (open_clip's) are judged
# against Pillow in ops' tests and python/tests' open_clip parity.
SOURCE_COLORS = {"GRAY": ("L", [0]), "RGBA": ("RGBA", [0, 1, 2, 3]), "BGRA": ("RGBA", [2, 1, 0, 3])}
SOURCE_INTERPS = ["linear", "cubic", "nearest", "area"]


def source_pipeline(h, w):
    """One decode (orient off, as open_clip's Image.open) and resize with
    source_mode per colour and filter, each output named COLOR_INTERP."""
    lines = ['version: 1', 'input { name: "IMAGE" }']
    for color in SOURCE_COLORS:
        for interp in SOURCE_INTERPS:
            n = f"{color}_{interp}"
            lines += [
                f'node {{ name: "d_{n}" op: "decode" input: "IMAGE" arg {{ name: "color" str: "{color}" }} '
                'arg { name: "orient" bool: false } }',
                f'node {{ name: "r_{n}" op: "resize" input: "d_{n}" arg {{ name: "size" ints {{ v: [{h}, {w}] }} }} '
                f'arg {{ name: "interp" str: "{interp}" }} arg {{ name: "source_mode" bool: true }} }}',
                f'output {{ name: "{n}" source: "r_{n}" }}',
            ]
    return "\n".join(lines)


def source_generated(corpus, tmp_path):
    """The modes the corpus lacks, made from a photo: LA, 1 (PNG and PBM), a
    palette with tRNS (semi-transparent entries too), RGB and L with a tRNS
    colour key (the key painted on a block, and its colour on single pixels
    elsewhere), RGBA with every alpha (PNG, lossless WebP) and a palette
    BMP."""
    rgb = Image.open(corpus / "jpeg/derived/lom-bridge_full_512x384_b420q75.jpg").convert("RGB").resize((181, 127))
    a = np.asarray(rgb).copy()
    rng = np.random.default_rng(11)
    ramp = (np.arange(a.shape[1])[None, :] * 2 + np.arange(a.shape[0])[:, None]) % 256
    ends = rng.choice([0, 255], a.shape[:2])  # alpha 0 and 255 on a fifth of the pixels
    alpha = Image.fromarray(np.where(rng.random(a.shape[:2]) < 0.2, ends, ramp).astype(np.uint8))
    out = []

    def save(im, name, **kw):
        p = tmp_path / name
        im.save(p, **kw)
        out.append(p)

    la = rgb.convert("L")
    la.putalpha(alpha)
    save(la, "src_la.png")
    rgba = rgb.copy()
    rgba.putalpha(alpha)
    save(rgba, "src_rgba.png")
    save(rgba, "src_rgba_lossless.webp", lossless=True)
    save(rgb.convert("1"), "src_bit.png")
    save(rgb.convert("1"), "src_bitmap.pbm")
    pal = rgb.quantize(64)
    trns = bytes(rng.choice([0, 255, 128, 40], 64))
    save(pal, "src_palette_trns.png", transparency=trns)
    save(rgb.quantize(200), "src_palette.bmp")
    key = (12, 200, 34)
    a[20:60, 30:90] = key
    a[5, 5] = a[100, 170] = key
    save(Image.fromarray(a), "src_rgb_key.png", transparency=key)
    g = np.asarray(rgb.convert("L")).copy()
    g[20:60, 30:90] = 77
    save(Image.fromarray(g), "src_l_key.png", transparency=77)
    return out


def source_reference(im, h, w, interp, color):
    """Pillow's Image.resize in the image's own mode, then convert: im is
    Image.open's image (16-bit grey taken to its high byte first, as
    decode does everywhere)."""
    mode, order = SOURCE_COLORS[color]
    if (g := formats.high_byte(im)) is not None:
        im = Image.fromarray(g)
    a = np.asarray(im.resize((w, h), PIL_FILTER[interp]).convert(mode))
    return a.reshape(h, w, -1)[:, :, order]


# Shrinking both sides, shrinking one and enlarging the other, enlarging
# both; the large photos (RGB, 10 of them, up to 16 MP) at the first only.
@pytest.mark.parametrize("size", [(224, 224), (97, 640), (400, 560)])
@pytest.mark.filterwarnings("ignore:Palette images with Transparency expressed in bytes")
def test_resize_source_mode_vs_pillow(sluice, corpus, tmp_path, size):
    """resize with source_mode to GRAY, RGBA and BGRA equals
    Image.open(p).resize(size, filter).convert("L" or "RGBA"), byte for
    byte: on every photo of the corpus (its modes: RGB, L, P, RGBA, CMYK
    and 16-bit grey) and on the modes made here, with each Pillow filter.
    Pillow resizes "P" and "1" NEAREST, "RGBA" and "LA" premultiplied,
    "CMYK" as inks, "RGB" in colour before its luma, and keys a colour's
    tRNS after resizing."""
    h, w = size
    photos = [p for p in corpus.good() if size == (224, 224) or "large" not in p.parts]
    paths = photos + source_generated(corpus, tmp_path)
    assert len({p.stem for p in paths}) == len(paths)
    modes = {}
    for p in paths:
        with Image.open(p) as im:
            modes[p] = im.mode, "transparency" in im.info
    assert {"RGB", "L", "P", "RGBA", "CMYK", "I;16", "LA", "1"} <= {m for m, _ in modes.values()}, modes
    assert {("P", True), ("RGB", True), ("L", True)} <= set(modes.values()), modes
    res, _ = sluice.run(source_pipeline(h, w), paths)
    diffs = {}
    for p in paths:
        im = Image.open(p)
        im.load()
        for color in SOURCE_COLORS:
            for interp in SOURCE_INTERPS:
                n = f"{color}_{interp}"
                got, want = res[str(p)][n], source_reference(im, h, w, interp, color)
                assert got.shape == want.shape, (p.name, n, got.shape, want.shape)
                diffs[(p.name, n)] = int(np.abs(got.astype(int) - want).max())
    bad = {k: d for k, d in diffs.items() if d}
    assert not bad, f"{len(bad)} of {len(diffs)} differ (name, output: max diff): {dict(list(bad.items())[:10])}"


# --- whole pipelines -------------------------------------------------------


def imagenet_text(dct):
    text = (ROOT / "model_repository/preprocess_imagenet/1/pipeline.pbtxt").read_text()
    return text.replace('arg { name: "color" str: "RGB" }',
                        f'arg {{ name: "color" str: "RGB" }} arg {{ name: "dct_scale" bool: {str(dct).lower()} }}')


def imagenet_reference(rgb):
    """torchvision's Resize(256) + CenterCrop(224) + ToTensor + Normalize,
    written out with Pillow and NumPy: the uint8 crop, and the tensor."""
    crop = formats.imagenet_crop(rgb)
    return crop, ((crop.astype(np.float32) / 255 - MEAN) / STD).transpose(2, 0, 1)


def imagenet_sample(corpus):
    return jpegs(corpus, "jpeg/derived", "jpeg/native")


def test_imagenet_pipeline_vs_reference(sluice, corpus):
    paths = imagenet_sample(corpus)
    res, _ = sluice.run(imagenet_text(dct=False), paths)
    for p in paths:
        got = res[str(p)]["PIXELS"]
        assert got.shape == (3, 224, 224) and got.dtype == np.float32
        # torchvision reads with PIL.Image.open: no EXIF rotation (orient: false)
        crop, want = imagenet_reference(pil_rgb(p, orient=False))
        # The pixels before normalize are Pillow's, bit for bit ...
        back = np.rint((got * STD[:, None, None] + MEAN[:, None, None]) * 255).transpose(1, 2, 0)
        np.testing.assert_array_equal(back, crop, err_msg=p.name)
        # ... and normalize differs from NumPy's float32 arithmetic only in
        # rounding: measured worst 4.8e-7 (2 ulp near 2.6).
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6, err_msg=p.name)


def test_dct_scale_off_by_default(sluice, corpus):
    """The shipped pipelines decode at full size: their outputs on large
    photos equal the ones with dct_scale off explicitly."""
    paths = jpegs(corpus, "jpeg/large")
    text = (ROOT / "model_repository/preprocess_imagenet/1/pipeline.pbtxt").read_text()
    assert "dct_scale" not in text
    shipped, _ = sluice.run(text, paths)
    full, _ = sluice.run(imagenet_text(dct=False), paths)
    for p in paths:
        np.testing.assert_array_equal(shipped[str(p)]["PIXELS"], full[str(p)]["PIXELS"], err_msg=p.name)


def test_dct_scaled_decode_close_to_full(sluice, corpus):
    """dct_scale on: DCT-domain downscaled decode + resize stays close to
    full decode + resize (mean under 1.5 levels), on photos where it applies
    (the large ones, and shorter-side 256 from ImageNet-size photos). It
    does apply there: every large photo's output differs from the full
    decode's, or the option would be doing nothing."""
    large = jpegs(corpus, "jpeg/large")
    paths = imagenet_sample(corpus) + large
    full, _ = sluice.run(imagenet_text(dct=False), paths)
    scaled, _ = sluice.run(imagenet_text(dct=True), paths)
    for p in paths:
        d = np.abs(full[str(p)]["PIXELS"] - scaled[str(p)]["PIXELS"]) * (STD[:, None, None] * 255)
        assert d.mean() <= 1.5, (p.name, d.mean())
        if p in large:
            assert d.max() > 0, f"{p.name}: dct_scale changed nothing"


def letterbox_reference(rgb, size=640):
    h, w = rgb.shape[:2]
    r = min(size / h, size / w)
    nw, nh = round(w * r), round(h * r)
    dw, dh = (size - nw) / 2, (size - nh) / 2
    img = Image.fromarray(rgb)
    if (nw, nh) != (w, h):
        img = img.resize((nw, nh), Image.BILINEAR)
    top, left = round(dh - 0.1), round(dw - 0.1)
    canvas = np.full((size, size, 3), 114, np.uint8)
    canvas[top:top + nh, left:left + nw] = np.asarray(img)
    return canvas, np.float32(r), np.array([left, top], np.float32)


def test_letterbox_pipeline(sluice, corpus):
    text = (ROOT / "model_repository/preprocess_letterbox/1/pipeline.pbtxt").read_text()
    text = text.replace('arg { name: "color" str: "RGB" }', 'arg { name: "color" str: "RGB" } arg { name: "dct_scale" bool: false }')
    paths = jpegs(corpus, "jpeg/derived")[::3] + [corpus / "jpeg/large/plasma-kite.jpg", corpus / "jpeg/tiny/odd_lom-life_8x8_b444q95.jpg"]
    res, _ = sluice.run(text, paths)
    for p in paths:
        canvas, scale, offset = letterbox_reference(pil_rgb(p))
        out = res[str(p)]
        assert out["PIXELS"].shape == (3, 640, 640)
        np.testing.assert_allclose(out["SCALE"], [scale], rtol=1e-6)
        np.testing.assert_array_equal(out["OFFSET"], offset)
        # Bit-exact with Pillow, and v/255*255 comes back exact in float32.
        np.testing.assert_array_equal(out["PIXELS"].transpose(1, 2, 0) * 255, canvas, err_msg=p.name)


def test_normalize_dtypes_layouts(sluice, corpus):
    """FP16, UINT8, HWC and BGR outputs agree with NumPy applied to the
    uint8 crop the same pipeline produces."""
    p = corpus / "jpeg/derived/mate-wood_full_500x375_b420q75.jpg"
    head = """
    version: 1
    input { name: "IMAGE" }
    node { op: "decode" }
    node { op: "resize" arg { name: "shorter" int: 256 } }
    node { op: "crop" arg { name: "size" ints { v: [224, 224] } } }
    """
    res, _ = sluice.run(head + 'output { name: "U8" }', [p])
    x = res[str(p)]["U8"].astype(np.float64)
    imagenet = ('arg { name: "scale" float: 0.00392156862745098 } '
                'arg { name: "mean" floats { v: [0.485, 0.456, 0.406] } } '
                'arg { name: "std" floats { v: [0.229, 0.224, 0.225] } } ')
    cases = [
        (imagenet + 'arg { name: "dtype" str: "FP16" } arg { name: "layout" str: "HWC" } arg { name: "order" str: "BGR" }',
         # mean and std are in output channel order, here B, G, R
         ((x[:, :, ::-1] / 255 - MEAN) / STD).astype(np.float16), 2e-3),
        ('arg { name: "mean" floats { v: [10, 20, 30] } } arg { name: "std" floats { v: [0.5, 1, 2] } } '
         'arg { name: "dtype" str: "UINT8" } arg { name: "layout" str: "CHW" }',
         np.clip(np.round((x - [10, 20, 30]) / [0.5, 1, 2]), 0, 255).astype(np.uint8).transpose(2, 0, 1), 0),
        (imagenet + 'arg { name: "layout" str: "HWC" }', ((x / 255 - MEAN) / STD).astype(np.float32), 1e-6),
    ]
    for args, want, atol in cases:
        res, _ = sluice.run(head + 'node { op: "normalize" ' + args + ' } output { name: "T" }', [p])
        got = res[str(p)]["T"]
        assert got.dtype == want.dtype and got.shape == want.shape, (args, got.dtype, got.shape)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=atol, rtol=1e-3 if atol else 0)


def test_generated_png_kinds(sluice, tmp_path):
    """PNG kinds made here: 16-bit, palette with transparency, grey+alpha,
    interlaced — checked against Pillow without the corpus."""
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, (33, 47, 3), np.uint8)
    paths = []
    p = tmp_path / "rgb_interlaced.png"
    Image.fromarray(rgb).save(p, interlace=1)
    paths.append(p)
    p = tmp_path / "palette.png"
    Image.fromarray(rgb).quantize(16).save(p, transparency=3)
    paths.append(p)
    p = tmp_path / "gray_alpha.png"
    Image.fromarray(rgb).convert("LA").save(p)
    paths.append(p)
    p = tmp_path / "gray16.png"
    Image.fromarray((rgb[:, :, 0].astype(np.uint16) * 257 + 3)).save(p)
    paths.append(p)
    res, _ = sluice.run(decode_pipeline(33, 47), paths)
    for p in paths:
        np.testing.assert_array_equal(res[str(p)]["PIXELS"], pil_rgb(p), err_msg=p.name)
