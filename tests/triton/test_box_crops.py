"""Box crops through the real server: model_repository's preprocess_crops
(crop_boxes 224x224 bilinear with antialias, then ImageNet normalize, boxes
in relative coordinates with a count) against Pillow's
Image.open(p).convert("RGB").resize((224, 224), Image.BILINEAR, box=...)
normalized the same way, over HTTP and gRPC; the refusals of bad boxes, each
failing only its request; and ensemble_crops end to end: its boxes are the
detector network's (model_repository/detector, untrained, run here by ONNX
Runtime over Pillow's letterbox of the photo), and its scores the classifier
network's over Pillow's crops of those boxes."""

import numpy as np
import pytest
from PIL import Image

from tests.helpers import pil_rgb
from tests.triton.helpers import (
    PROTOCOLS,
    InferenceServerException,
    assert_unharmed,
    client_of,
    grpcclient,
    infer,
    onnx_session,
    read_bytes,
    uint8_input,
)

CROPS = "preprocess_crops"
ENSEMBLE = "ensemble_crops"
MAX = 8
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
SCALE = 0.00392156862745098  # the pipeline's 1/255, as written there


@pytest.fixture
def crops_server(sluice_server):
    # The ensemble first: loading it loads its composing models again even
    # when they are loaded already, and a second copy of a model made while
    # the first finalizes can crash Triton (docs/reliability.md); after it
    # the others are loaded already.
    sluice_server.ensure_loaded(ENSEMBLE, CROPS, "detector", "classifier_crops")
    return sluice_server


def clipped(im, row):
    """A relative box in the image's pixels, clipped to it (Sluice's rule);
    None when the box is unused."""
    if np.isnan(row).any():
        return None
    w, h = im.size
    x1, y1, x2, y2 = (float(v) * s for v, s in zip(row, (w, h, w, h)))
    return (max(x1, 0), max(y1, 0), min(x2, w), min(y2, h))


def pillow_crop(im, row):
    """A relative box's crop as Pillow makes it, normalized as the pipeline
    does (in float64, then float32), CHW; None when the box is unused."""
    box = clipped(im, row)
    return None if box is None else crop_of(im, box)


def crop_of(im, box):
    """The crop of a box in pixels, as pillow_crop makes it."""
    px = np.asarray(im.resize((224, 224), Image.BILINEAR, box=tuple(float(v) for v in box)), dtype=np.float64)
    return ((px * SCALE - MEAN) / STD).astype(np.float32).transpose(2, 0, 1)


def letterboxed(path, size=640):
    """preprocess_letterbox's PIXELS and OFFSET as Pillow makes them (the
    reference of tests/test_accuracy.py): the photo upright (EXIF applied),
    resized keeping its aspect ratio with ultralytics' rounding, centred on
    grey 114, divided by 255 (rounded once to float32, as Sluice's
    normalize does), CHW."""
    rgb = pil_rgb(path)
    h, w = rgb.shape[:2]
    r = min(size / h, size / w)
    nw, nh = round(w * r), round(h * r)
    img = Image.fromarray(rgb)
    if (nw, nh) != (w, h):
        img = img.resize((nw, nh), Image.BILINEAR)
    top, left = round((size - nh) / 2 - 0.1), round((size - nw) / 2 - 0.1)
    canvas = np.full((size, size, 3), 114, np.uint8)
    canvas[top : top + nh, left : left + nw] = np.asarray(img)
    return (canvas.astype(np.float32) / np.float32(255)).transpose(2, 0, 1), np.array([left, top], np.float32)


def sampled_boxes(im, boxes, count):
    """The CROP_BOXES a request's boxes and count must give: each used box
    clipped, in pixels, as float32; NaN rows for the others."""
    want = np.full((MAX, 4), np.nan, dtype=np.float32)
    for k in range(min(count, MAX)):
        box = clipped(im, boxes[k])
        if box is not None:
            want[k] = box
    return want


def check_crops(im, boxes, count, crops, num, where, crop_boxes=None):
    """Crops, their count and (when given) their boxes against Pillow's;
    returns the largest difference of the crops."""
    used = [k for k in range(MAX) if k < count and not np.isnan(boxes[k]).any()]
    assert int(num) == len(used), f"{where}: NUM_CROPS {num}, want {len(used)}"
    if crop_boxes is not None:
        np.testing.assert_array_equal(crop_boxes, sampled_boxes(im, boxes, count), err_msg=f"{where}: CROP_BOXES")
    worst = 0.0
    for k in range(MAX):
        if k not in used:
            assert not crops[k].any(), f"{where}: row {k} is unused but not zeros"
            continue
        want = pillow_crop(im, boxes[k])
        worst = max(worst, float(np.abs(crops[k] - want).max()))
    return worst


def random_boxes(rng, n_used):
    """Relative boxes, some reaching past an edge (clipped), NaN past n_used."""
    b = np.full((MAX, 4), np.nan, np.float32)
    for k in range(n_used):
        x1, y1 = rng.uniform(-0.2, 0.8, 2)
        b[k] = (x1, y1, max(x1, 0) + rng.uniform(0.02, 0.7), max(y1, 0) + rng.uniform(0.02, 0.7))
    return b


def box_inputs(mod, boxes, counts):
    b = mod.InferInput("BOXES", list(boxes.shape), "FP32")
    b.set_data_from_numpy(np.ascontiguousarray(boxes, dtype=np.float32))
    c = mod.InferInput("COUNT", [len(counts), 1], "INT32")
    c.set_data_from_numpy(np.array(counts, np.int32).reshape(-1, 1))
    return [b, c]


def rgb(path):
    with Image.open(path) as im:
        return im.convert("RGB")


def photo_set(photos):
    # 8-bit photos: Pillow's convert("RGB") of a 16-bit PNG clips where
    # Sluice's decode scales, a decode difference the crops would only repeat.
    paths = photos.jpeg()[:10] + photos.png()[:4]
    return [p for p in paths if Image.open(p).mode not in ("I", "I;16", "I;16B")]


def test_config_completed(crops_server):
    """A config of name and backend only: Sluice's auto-complete gives BOXES
    TYPE_FP32 [8, 4], COUNT TYPE_INT32 [1] and the outputs their dims."""
    s, name = crops_server, "preprocess_crops_auto"
    if not s.http.is_model_ready(name):
        s.add_model(name, f'name: "{name}"\nbackend: "sluice"\n', (s.repo / CROPS / "1" / "pipeline.pbtxt").read_text())
        s.http.load_model(name)
    cfg = s.http.get_model_config(name)
    ins = {i["name"]: (i["data_type"], [int(d) for d in i["dims"]]) for i in cfg["input"]}
    outs = {o["name"]: (o["data_type"], [int(d) for d in o["dims"]]) for o in cfg["output"]}
    assert ins == {"IMAGE": ("TYPE_UINT8", [-1]), "BOXES": ("TYPE_FP32", [8, 4]), "COUNT": ("TYPE_INT32", [1])}, ins
    assert outs == {
        "CROPS": ("TYPE_FP32", [8, 3, 224, 224]),
        "NUM_CROPS": ("TYPE_INT32", [1]),
        "CROP_BOXES": ("TYPE_FP32", [8, 4]),
    }, outs
    s.http.unload_model(name)


@pytest.mark.parametrize("proto", [p for p, _ in PROTOCOLS])
def test_crops_equal_pillow(crops_server, photos, proto):
    """Each photo with its own random boxes (NaN rows, a count below the used
    rows, boxes past the edges): every used crop equals Pillow's crop +
    resize of the clipped box, normalized the same way, bit for bit; unused
    rows are zeros; NUM_CROPS counts the used ones. Then two photos in one
    request (padded UINT8 [2, N]) with boxes [2, 8, 4]."""
    client, mod = client_of(crops_server, proto)
    rng = np.random.default_rng(26)
    paths = photo_set(photos)
    worst, n = 0.0, 0
    for i, p in enumerate(paths):
        boxes = random_boxes(rng, 5)
        count = 4 if i % 2 else MAX  # a count cuts the fifth box off
        out = infer(client, mod, CROPS, [uint8_input(mod, read_bytes(p)), *box_inputs(mod, boxes[None], [count])],
                    outputs=("CROPS", "NUM_CROPS", "CROP_BOXES"))  # fmt: skip
        assert out["CROPS"].shape == (1, MAX, 3, 224, 224) and out["NUM_CROPS"].shape == (1, 1)
        worst = max(worst, check_crops(rgb(p), boxes, count, out["CROPS"][0], out["NUM_CROPS"][0, 0], p.name,
                                       out["CROP_BOXES"][0]))  # fmt: skip
        n += 1
    assert worst == 0, f"crops differ from Pillow's by up to {worst}"

    a, b = read_bytes(paths[0]), read_bytes(paths[1])
    both = np.zeros((2, max(len(a), len(b))), np.uint8)
    both[0, : len(a)], both[1, : len(b)] = a, b
    boxes = np.stack([random_boxes(rng, 3), random_boxes(rng, 6)])
    out = infer(client, mod, CROPS, [uint8_input(mod, both), *box_inputs(mod, boxes, [MAX, 2])], outputs=("CROPS", "NUM_CROPS"))
    for k, (p, count) in enumerate(zip(paths[:2], [MAX, 2])):
        assert check_crops(rgb(p), boxes[k], count, out["CROPS"][k], out["NUM_CROPS"][k, 0], f"{p.name} in a pair") == 0
    print(f"\n{proto}: {n} photos, crops vs Pillow: max |diff| {worst}")


@pytest.mark.parametrize("proto", [p for p, _ in PROTOCOLS])
def test_bad_boxes_refused(crops_server, photos, normal, proto):
    """BOXES of another shape, BOXES whose bytes do not match their shape,
    a count past max and a box empty after clipping each fail their own
    request, naming the problem; the server is unharmed."""
    client, mod = client_of(crops_server, proto)
    img = uint8_input(mod, read_bytes(photos.jpeg()[0]))
    good = np.array([[0.1, 0.1, 0.5, 0.5]] + [[np.nan] * 4] * (MAX - 1), np.float32)

    wrong = mod.InferInput("BOXES", [1, 5, 4], "FP32")
    wrong.set_data_from_numpy(np.zeros((1, 5, 4), np.float32))
    with pytest.raises(InferenceServerException) as e:
        infer(client, mod, CROPS, [img, wrong, box_inputs(mod, good[None], [1])[1]], outputs=("NUM_CROPS",))
    msg = str(e.value)
    assert "BOXES" in msg and "[1,5,4]" in msg.replace(" ", ""), msg

    if mod is grpcclient:
        # A body of the wrong size cannot be built through set_data_from_numpy;
        # set the raw bytes directly, as a faulty client would.
        short = grpcclient.InferInput("BOXES", [1, MAX, 4], "FP32")
        short._raw_content = good.tobytes()[:-4]
        short._input.ClearField("contents")
        with pytest.raises(InferenceServerException) as e:
            infer(client, mod, CROPS, [img, short, box_inputs(mod, good[None], [1])[1]], outputs=("NUM_CROPS",))
        assert "BOXES" in str(e.value) and str(good.nbytes - 4) in str(e.value), str(e.value)

    with pytest.raises(InferenceServerException) as e:
        infer(client, mod, CROPS, [img, *box_inputs(mod, good[None], [9])], outputs=("NUM_CROPS",))
    assert "COUNT" in str(e.value) and "count 9 is outside 0..8" in str(e.value), str(e.value)

    empty = good.copy()
    empty[1] = (1.2, 0.1, 1.5, 0.4)  # wholly right of the image
    with pytest.raises(InferenceServerException) as e:
        infer(client, mod, CROPS, [img, *box_inputs(mod, empty[None], [2])], outputs=("NUM_CROPS",))
    assert "box 1 (x1, y1, x2, y2) = (1.2, 0.1, 1.5, 0.4) relative is empty" in str(e.value), str(e.value)

    out = infer(client, mod, CROPS, [img, *box_inputs(mod, good[None], [1])], outputs=("NUM_CROPS",))
    assert int(out["NUM_CROPS"][0, 0]) == 1
    assert_unharmed(crops_server, normal)


@pytest.mark.parametrize("proto", [p for p, _ in PROTOCOLS])
def test_ensemble_crops(crops_server, photos, proto):
    """IMAGE → preprocess_letterbox → detector → preprocess_crops →
    classifier_crops: NUM_CROPS is the count of the detector network run
    here (ONNX Runtime on its model.onnx) over Pillow's letterbox of the
    photo, BOXES those boxes as Sluice samples them (clipped, in pixels),
    and SCORES the classifier network's over Pillow's crops of BOXES, within
    float32 rounding and with the same top 5; unused rows are NaN boxes and
    zero scores."""
    client, mod = client_of(crops_server, proto)
    detector = onnx_session(crops_server.repo, "detector")
    classifier = onnx_session(crops_server.repo, "classifier")
    counts, worst_box, worst_score = [], 0.0, 0.0
    for p in photo_set(photos)[:6]:
        out = infer(client, mod, ENSEMBLE, [uint8_input(mod, read_bytes(p))], outputs=("SCORES", "BOXES", "NUM_CROPS"))
        pixels, offset = letterboxed(p)
        boxes, count = detector.run(["BOXES", "COUNT"], {"PIXELS": pixels[None], "OFFSET": offset[None]})
        boxes, count = boxes[0], int(count[0, 0])
        n = int(out["NUM_CROPS"][0, 0])
        assert n == count, f"{p.name}: {n} crops, the detector network finds {count} boxes"
        counts.append(n)
        im = rgb(p)
        want = sampled_boxes(im, boxes, count)
        got = out["BOXES"][0]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{p.name}: unused rows")
        # The same pixels and network: equal, up to the float32 rounding of
        # another batch size, should the served detector run one.
        np.testing.assert_allclose(got[:n], want[:n], rtol=0, atol=1e-3, err_msg=f"{p.name}: BOXES")
        assert not out["SCORES"][0, n:].any(), f"{p.name}: scores of unused crops"
        if n == 0:
            continue
        worst_box = max(worst_box, float(np.abs(got[:n] - want[:n]).max()))
        scores = classifier.run(["SCORES"], {"PIXELS": np.stack([crop_of(im, got[k]) for k in range(n)])})[0]
        for k in range(n):
            where = f"{p.name} crop {k}"
            np.testing.assert_allclose(out["SCORES"][0, k], scores[k], rtol=1e-4, atol=1e-7, err_msg=where)
            served_top, want_top = np.argsort(-out["SCORES"][0, k])[:5], np.argsort(-scores[k])[:5]
            assert list(served_top) == list(want_top), f"{where}: top 5 {served_top}, want {want_top}"
        worst_score = max(worst_score, float(np.abs(out["SCORES"][0, :n] - scores).max()))
    assert sum(counts) > 0, f"the detector found nothing in any photo: {counts}"
    print(f"\n{proto}: crops per photo {counts}; max |diff| boxes {worst_box:.2e} px, scores {worst_score:.2e}")
