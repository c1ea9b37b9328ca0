"""TIFF and JPEG 2000 decoding against Pillow: files written here, at test
time, from corpus photos (Pillow; tiffcp for tiles and YCbCr JPEG; a small
writer for what Pillow cannot write: 16-bit RGB and min-is-white grey;
opj_compress for 16-bit RGB and 12-bit grey JPEG 2000).
Sluice and Pillow read TIFF through libtiff and JPEG 2000 through OpenJPEG
and scale 16-bit samples to their high byte, so most files decode
bit-exactly; JPEG-compressed TIFF and lossy JPEG 2000 are held to the
measured bounds below."""

import shutil
import subprocess

import cv2
import numpy as np
import pytest
from PIL import Image

# codec/testdata's generator of the Go tests' files, a namespace package
# under the repository root that pytest puts on sys.path for tests/.
from codec.testdata.make_tiff_jp2 import opj_compress, pnm, raw_tiff
from tests.helpers import decode_pipeline, diff_stats, pil_rgb, run_grouped, size_key

PHOTO = "jpeg/derived/lom-bridge_full_512x384_b420q75.jpg"
PHOTO2 = "jpeg/derived/lom-dragonfly_full_500x333_p420q85.jpg"
GRAY16 = "png/derived_plasma-grey_320x200_gray16.png"
RGB16 = "png/derived_skimage-coffee_400x267_rgb16.png"
PALETTE = "png/derived_lom-aitzgorri_500x333_palette.png"
RGBA = "png/derived_skimage-chelsea_451x300_rgba.png"


def tool(name, package):
    exe = shutil.which(name)
    assert exe, f"{name} not found (make test-deps installs {package})"
    return exe


def tiffcp(src, dst, *args):
    subprocess.run([tool("tiffcp", "libtiff-tools"), *args, str(src), str(dst)], check=True)
    return dst


def rgb16(corpus):
    """The 16-bit RGB photo as a uint16 array (Pillow reads it as 8-bit)."""
    a = cv2.imread(str(corpus / RGB16), cv2.IMREAD_UNCHANGED)
    assert a.dtype == np.uint16 and a.ndim == 3
    return a[:, :, ::-1]


def tiff_files(corpus, tmp):
    """name -> path of every TIFF kind, made from corpus photos."""
    photo = Image.open(corpus / PHOTO)
    out = {}

    def save(name, im, **kw):
        out[name] = tmp / f"{name}.tif"
        im.save(out[name], **kw)

    for c in ("raw", "tiff_lzw", "tiff_adobe_deflate", "packbits"):
        save(f"rgb_{c}", photo, compression=c)
    save("rgb_jpeg", photo, compression="jpeg", quality=90)
    out["ycbcr_jpeg"] = tiffcp(out["rgb_raw"], tmp / "ycbcr_jpeg.tif", "-c", "jpeg:90", "-r", "32")
    out["tiled_lzw"] = tiffcp(out["rgb_raw"], tmp / "tiled_lzw.tif", "-t", "-w", "80", "-l", "112", "-c", "lzw")
    out["tiled_jpeg"] = tiffcp(out["rgb_raw"], tmp / "tiled_jpeg.tif", "-t", "-w", "96", "-l", "80", "-c", "jpeg:85")
    for name in ("tiled_lzw", "tiled_jpeg"):  # tiles that do not divide the image
        assert Image.open(out[name]).tag_v2.get(322) in (80, 96), name
    assert Image.open(out["ycbcr_jpeg"]).tag_v2[262] == 6  # YCbCr
    save("gray_deflate", photo.convert("L"), compression="tiff_adobe_deflate")
    out["gray_miniswhite"] = tmp / "gray_miniswhite.tif"
    raw_tiff(out["gray_miniswhite"], 255 - np.asarray(photo.convert("L")), photometric=0)
    save("gray16_lzw", Image.open(corpus / GRAY16), compression="tiff_lzw")
    out["rgb16_raw"] = tmp / "rgb16_raw.tif"
    raw_tiff(out["rgb16_raw"], rgb16(corpus))
    out["rgb16_deflate"] = tiffcp(out["rgb16_raw"], tmp / "rgb16_deflate.tif", "-c", "zip")
    out["rgb16_bigendian"] = tiffcp(out["rgb16_raw"], tmp / "rgb16_bigendian.tif", "-B", "-c", "lzw")
    out["gray16_bigendian"] = tiffcp(out["gray16_lzw"], tmp / "gray16_bigendian.tif", "-B")
    save("rgba_lzw", Image.open(corpus / RGBA), compression="tiff_lzw")
    save("palette_packbits", Image.open(corpus / PALETTE), compression="packbits")
    save("pages", photo, save_all=True, append_images=[Image.open(corpus / PHOTO2)], compression="tiff_lzw")
    save("orient6", photo, compression="tiff_lzw", tiffinfo={274: 6})
    return out


# Maximum difference from Pillow per file; absent means bit-exact.
TIFF_BOUNDS = {}


def test_tiff_vs_pillow(sluice, corpus, tmp_path):
    files = tiff_files(corpus, tmp_path)
    res = run_grouped(sluice, files.values(), decode_pipeline, size_key)
    for name, p in files.items():
        got, want = res[str(p)]["PIXELS"], pil_rgb(p)
        assert got.shape == want.shape, name
        mean, worst = diff_stats(got, want)
        assert worst <= TIFF_BOUNDS.get(name, 0), f"{name}: max {worst}, mean {mean:.4f}"


def test_tiff_rgba_and_first_page(sluice, corpus, tmp_path):
    """Alpha is kept for RGBA output; a multi-page file gives its first page."""
    files = tiff_files(corpus, tmp_path)
    p = files["rgba_lzw"]
    h, w = size_key(p)
    res, _ = sluice.run(decode_pipeline(h, w, color="RGBA"), [p])
    np.testing.assert_array_equal(res[str(p)]["PIXELS"], np.asarray(Image.open(p).convert("RGBA")))
    p = files["pages"]
    assert Image.open(p).n_frames == 2
    first = Image.open(corpus / PHOTO)
    res, _ = sluice.run(decode_pipeline(first.height, first.width), [p])
    np.testing.assert_array_equal(res[str(p)]["PIXELS"], np.asarray(first.convert("RGB")))


def jp2_files(corpus, tmp):
    photo = Image.open(corpus / PHOTO)
    out = {}

    def save(name, im, **kw):
        # Distinct stems: the CLI names outputs by stem.
        out[name] = tmp / (name.replace(".", "_") + name[name.rindex(".") :])
        im.save(out[name], **kw)

    save("rgb_lossless.jp2", photo, irreversible=False)
    save("rgb_lossless.j2k", photo, irreversible=False)
    save("rgb_lossy.jp2", photo, irreversible=True, quality_mode="rates", quality_layers=[20])
    save("rgb_lossy.j2k", photo, irreversible=True, quality_mode="dB", quality_layers=[38])
    save("rgb_tiled.jp2", photo, irreversible=False, tile_size=(128, 128))
    save("gray.jp2", photo.convert("L"), irreversible=False)
    save("gray16.j2k", Image.open(corpus / GRAY16), irreversible=False)
    save("gray16_lossy.jp2", Image.open(corpus / GRAY16), irreversible=True, quality_mode="rates", quality_layers=[10])
    save("rgba.jp2", Image.open(corpus / RGBA), irreversible=False)
    tool("opj_compress", "libopenjp2-tools")
    ppm = pnm(tmp / "rgb16.ppm", rgb16(corpus), 65535)
    out["rgb16.j2k"] = opj_compress(ppm, tmp / "rgb16.j2k")
    out["rgb16_lossy.jp2"] = opj_compress(ppm, tmp / "rgb16_lossy.jp2", "-r", "20")
    g12 = np.asarray(Image.open(corpus / GRAY16)).astype(np.uint16) >> 4
    out["gray12.j2k"] = opj_compress(pnm(tmp / "gray12.pgm", g12, 4095), tmp / "gray12.j2k")
    return out


JP2_BOUNDS = {}
# Colour samples over 8 bits: Pillow rounds and then wraps what rounds past
# 255 to 0; Sluice clips to 255. Elsewhere bit-exact.
JP2_WRAPPED = {"rgb16.j2k", "rgb16_lossy.jp2"}


def test_jp2_vs_pillow(sluice, corpus, tmp_path):
    files = jp2_files(corpus, tmp_path)
    assert Image.open(files["gray16.j2k"]).mode == "I;16"
    res = run_grouped(sluice, files.values(), decode_pipeline, size_key)
    for name, p in files.items():
        got, want = res[str(p)]["PIXELS"], pil_rgb(p)
        assert got.shape == want.shape, name
        if name in JP2_WRAPPED:
            wrapped = (got == 255) & (want == 0)
            assert wrapped.any(), f"{name}: no sample near white; the photo no longer tests the wrap"
            want = np.where(wrapped, 255, want)
        mean, worst = diff_stats(got, want)
        assert worst <= JP2_BOUNDS.get(name, 0), f"{name}: max {worst}, mean {mean:.4f}"


def test_jp2_rgba(sluice, corpus, tmp_path):
    p = tmp_path / "rgba.jp2"
    Image.open(corpus / RGBA).save(p, irreversible=False)
    h, w = size_key(p)
    res, _ = sluice.run(decode_pipeline(h, w, color="RGBA"), [p])
    np.testing.assert_array_equal(res[str(p)]["PIXELS"], np.asarray(Image.open(p).convert("RGBA")))


@pytest.mark.parametrize("kind", ["tiff", "jp2"])
def test_truncated_fails_alone(sluice, corpus, tmp_path, kind):
    """A cut file fails with a classified error; the good one beside it
    still decodes."""
    photo = Image.open(corpus / PHOTO)
    good = tmp_path / f"good.{kind}"
    photo.save(good, **({"compression": "tiff_lzw"} if kind == "tiff" else {"irreversible": False}))
    bad = tmp_path / f"bad.{kind}"
    data = good.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    res, proc = sluice.run(decode_pipeline(photo.height, photo.width), [good, bad], expect_ok=False)
    np.testing.assert_array_equal(res[str(good)]["PIXELS"], np.asarray(photo.convert("RGB")))
    assert str(bad) not in res
    assert "TIFF" in proc.stderr or "JPEG 2000" in proc.stderr, proc.stderr
