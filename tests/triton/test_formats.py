"""Every image format through a CPU instance of the shipped ImageNet
pipeline in a real Triton: for each format, one BYTES [B, 1] request of its
variants (made here from a corpus photo, with Pillow, or with the small
writers of tests/formats.py where Pillow writes no such file), over HTTP and
gRPC. Each output equals `sluice run`'s on the same file bit for bit, and
the same pipeline over Pillow's decode of the file: exactly for lossless
codings, within one level of the 8-bit image where the codec is lossy
(libraries may round their colour conversions differently).
"""

import io
import sys

import numpy as np
import pytest
from PIL import Image, features

from tests import formats  # shared with the accuracy tests
from tests.helpers import ROOT, sluice_run
from tests.triton.helpers import BYTES_MODEL, IMAGENET, bytes_input, grpcclient, httpclient, infer

LOSSY_MAX_DIFF = 1  # levels of the 8-bit image before normalize, for lossy codecs

# Pillow plugins each format's files need (PIL.features names).
NEEDS = {"webp": "webp", "tiff": "libtiff", "jpeg2000": "jpg_2000", "avif": "avif"}


def bmp_files(corpus, d):
    v = formats.bmp_variants(corpus, d)
    names = ["pil_rgb24", "pil_p8", "pil_1bit", "pil_rgba32", "pal4", "rle8", "rle4", "rgb565_bitfields",
             "bgr24_os2", "bgra32_v4", "bgra32_v5_topdown"]  # fmt: skip
    return [(v[n], True) for n in names]


def pnm_files(corpus, d):
    v = formats.pnm_variants(corpus, d)
    names = ["pil_p6", "pil_p5", "pil_p4", "pil_p5_16", "p1", "p2", "p3", "p5_max1000", "p6_max4095", "p6_max65535"]
    return [(v[n], True) for n in names]


def save(d, name, im, fmt, **kw):
    p = d / name
    im.save(p, fmt, **kw)
    return p


def webp_files(corpus, d):
    im, rgba = formats.photo(corpus, 120, 160), formats.alpha_photo(corpus, 120, 160)
    return [
        (save(d, "lossy.webp", im, "WEBP", quality=80), False),
        (save(d, "lossless.webp", im, "WEBP", lossless=True), True),
        (save(d, "alpha_lossy.webp", rgba, "WEBP", quality=80), False),
        (save(d, "alpha_lossless.webp", rgba, "WEBP", lossless=True), True),
        # Animated: the first frame is the image.
        (save(d, "animated.webp", im, "WEBP", lossless=True, save_all=True, append_images=[rgba.convert("RGB")]), True),
    ]


def tiff_files(corpus, d):
    im = formats.photo(corpus, 120, 160)
    g16 = Image.fromarray((np.asarray(im.convert("L")).astype(np.uint16) * 257 + 77).astype(np.uint16))
    assert g16.mode == "I;16"
    files = [
        (save(d, "raw.tif", im, "TIFF"), True),
        (save(d, "lzw.tif", im, "TIFF", compression="tiff_lzw"), True),
        (save(d, "deflate.tif", im, "TIFF", compression="tiff_adobe_deflate"), True),
        (save(d, "packbits.tif", im, "TIFF", compression="packbits"), True),
        (save(d, "jpeg.tif", im, "TIFF", compression="jpeg", quality=90), False),
        (save(d, "grey.tif", im.convert("L"), "TIFF", compression="tiff_lzw"), True),
        (save(d, "rgba.tif", formats.alpha_photo(corpus, 120, 160), "TIFF", compression="tiff_adobe_deflate"), True),
        (save(d, "grey16.tif", g16, "TIFF"), True),
        (save(d, "grey16_lzw.tif", g16, "TIFF", compression="tiff_lzw"), True),
        # Two pages: the first is the image.
        (save(d, "pages.tif", im, "TIFF", save_all=True, append_images=[im.convert("L")]), True),
    ]
    for name, deflate in (("tiled.tif", False), ("tiled_deflate.tif", True)):
        p = d / name
        p.write_bytes(formats.tiled_tiff(im, 32, deflate))
        files.append((p, True))
    return files


def jpeg2000_files(corpus, d):
    im = formats.photo(corpus, 120, 160)
    return [
        (save(d, "lossless.jp2", im, "JPEG2000"), True),
        (save(d, "lossy.jp2", im, "JPEG2000", quality_mode="rates", quality_layers=[20], irreversible=True), False),
        (save(d, "codestream.j2k", im, "JPEG2000"), True),
        (save(d, "grey.j2k", im.convert("L"), "JPEG2000", no_jp2=True), True),
    ]


def avif_files(corpus, d):
    im, rgba = formats.photo(corpus, 120, 160), formats.alpha_photo(corpus, 120, 160)
    return [
        (save(d, "q75.avif", im, "AVIF", quality=75), False),
        (save(d, "alpha.avif", rgba, "AVIF", quality=90), False),
    ]


MAKERS = {"bmp": bmp_files, "pnm": pnm_files, "webp": webp_files, "tiff": tiff_files, "jpeg2000": jpeg2000_files,
          "avif": avif_files}  # fmt: skip


def sluice_errors(sluice_bin, paths):
    """`sluice run`'s messages for files it rejects, for a clear failure."""
    pipeline = ROOT / "model_repository" / IMAGENET / "1" / "pipeline.pbtxt"
    proc, _ = sluice_run(sluice_bin, pipeline, paths[0].parent / "errors-run", paths)
    return proc.stderr.strip()


@pytest.mark.parametrize("fmt", list(MAKERS))
def test_format_batch(sluice_server, corpus, reference, sluice_bin, tmp_path_factory, fmt):
    if fmt in NEEDS and not features.check(NEEDS[fmt]):
        pytest.fail(f"Pillow in {sys.prefix} lacks {NEEDS[fmt]}: cannot write {fmt} test files "
                    "(pip install the pinned pillow wheel, which bundles it)")  # fmt: skip
    d = tmp_path_factory.mktemp("fmt-" + fmt)
    files = MAKERS[fmt](corpus.root, d)
    paths = [p for p, _ in files]
    for p in paths:
        Image.open(p).load()  # Pillow reads back what it is the reference for
    refs = reference(IMAGENET).outputs(paths)
    missing = [p for p in paths if str(p) not in refs]
    if missing:
        pytest.fail(f"sluice run rejects {fmt} files:\n{sluice_errors(sluice_bin, missing)}", pytrace=False)

    blobs = [p.read_bytes() for p in paths]
    for client, mod in ((sluice_server.http, httpclient), (sluice_server.grpc, grpcclient)):
        got = infer(client, mod, BYTES_MODEL, [bytes_input(mod, blobs)])["PIXELS"]
        assert got.shape == (len(paths), 3, 224, 224), got.shape
        for k, p in enumerate(paths):
            want = refs[str(p)]["PIXELS"]
            assert got[k].dtype == want.dtype and np.array_equal(got[k], want), (
                f"{mod.__name__} element {k} ({p.name}) differs from sluice run: max |diff| "
                f"{np.abs(got[k].astype(np.float64) - want).max()}"
            )

    for p, exact in files:
        crop = formats.imagenet_crop(formats.pillow_pixels(p, "RGB"))
        back = formats.pixels_of_tensor(refs[str(p)]["PIXELS"])
        diff = np.abs(back - crop.astype(np.float64)).max()
        assert diff <= (0 if exact else LOSSY_MAX_DIFF), f"{p.name}: max |diff| {diff} from the pipeline over Pillow's decode"


def test_variants_are_what_they_claim(corpus, tmp_path):
    """The generated files are the variants named: compression, tiling,
    bit depth, pages and frames as Pillow reads them back."""
    d = tmp_path
    tiffs = {p.name: Image.open(p) for p, _ in tiff_files(corpus.root, d)}
    assert {n: im.info.get("compression") for n, im in tiffs.items() if n in ("lzw.tif", "packbits.tif", "jpeg.tif")} == {
        "lzw.tif": "tiff_lzw", "packbits.tif": "packbits", "jpeg.tif": "jpeg"}  # fmt: skip
    assert tiffs["grey16.tif"].mode == "I;16" and tiffs["pages.tif"].n_frames == 2
    assert tiffs["tiled.tif"].tag_v2.get(322) == 32
    j2k = {p.name: p.read_bytes()[:4] for p, _ in jpeg2000_files(corpus.root, d)}
    assert j2k["codestream.j2k"] == j2k["grey.j2k"] == b"\xff\x4f\xff\x51" and j2k["lossless.jp2"] == b"\0\0\0\x0c"
    webps = {p.name: Image.open(p) for p, _ in webp_files(corpus.root, d)}
    assert webps["animated.webp"].n_frames == 2 and webps["alpha_lossless.webp"].mode == "RGBA"
    assert Image.open(io.BytesIO(avif_files(corpus.root, d)[1][0].read_bytes())).mode == "RGBA"
