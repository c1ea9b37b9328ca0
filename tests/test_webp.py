"""WebP decoding against Pillow, on WebPs Pillow writes here from corpus
photos and from a generated image. Both decode with libwebp, but not the
same one: Sluice links Debian 12's 1.2.4, Pillow's wheel bundles its own
(1.6.0 with Pillow 13). Lossless must be bit-exact. Lossy could differ
between versions (its YUV to RGB conversion and upsampling are the
library's), but measured on these files it is bit-exact too, alpha and
Pillow's luma included, and the tests hold it to that."""

import pathlib

import numpy as np
import pytest
from PIL import Image

from tests.helpers import decode_pipeline

PHOTOS = (
    "jpeg/derived/lom-bridge_full_512x384_b420q75.jpg",
    "jpeg/derived/lom-dragonfly_crop_600x400_b444q95.jpg",
    "jpeg/derived/lom-friends_full_333x500_p420q85.jpg",
)


def with_alpha(rgb):
    """RGBA: the photo with an alpha ramp, no pixel fully transparent (where
    a lossless encoder may rewrite the colour)."""
    h, w = rgb.shape[:2]
    y, x = np.mgrid[0:h, 0:w]
    a = (1 + (x * 7 + y * 3) % 255).astype(np.uint8)
    return np.dstack([rgb, a])


def noisy(h=61, w=97):
    rng = np.random.default_rng(11)
    y, x = np.mgrid[0:h, 0:w]
    base = np.dstack([x * 2, y * 3, (x + y)]).astype(np.int32)
    return np.clip(base + rng.integers(0, 60, (h, w, 3)), 0, 255).astype(np.uint8)


def write_webps(tmp_path, name, rgb):
    """Lossy and lossless WebPs of rgb, with and without alpha."""
    out = {}
    for alpha in (False, True):
        pix = with_alpha(rgb) if alpha else rgb
        im = Image.fromarray(pix, "RGBA" if alpha else "RGB")
        for kind, kw in (("lossless", {"lossless": True, "exact": True}), ("lossy", {"quality": 80})):
            p = tmp_path / f"{name}_{kind}_{'rgba' if alpha else 'rgb'}.webp"
            im.save(p, "WEBP", **kw)
            out[p] = pix
    return out


def check_vs_pillow(sluice, files, h, w):
    paths = list(files)
    for color, mode in (("RGB", "RGB"), ("RGBA", "RGBA"), ("BGR", "RGB"), ("GRAY", "L")):
        res, _ = sluice.run(decode_pipeline(h, w, color=color), paths)
        for p in paths:
            with Image.open(p) as im:
                want = np.asarray(im.convert(mode))
            if mode == "L":
                want = want[:, :, None]
            if color == "BGR":
                want = want[:, :, ::-1]
            got = res[str(p)]["PIXELS"]
            np.testing.assert_array_equal(got, want, err_msg=f"{p.name} as {color}")


def test_webp_generated(sluice, tmp_path):
    """No corpus needed: a generated image, every kind and colour."""
    rgb = noisy()
    files = write_webps(tmp_path, "noisy", rgb)
    check_vs_pillow(sluice, files, *rgb.shape[:2])
    # Lossless is the source itself.
    res, _ = sluice.run(decode_pipeline(*rgb.shape[:2], color="RGBA"), list(files))
    for p, pix in files.items():
        if "lossless" in p.name:
            want = pix if pix.shape[2] == 4 else np.dstack([pix, np.full(pix.shape[:2], 255, np.uint8)])
            np.testing.assert_array_equal(res[str(p)]["PIXELS"], want, err_msg=p.name)


@pytest.mark.parametrize("photo", PHOTOS)
def test_webp_corpus_vs_pillow(sluice, corpus, tmp_path, photo):
    rgb = np.asarray(Image.open(corpus / photo).convert("RGB"))
    files = write_webps(tmp_path, pathlib.PurePosixPath(photo).stem, rgb)
    check_vs_pillow(sluice, files, *rgb.shape[:2])
