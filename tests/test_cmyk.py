"""decode's cmyk rule against the libraries it names, on CMYK JPEGs (made
here with Pillow, so that a fresh clone has them, and the corpus's when it
is there): "opencv" equals cv2.imread, in colour and in grey; "pillow", the
default, equals Image.open(f).convert("RGB") and convert("L"); the two
differ."""

import io

import numpy as np
import pytest
from PIL import Image

from tests.helpers import decode_pipeline, run_grouped, size_key

cv2 = pytest.importorskip("cv2")


def made_cmyk(tmp_path):
    """CMYK JPEGs of noise over gradients, in several sizes and qualities."""
    paths = []
    for i, (h, w, q) in enumerate([(37, 53, 95), (64, 48, 80), (120, 200, 90), (9, 300, 70)]):
        rng = np.random.default_rng(i)
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([x * 255 // (w - 1), y * 255 // (h - 1), (x + y) % 256, (x * y) % 256], -1)
        img = np.clip(0.6 * base + 0.4 * rng.integers(0, 256, (h, w, 4)), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img, "CMYK").save(buf, "JPEG", quality=q)
        p = tmp_path / f"made{i}_{h}x{w}.jpg"
        p.write_bytes(buf.getvalue())
        paths.append(p)
    return paths


def corpus_cmyk(corpus_root):
    found = []
    for p in sorted(corpus_root.rglob("*.jp*g")):
        try:
            with Image.open(p) as im:
                if im.mode == "CMYK":
                    found.append(p)
        except OSError:
            continue
    return found


def with_cmyk(rule):
    def make(h, w, color):
        text = decode_pipeline(h, w, color=color, orient=False)
        return text.replace('arg { name: "orient"', f'arg {{ name: "cmyk" str: "{rule}" }} arg {{ name: "orient"', 1)
    return make


def check(sluice, paths, color, label):
    assert paths and all(Image.open(p).mode == "CMYK" for p in paths)
    got = {}
    for rule in ("opencv", "pillow"):
        make = with_cmyk(rule)
        got[rule] = run_grouped(sluice, paths, lambda h, w: make(h, w, color), size_key)
    differ = 0
    for p in paths:
        if color == "BGR":
            cv = cv2.imread(str(p), cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
            pil = np.asarray(Image.open(p).convert("RGB"))[..., ::-1]
        else:
            cv = cv2.imread(str(p), cv2.IMREAD_GRAYSCALE | cv2.IMREAD_IGNORE_ORIENTATION)[..., None]
            pil = np.asarray(Image.open(p).convert("L"))[..., None]
        ocv, pl = got["opencv"][str(p)]["PIXELS"], got["pillow"][str(p)]["PIXELS"]
        assert np.array_equal(ocv, cv), (p.name, int(np.abs(ocv.astype(int) - cv).max()))
        assert np.array_equal(pl, pil), (p.name, int(np.abs(pl.astype(int) - pil).max()))
        differ += not np.array_equal(ocv, pl)
    print(f"\ncmyk rules, {label} {color}: {len(paths)} CMYK JPEGs equal cv2.imread (opencv) and Pillow "
          f"(pillow); the rules differ on {differ}")
    return differ


@pytest.mark.parametrize("color", ["BGR", "GRAY"])
def test_cmyk_made(sluice, tmp_path, color):
    assert check(sluice, made_cmyk(tmp_path), color, "made here") > 0


@pytest.mark.parametrize("color", ["BGR", "GRAY"])
def test_cmyk_corpus(sluice, corpus, color):
    check(sluice, corpus_cmyk(corpus.root), color, "corpus")
