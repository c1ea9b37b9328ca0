"""resize's interp torch_linear and torch_cubic against torch itself:
torchvision.transforms.v2.functional.resize of a uint8 CHW tensor (torch's
uint8 kernels, BILINEAR and BICUBIC, antialias True and False), byte for byte.
The reference resizes the image as Pillow decodes it (sluice's decode equals
Pillow's); `sluice run` outputs the resize's uint8 image. Skips without torch,
which `make export-test-torch` installs.

Two sets: every photo of the corpus (helpers.CORPUS_DIRS, less 16-bit grey
PNGs) in RGB, and the grey ones (Pillow's mode L) in grey, resized to fixed
sizes that shrink, enlarge and change the aspect (grey from a colour photo is
a question of decoding, which other tests judge); and generated images of edge
sizes (one row or column, an exact halving and doubling, odd and very large
factors, a tiny image enlarged a hundredfold), random and black-and-white
(every filter's overshoot clipped), in RGB and grey. torch refuses an RGB
image resized to 1x1 on both axes (an internal assertion of its AVX2 kernel),
so the edge set has none."""

import subprocess

import numpy as np
import pytest
from PIL import Image

from helpers import CORPUS_DIRS, corpus_photos, not_16bit_grey, sluice_bin

torch = pytest.importorskip("torch")
F = pytest.importorskip("torchvision.transforms.v2.functional")
from torchvision.transforms import InterpolationMode  # noqa: E402

MODES = {"torch_linear": InterpolationMode.BILINEAR, "torch_cubic": InterpolationMode.BICUBIC}
CASES = [(interp, aa) for interp in MODES for aa in (True, False)]


def _pipeline(color, size, interp, aa):
    return f"""version: 1
input {{ name: "IMAGE" }}
node {{ op: "decode" arg {{ name: "color" str: "{color}" }} arg {{ name: "orient" bool: false }} }}
node {{ op: "resize" arg {{ name: "size" ints {{ v: [{size[0]}, {size[1]}] }} }} arg {{ name: "interp" str: "{interp}" }}
  arg {{ name: "antialias" bool: {str(aa).lower()} }} }}
output {{ name: "OUT" }}
"""


def _sluice(binary, text, images, tmp_path):
    """`sluice run` of text over images (distinct stems): {path: HWC uint8}."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    pfile = tmp_path / "pipeline.pbtxt"
    pfile.write_text(text)
    out = tmp_path / "out"
    proc = subprocess.run([binary, "run", "--pipeline", str(pfile), "--out", str(out), *map(str, images)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return {p: np.load(out / f"{p.stem}.OUT.npy") for p in images}


def _torch(hwc, size, interp, aa):
    """torchvision v2's resize of the CHW uint8 tensor of hwc, as HWC."""
    t = torch.from_numpy(hwc.transpose(2, 0, 1).copy())
    r = F.resize(t, list(size), interpolation=MODES[interp], antialias=aa)
    assert r.dtype == torch.uint8
    return r.permute(1, 2, 0).numpy()


def _compare(got, want, label):
    """Asserts equal bytes; returns the differing count for the message."""
    assert got.shape == want.shape, (label, got.shape, want.shape)
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() == 0, f"{label}: {int((diff > 0).sum())} of {diff.size} bytes differ, up to {diff.max()}"


_DECODED = {}


def _decoded(color):
    """{photo: HWC uint8 as Pillow decodes it} for the corpus in color, once."""
    if color not in _DECODED:
        out = {}
        for p in (p for d in CORPUS_DIRS for p in not_16bit_grey(corpus_photos(d))):
            with Image.open(p) as im:
                if color == "RGB":
                    out[p] = np.asarray(im.convert("RGB"))
                elif im.mode == "L":
                    out[p] = np.asarray(im)[:, :, None]
        _DECODED[color] = out
    return _DECODED[color]


@pytest.mark.parametrize("interp,aa", CASES)
@pytest.mark.parametrize("color", ["RGB", "GRAY"])
def test_corpus(color, interp, aa, tmp_path):
    b = sluice_bin()
    decoded = _decoded(color)
    photos = list(decoded)
    assert photos
    n = 0
    for size in [(224, 224), (333, 250), (900, 1200), (37, 1)]:
        # One run per folder: outputs are named by file stem.
        for i, d in enumerate(sorted({p.parent for p in photos})):
            group = [p for p in photos if p.parent == d]
            got = _sluice(b, _pipeline(color, size, interp, aa), group, tmp_path / f"{size[0]}x{size[1]}-{i}")
            for p in group:
                _compare(got[p], _torch(decoded[p], size, interp, aa), f"{p.name} {color} to {size}")
                n += 1
    print(f"{interp} antialias={aa} {color}: {n} corpus resizes, all equal to torch's")


# (input h, w) → (output h, w)
EDGE = [
    ((1, 200), (1, 37)), ((200, 1), (37, 1)), ((1, 37), (1, 200)), ((37, 1), (200, 1)), ((1, 50), (3, 9)),
    ((50, 1), (9, 3)), ((1, 1), (5, 7)), ((2, 2), (3, 3)), ((3, 2), (300, 200)), ((200, 100), (100, 50)),
    ((100, 200), (200, 400)), ((300, 300), (100, 100)), ((350, 351), (50, 27)), ((999, 777), (111, 111)),
    ((4000, 30), (10, 30)), ((30, 4000), (30, 10)), ((2000, 1500), (3, 2)), ((640, 480), (224, 224)),
    ((480, 640), (256, 341)), ((1001, 2), (2, 1)), ((5, 5), (5, 3)), ((5, 5), (3, 5)), ((17, 4096), (17, 3)),
    ((64, 64), (64, 64)),
]


@pytest.mark.parametrize("interp,aa", CASES)
def test_edge_sizes(interp, aa, tmp_path):
    b = sluice_bin()
    rng = np.random.default_rng(50)
    n = 0
    for k, ((h, w), size) in enumerate(EDGE):
        for color, c in (("RGB", 3), ("GRAY", 1)):
            imgs = {}
            for kind in ("random", "bw"):
                a = rng.integers(0, 256, (h, w, c), dtype=np.uint8)
                if kind == "bw":
                    a = np.where(a < 128, 0, 255).astype(np.uint8)
                p = tmp_path / f"e{k}-{color}-{kind}.png"
                Image.fromarray(a if c == 3 else a[:, :, 0]).save(p)
                imgs[p] = a
            got = _sluice(b, _pipeline(color, size, interp, aa), list(imgs), tmp_path / f"run{k}{color}")
            for p, a in imgs.items():
                _compare(got[p], _torch(a, size, interp, aa), f"{p.name} {h}x{w} to {size}")
                n += 1
    print(f"{interp} antialias={aa}: {n} edge-size resizes, all equal to torch's")
