"""crop_boxes against Pillow's own box resize, through `sluice run --boxes`:
Image.resize((w, h), filter, box=(x1, y1, x2, y2)) of each box clipped to
the image, for every Pillow filter, in pixel coordinates of the upright
(EXIF-oriented) image, and with letterbox. (tests/triton/test_box_crops.py
runs the served model over HTTP and gRPC.)"""

import json

import numpy as np
import pytest
from PIL import Image

from tests.helpers import pil_rgb

PIL_FILTER = {"nearest": Image.NEAREST, "linear": Image.BILINEAR, "cubic": Image.BICUBIC, "area": Image.BOX}
MAX = 6


def crop_pipeline(interp, size, letterbox=False):
    h, w = size
    return f"""
    version: 1
    input {{ name: "IMAGE" }}
    input {{ name: "BOXES" boxes {{ max: {MAX} coords: "pixel" }} }}
    node {{ op: "decode" input: "IMAGE" arg {{ name: "orient" bool: true }} }}
    node {{ op: "crop_boxes" input: ["decode", "BOXES"] arg {{ name: "size" ints {{ v: [{h}, {w}] }} }}
            arg {{ name: "interp" str: "{interp}" }} arg {{ name: "letterbox" bool: {str(letterbox).lower()} }}
            arg {{ name: "fill" floats {{ v: [114] }} }} }}
    output {{ name: "CROPS" }}
    output {{ name: "N" source: "crop_boxes:count" }}
    """


def sample(corpus):
    return sorted((corpus / "jpeg/derived").glob("*.jpg"))[::5] + sorted((corpus / "jpeg/exif").glob("*orient*.jpg"))[:8]


def boxes_for(rng, w, h):
    """Float32 pixel boxes, some past an edge; one row fewer than MAX, which
    `sluice run` pads with a NaN row (JSON has no NaN)."""
    rows = []
    for _ in range(MAX - 1):
        x1, y1 = rng.uniform(-0.2 * w, 0.8 * w), rng.uniform(-0.2 * h, 0.8 * h)
        rows.append([x1, y1, max(x1, 0) + rng.uniform(0.5, 0.9 * w), max(y1, 0) + rng.uniform(0.5, 0.9 * h)])
    return np.array(rows, np.float32).tolist()


def clipped(row, w, h):
    x1, y1, x2, y2 = row
    return (max(x1, 0), max(y1, 0), min(x2, w), min(y2, h))


def letterboxed(im, box, size, filt):
    """Pillow's crop of box fitted into size, centred on fill 114, with
    crop_boxes' (letterbox's) rounding."""
    oh, ow = size
    bw, bh = box[2] - box[0], box[3] - box[1]
    r = min(oh / bh, ow / bw)
    nw, nh = min(max(round(bw * r), 1), ow), min(max(round(bh * r), 1), oh)
    top, left = round((oh - nh) / 2 - 0.1), round((ow - nw) / 2 - 0.1)
    canvas = np.full((oh, ow, 3), 114, np.uint8)
    canvas[top : top + nh, left : left + nw] = np.asarray(im.resize((nw, nh), filt, box=box))
    return canvas


@pytest.mark.parametrize("interp", list(PIL_FILTER))
@pytest.mark.parametrize("letterbox", [False, True])
def test_crop_boxes_vs_pillow(sluice, corpus, tmp_path, interp, letterbox):
    """Bit-exact: every used crop is Pillow's, the NaN row zeros, the count
    the boxes used."""
    rng = np.random.default_rng(7)
    paths = sample(corpus)
    ims = {p: Image.fromarray(pil_rgb(p)) for p in paths}
    boxes = {p.name: boxes_for(rng, *ims[p].size) for p in paths}
    bfile = tmp_path / "boxes.json"
    bfile.write_text(json.dumps(boxes))
    for size in [(224, 224), (64, 150)]:
        res, _ = sluice.run(crop_pipeline(interp, size, letterbox), paths, extra=("--boxes", str(bfile)))
        for p in paths:
            im, out = ims[p], res[str(p)]
            crops = out["CROPS"]
            assert crops.shape == (MAX, *size, 3) and int(out["N"][0]) == MAX - 1, (p.name, crops.shape, out["N"])
            for k, row in enumerate(boxes[p.name]):
                box = clipped(row, *im.size)
                if letterbox:
                    want = letterboxed(im, box, size, PIL_FILTER[interp])
                else:
                    want = np.asarray(im.resize((size[1], size[0]), PIL_FILTER[interp], box=box))
                np.testing.assert_array_equal(crops[k], want, err_msg=f"{interp} {p.name} box {k} {box} {size}")
            assert not crops[-1].any()
