"""BMP and PNM decoding against Pillow 13: every variant (tests/formats.py
writes them from a corpus photo at test time) in every output colour,
bit-exact; broken and forged files fail alone with their cause."""

import struct

import numpy as np
import pytest
from PIL import Image

from tests import formats
from tests.helpers import decode_pipeline

COLORS = ["RGB", "BGR", "GRAY", "RGBA", "BGRA"]


@pytest.fixture(scope="module")
def variants(corpus, tmp_path_factory):
    d = tmp_path_factory.mktemp("formats")
    return {**formats.bmp_variants(corpus, d), **formats.pnm_variants(corpus, d)}


def test_variants_cover_the_formats(variants):
    """Pillow reads every file as the variant it was made to be."""
    modes = {name: Image.open(p).mode for name, p in variants.items()}
    assert modes["rle8"] == "P" and Image.open(variants["rle8"]).info["compression"] == 1
    assert Image.open(variants["rle4"]).info["compression"] == 2
    assert modes["bgra32_v4"] == modes["rgba32_v5"] == "RGBA"
    assert modes["pil_rgba32"] == "RGB"  # Pillow writes BGRA as BI_RGB and reads it back as BGRX
    assert modes["pil_p5_16"] == modes["p5_max1000"] == "I"
    assert modes["p6_max65535"] == "RGB" and modes["p1"] == modes["pil_p4"] == "1"
    assert variants["pil_p5_16"].read_bytes().startswith(b"P5\n97 61\n65535\n")


@pytest.mark.parametrize("color", COLORS)
def test_bit_exact_with_pillow(sluice, variants, color):
    paths = list(variants.values())
    res, _ = sluice.run(decode_pipeline(formats.H, formats.W, color=color), paths)
    for name, p in variants.items():
        got = res[str(p)]["PIXELS"]
        want = formats.pillow_pixels(p, color)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {color}")


def test_alpha_kept(sluice, variants):
    """32-bit bitfields with an alpha mask keep every alpha level."""
    p = variants["bgra32_v4"]
    res, _ = sluice.run(decode_pipeline(formats.H, formats.W, color="RGBA"), [p])
    a = res[str(p)]["PIXELS"][:, :, 3]
    assert a.min() == 0 and a.max() == 255 and len(np.unique(a)) > 50


def broken_files(variants, d):
    """(file, expected cause) pairs made by damaging good files."""
    bmp = variants["pil_rgb24"].read_bytes()
    rle = variants["rle8"].read_bytes()
    pnm = variants["pil_p6"].read_bytes()
    plain = variants["p3"].read_bytes()
    off = struct.unpack_from("<I", bmp, 10)[0]
    forged = bytearray(bmp[: off + 64])
    struct.pack_into("<ii", forged, 18, 30000, 30000)  # claims 900 M pixels over 64 bytes
    fits = bytearray(forged)
    struct.pack_into("<ii", fits, 18, 5000, 5000)  # under the pixel limit, but no pixel array
    forged_rle = bytearray(rle[:2000])
    struct.pack_into("<ii", forged_rle, 18, 4000, 4000)
    rle_eob = bytearray(rle)
    roff = struct.unpack_from("<I", rle, 10)[0]
    rle_eob[roff : roff + 2] = b"\0\1"  # end of bitmap first
    cases = {
        "trunc.bmp": (bmp[: len(bmp) // 2], "truncated"),
        "header.bmp": (bmp[:30], "truncated"),
        "forged.bmp": (bytes(forged), "too large"),
        "forged_fits.bmp": (bytes(fits), "truncated"),
        "forged_rle.bmp": (bytes(forged_rle), "truncated"),  # its codes may skip (delta, end of line): it ends early
        "rle_trunc.bmp": (rle[: len(rle) // 2], "truncated"),
        "rle_eob.bmp": (bytes(rle_eob), "corrupt data"),
        "jpeg_in.bmp": (bmp[:30] + struct.pack("<I", 4) + bmp[34:], "unsupported"),
        "trunc_p6.ppm": (pnm[: len(pnm) - 10], "truncated"),
        "trunc_plain.ppm": (plain[: len(plain) // 3], "truncated"),
        "over_maxval.ppm": (b"P3\n2 1\n255\n0 0 0 256 0 0\n", "corrupt data"),
        "letters.pgm": (b"P2\n2 1\n255\n0 x\n", "corrupt data"),
        "forged_p5.pgm": (b"P5\n90000 90000\n255\n" + b"\0" * 100, "too large"),
        "forged_fits_p5.pgm": (b"P5\n5000 5000\n255\n" + b"\0" * 100, "truncated"),
        "maxval0.pgm": (b"P5\n1 1\n0\n\0", "corrupt data"),
        "pam.pam": (b"P7\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 255\nENDHDR\n\0", "unsupported"),
    }
    out = []
    for name, (data, cause) in cases.items():
        p = d / name
        p.write_bytes(data)
        out.append((p, cause))
    return out


def test_broken_files_fail_alone(sluice, variants, tmp_path):
    good = variants["pil_rgb24"]
    broken = broken_files(variants, tmp_path)
    res, proc = sluice.run(decode_pipeline(formats.H, formats.W), [good] + [p for p, _ in broken], expect_ok=False,
                           extra=["--max-pixels", "100000000"])  # fmt: skip
    assert proc.returncode == 1
    np.testing.assert_array_equal(res[str(good)]["PIXELS"], formats.pillow_pixels(good, "RGB"))
    lines = proc.stderr.strip().splitlines()
    for p, cause in broken:
        line = [l for l in lines if f"/{p.name}:" in l]
        assert len(line) == 1, (p.name, proc.stderr)
        assert f"decode: {cause}:" in line[0], line[0]
        assert ("BMP" in line[0]) or ("PNM" in line[0]) or ("PAM" in line[0]), line[0]
    assert "goroutine" not in proc.stderr


def test_pixel_limit(sluice, variants):
    for name in ("rle8", "pil_p5", "p3"):
        _, proc = sluice.run(decode_pipeline(formats.H, formats.W), [variants[name]], expect_ok=False,
                             extra=["--max-pixels", "5000"])  # fmt: skip
        assert proc.returncode == 1 and "too large" in proc.stderr and "5000" in proc.stderr, proc.stderr
