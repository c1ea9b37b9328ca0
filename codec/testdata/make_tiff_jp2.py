"""Writes the small TIFF and JPEG 2000 files of codec/testdata/formats/
(committed; run again to remake them):

    .venv/bin/python codec/testdata/make_tiff_jp2.py

Every image is the pattern that codec's tests compute too (pattern8 and
pattern16 in formats_test.go), so lossless files must decode to it
exactly. Pillow writes most files; tiffcp (libtiff-tools) writes tiles and
YCbCr JPEG, opj_compress (libopenjp2-tools) 16-bit RGB JPEG 2000, and
16-bit RGB TIFF is written by hand, since Pillow has no 16-bit RGB mode.
"""

import pathlib
import struct
import subprocess

import numpy as np
from PIL import Image

OUT = pathlib.Path(__file__).resolve().parent / "formats"
W, H = 37, 23


def pattern8():
    y, x = np.mgrid[0:H, 0:W]
    return np.stack([(x * 7 + y * 3) & 255, (x * 3 + y * 11) & 255, (x * 13 + y * 5) & 255], axis=2).astype(np.uint8)


def pattern16():
    """High byte pattern8, low byte (x + y) & 255."""
    y, x = np.mgrid[0:H, 0:W]
    return pattern8().astype(np.uint16) << 8 | ((x + y) & 255).astype(np.uint16)[:, :, None]


def raw_tiff(path, a, photometric=None):
    """Writes a (H×W, or H×W×3) uint8 or uint16 array as an uncompressed
    little-endian TIFF in one strip: what Pillow cannot write (16-bit RGB,
    min-is-white grey). photometric defaults to min-is-black or RGB."""
    h, w = a.shape[:2]
    spp = 1 if a.ndim == 2 else a.shape[2]
    bits = a.dtype.itemsize * 8
    if photometric is None:
        photometric = 1 if spp == 1 else 2
    data = a.astype(f"<u{a.dtype.itemsize}").tobytes()
    n = 10
    ifd = 8
    extra = ifd + 2 + 12 * n + 4  # BitsPerSample values when spp > 1
    data_off = extra + (2 * spp if spp > 1 else 0)
    bps = (258, 3, spp, extra) if spp > 1 else (258, 3, 1, bits)
    entries = [  # tag, type, count, value (sorted by tag)
        (256, 4, 1, w), (257, 4, 1, h), bps, (259, 3, 1, 1), (262, 3, 1, photometric),
        (273, 4, 1, data_off), (277, 3, 1, spp), (278, 4, 1, h), (279, 4, 1, len(data)), (284, 3, 1, 1),
    ]
    out = bytearray(b"II*\x00" + struct.pack("<I", ifd) + struct.pack("<H", n))
    for tag, typ, count, value in entries:
        if typ == 3 and count == 1:
            out += struct.pack("<HHIHH", tag, typ, count, value, 0)
        else:
            out += struct.pack("<HHII", tag, typ, count, value)
    out += struct.pack("<I", 0)
    if spp > 1:
        out += struct.pack(f"<{spp}H", *([bits] * spp))
    path.write_bytes(out + data)


def pnm(path, a, maxval):
    """A binary PGM or PPM of a uint16 array with the given maxval."""
    magic = b"P5" if a.ndim == 2 else b"P6"
    h, w = a.shape[:2]
    path.write_bytes(magic + f"\n{w} {h}\n{maxval}\n".encode() + a.astype(">u2").tobytes())
    return path


def opj_compress(src, dst, *args):
    subprocess.run(["opj_compress", "-i", str(src), "-o", str(dst), *args], check=True, stdout=subprocess.DEVNULL)
    return dst


def main():
    OUT.mkdir(exist_ok=True)
    rgb = Image.fromarray(pattern8())
    for c in ("raw", "tiff_lzw", "tiff_adobe_deflate", "packbits"):
        rgb.save(OUT / f"rgb_{c}.tif", compression=c)
    rgb.save(OUT / "rgb_jpeg.tif", compression="jpeg", quality=90)
    rgb.convert("L").save(OUT / "gray_lzw.tif", compression="tiff_lzw")
    a = np.dstack([pattern8(), pattern8()[:, :, :1]])
    Image.fromarray(a, "RGBA").save(OUT / "rgba_deflate.tif", compression="tiff_adobe_deflate")
    rgb.quantize(32).save(OUT / "palette_packbits.tif", compression="packbits")
    Image.fromarray(pattern16()[:, :, 0]).save(OUT / "gray16_lzw.tif", compression="tiff_lzw")
    raw_tiff(OUT / "rgb16_raw.tif", pattern16())
    raw_tiff(OUT / "gray_miniswhite.tif", 255 - pattern8()[:, :, 0], photometric=0)
    subprocess.run(["tiffcp", "-c", "lzw", OUT / "rgb16_raw.tif", OUT / "rgb16_lzw.tif"], check=True)
    subprocess.run(["tiffcp", "-B", "-c", "zip", OUT / "rgb16_raw.tif", OUT / "rgb16_bigendian.tif"], check=True)
    subprocess.run(["tiffcp", "-t", "-w", "16", "-l", "16", "-c", "lzw", OUT / "rgb_raw.tif", OUT / "rgb_tiled.tif"], check=True)
    subprocess.run(["tiffcp", "-c", "jpeg:90", OUT / "rgb_raw.tif", OUT / "ycbcr_jpeg.tif"], check=True)
    rgb.save(OUT / "pages.tif", save_all=True, append_images=[rgb.convert("L")], compression="tiff_lzw")
    rgb.save(OUT / "rgb_orient6.tif", compression="tiff_lzw", tiffinfo={274: 6})
    rgb.convert("CMYK").save(OUT / "cmyk.tif")
    rgb.convert("1").save(OUT / "bilevel.tif")

    rgb.save(OUT / "rgb.jp2", irreversible=False)
    rgb.save(OUT / "rgb.j2k", irreversible=False)
    rgb.save(OUT / "rgb_lossy.jp2", irreversible=True, quality_mode="rates", quality_layers=[8])
    rgb.convert("L").save(OUT / "gray.jp2", irreversible=False)
    Image.fromarray(pattern16()[:, :, 0]).save(OUT / "gray16.j2k", irreversible=False)
    Image.fromarray(a, "RGBA").save(OUT / "rgba.jp2", irreversible=False)
    rgb.save(OUT / "rgb_tiled.jp2", irreversible=False, tile_size=(16, 16))
    ppm = pnm(OUT / "rgb16.ppm", pattern16(), 65535)
    opj_compress(ppm, OUT / "rgb16.j2k", "-n", "3")  # resolutions: the image is small
    ppm.unlink()


if __name__ == "__main__":
    main()
