"""AVIF decoding against Pillow's, on AVIFs made here from corpus photos:
Pillow writes the 8-bit variants; avifenc (libavif's tool, a test tool
only) writes what Pillow cannot (10 and 12 bits, grids, lossless RGB).

Sluice reads the container itself and decodes AV1 with dav1d (statically
linked); Pillow uses its bundled libavif 1.x with dav1d. AV1 decoding is
exact across conformant decoders, and sluice converts YUV to RGB by the
routes libavif takes (libyuv's fixed-point arithmetic for BT.601/709/2020,
10/12-bit planes cut to 8 bits or through libyuv's deep rows), so the
bound is the one JPEG and PNG decoding have: bit-exact. 10-bit grey is the
one exception measured (GREY10_BOUND)."""

import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image, ImageOps, features

from tests.helpers import decode_pipeline, run_grouped

# Corpus photos: even and odd sizes, colour, grey, alpha, 16-bit.
SOURCES = [
    "jpeg/derived/lom-bridge_full_512x384_b420q75.jpg",
    "jpeg/derived/lom-dragonfly_full_500x333_p420q85.jpg",
    "jpeg/derived/mate-dune_full_350x263_rst_b420q85.jpg",
    "png/skimage_coffee.png",
]
RGBA_SOURCE = "png/derived_skimage-chelsea_451x300_rgba.png"
GRAY_SOURCE = "png/skimage_camera.png"
DEEP_SOURCE = "png/derived_skimage-coffee_400x267_rgb16.png"

# 10-bit 4:0:0 (grey) to 8-bit RGB: libavif takes libyuv's 10-bit rows,
# whose SIMD rounding sluice does not reproduce everywhere. Measured max 1,
# mean 0.0005 (no alpha) to 0.04 (with alpha) on the files here; every
# other depth and layout measured identical.
GREY10_BOUND = 1

# Pillow's save options, by variant name.
VARIANTS = {
    "s420": dict(subsampling="4:2:0", quality=75),
    "s422": dict(subsampling="4:2:2", quality=80),
    "s444": dict(subsampling="4:4:4", quality=90),
    # Lossless AV1 coding of the YUV planes; Pillow always codes BT.601
    # YUV, so RGB is not exactly kept (avifenc --lossless below is).
    "q100": dict(subsampling="4:4:4", quality=100),
    "limited": dict(subsampling="4:2:0", quality=75, range="limited"),
}


@pytest.fixture(scope="module", autouse=True)
def pillow_avif():
    if not features.check("avif"):
        pytest.fail("Pillow lacks AVIF support (tests/requirements.txt pins a Pillow with it)")


def pil_decode(path, mode):
    """Pillow's decode, upright (irot/imir applied), converted to mode."""
    return np.asarray(ImageOps.exif_transpose(Image.open(path)).convert(mode))


def upright_size(p):
    im = ImageOps.exif_transpose(Image.open(p))
    return (im.height, im.width)


def check(sluice, paths, color, mode, bound=0):
    res = run_grouped(sluice, paths, lambda h, w: decode_pipeline(h, w, color=color), upright_size)
    worst = 0
    for p in paths:
        got, want = res[str(p)]["PIXELS"], pil_decode(p, mode)
        if mode == "L":
            want = want[:, :, None]
        assert got.shape == want.shape, p
        d = np.abs(got.astype(int) - want.astype(int))
        print(f"{p.name} {color}: max {d.max()} mean {d.mean():.4f}")
        worst = max(worst, int(d.max()))
        if bound == 0:
            np.testing.assert_array_equal(got, want, err_msg=str(p))
        else:
            assert d.max() <= bound and d.mean() < 1, (p, d.max(), d.mean())
    return worst


def pillow_avifs(corpus, tmp_path):
    paths = []
    for src in SOURCES:
        im = Image.open(corpus / src).convert("RGB")
        stem = (corpus / src).stem
        for name, kw in VARIANTS.items():
            p = tmp_path / f"{stem}.{name}.avif"
            im.save(p, "AVIF", **kw)
            paths.append(p)
    return paths


def test_avif_rgb(sluice, corpus, tmp_path):
    paths = pillow_avifs(corpus, tmp_path)
    check(sluice, paths, "RGB", "RGB")


def test_avif_gray_bgr(sluice, corpus, tmp_path):
    paths = pillow_avifs(corpus, tmp_path)[:len(VARIANTS)]
    check(sluice, paths, "GRAY", "L")
    res = run_grouped(sluice, paths, lambda h, w: decode_pipeline(h, w, color="BGR"), upright_size)
    for p in paths:
        np.testing.assert_array_equal(res[str(p)]["PIXELS"], pil_decode(p, "RGB")[:, :, ::-1], err_msg=str(p))


def test_avif_monochrome(sluice, corpus, tmp_path):
    """A grey source: Pillow writes 4:0:0 (luma only)."""
    p = tmp_path / "camera.avif"
    Image.open(corpus / GRAY_SOURCE).convert("L").save(p, "AVIF", quality=80)
    check(sluice, [p], "RGB", "RGB")
    check(sluice, [p], "GRAY", "L")


def test_avif_alpha(sluice, corpus, tmp_path):
    im = Image.open(corpus / RGBA_SOURCE)
    assert im.mode == "RGBA"
    paths = []
    for name in ("s420", "s444"):
        p = tmp_path / f"chelsea.{name}.avif"
        im.save(p, "AVIF", **VARIANTS[name])
        paths.append(p)
    check(sluice, paths, "RGBA", "RGBA")
    # RGB drops alpha, as Pillow's convert("RGB") does (no compositing).
    check(sluice, paths, "RGB", "RGB")


def test_avif_orientation(sluice, corpus, tmp_path):
    """EXIF orientation given to Pillow's save becomes irot/imir; both
    decoders turn the image upright."""
    im = Image.open(corpus / SOURCES[1]).convert("RGB")
    paths = []
    for o in range(2, 9):
        exif = Image.Exif()
        exif[0x0112] = o
        p = tmp_path / f"dragonfly.orient{o}.avif"
        im.save(p, "AVIF", exif=exif, quality=80)
        paths.append(p)
    check(sluice, paths, "RGB", "RGB")


def avifenc(tmp_path, src_png, name, *args):
    exe = shutil.which("avifenc")
    assert exe, "avifenc not found (make test-deps installs libavif-bin)"
    out = tmp_path / f"{name}.avif"
    subprocess.run([exe, "-j", "1", *args, str(src_png), str(out)], check=True, capture_output=True)
    return out


def test_avif_deep_and_lossless(sluice, corpus, tmp_path):
    """What Pillow cannot write (its encoder takes 8-bit RGB only): 10- and
    12-bit AVIFs from a 16-bit photo, and lossless RGB (identity matrix).
    Both decoders ask libavif for 8-bit RGB."""
    deep = corpus / DEEP_SOURCE
    assert Image.open(deep).mode.startswith("RGB") or Image.open(deep).mode.startswith("I")
    rgb8 = tmp_path / "dune.png"
    Image.open(corpus / SOURCES[2]).convert("RGB").save(rgb8)
    paths = [
        avifenc(tmp_path, deep, "coffee10", "-d", "10", "-y", "420", "--min", "20", "--max", "30"),
        avifenc(tmp_path, deep, "coffee12", "-d", "12", "-y", "444", "--min", "10", "--max", "20"),
        avifenc(tmp_path, rgb8, "dune10", "-d", "10", "-y", "422", "--min", "25", "--max", "35"),
        avifenc(tmp_path, rgb8, "dune_lossless", "--lossless"),
    ]
    depths = [int(subprocess.run([shutil.which("avifdec"), "--info", str(p)], capture_output=True, text=True)
                  .stdout.split("Bit Depth")[1].split(":")[1].split()[0]) for p in paths]
    assert depths == [10, 12, 10, 8], depths
    check(sluice, paths[:3], "RGB", "RGB")
    check(sluice, paths[:3], "RGBA", "RGBA")
    check(sluice, paths[3:], "RGB", "RGB")
    # Lossless is lossless: the decode is the source.
    res, _ = sluice.run(decode_pipeline(263, 350), [paths[3]])
    np.testing.assert_array_equal(res[str(paths[3])]["PIXELS"], np.asarray(Image.open(rgb8)))


def test_avif_grid(sluice, corpus, tmp_path):
    """Grid images (tiles of separate AV1 images, which Pillow's encoder
    does not write): 4x3 tiles of 128x128, and 2x2 with alpha."""
    src = tmp_path / "bridge.png"
    Image.open(corpus / SOURCES[0]).convert("RGB").save(src)
    rgba = tmp_path / "bridge_rgba.png"
    im = Image.open(src).convert("RGBA")
    im.putalpha(Image.open(src).convert("L"))
    im.save(rgba)
    paths = [
        avifenc(tmp_path, src, "grid4x3", "--grid", "4x3", "-y", "420", "--min", "20", "--max", "30"),
        avifenc(tmp_path, rgba, "grid2x2a", "--grid", "2x2", "-y", "444", "--min", "20", "--max", "30"),
    ]
    for p in paths:
        assert b"grid" in p.read_bytes()[:4096], p  # an item of type grid
    check(sluice, paths, "RGB", "RGB")
    check(sluice, paths[1:], "RGBA", "RGBA")


def test_avif_deep_alpha_and_grey(sluice, corpus, tmp_path):
    """Deep images with alpha or without chroma, which libavif converts by
    other routes: 10-bit 4:2:0 and 12-bit 4:2:0/4:4:4 with alpha, 12-bit
    and 10-bit grey."""
    rgba = corpus / RGBA_SOURCE
    paths = [
        avifenc(tmp_path, rgba, "a10_420", "-d", "10", "-y", "420"),
        avifenc(tmp_path, rgba, "a12_420", "-d", "12", "-y", "420"),
        avifenc(tmp_path, rgba, "a12_444", "-d", "12", "-y", "444"),
        avifenc(tmp_path, rgba, "a12_400", "-d", "12", "-y", "400"),
    ]
    check(sluice, paths, "RGBA", "RGBA")
    check(sluice, paths, "RGB", "RGB")
    grey10 = [avifenc(tmp_path, corpus / DEEP_SOURCE, "c10_400", "-d", "10", "-y", "400"),
              avifenc(tmp_path, rgba, "a10_400", "-d", "10", "-y", "400")]
    check(sluice, grey10, "RGBA", "RGBA", GREY10_BOUND)
