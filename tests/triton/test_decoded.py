"""Decoded-image inputs through the real server: model_repository's
preprocess_imagenet_decoded (preprocess_imagenet's pipeline less decode,
its input FRAME declared layout "HWC", color "RGB") against
preprocess_imagenet on the same photos, decoded here with Pillow as the
encoded model's decode does (RGB, EXIF orientation not applied); and the
refusals, each failing only its own request."""

import numpy as np
import pytest
from PIL import Image

from tests.triton.helpers import (
    IMAGENET,
    PROTOCOLS,
    GrpcBurst,
    InferenceServerException,
    client_of,
    grpcclient,
    httpclient,
    infer,
    infer_one,
)

DECODED = "preprocess_imagenet_decoded"


@pytest.fixture
def decoded_server(sluice_server):
    sluice_server.ensure_loaded(DECODED)
    return sluice_server


def rgb(path):
    """HWC uint8 RGB pixels, as Pillow decodes them (orientation as stored)."""
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def frame_input(mod, pixels, name="FRAME"):
    """Decoded images of one size as a UINT8 [B, H, W, C] tensor."""
    x = pixels[None] if pixels.ndim == 3 else pixels
    t = mod.InferInput(name, list(x.shape), "UINT8")
    t.set_data_from_numpy(np.ascontiguousarray(x))
    return t


def test_config_completed(decoded_server):
    """A config of name and backend only: Sluice's auto-complete gives the
    decoded input TYPE_UINT8 [-1, -1, 3] with ragged batching."""
    s, name = decoded_server, "preprocess_decoded_auto"
    if not s.http.is_model_ready(name):
        s.add_model(name, f'name: "{name}"\nbackend: "sluice"\n', (s.repo / DECODED / "1" / "pipeline.pbtxt").read_text())
        s.http.load_model(name)
    (inp,) = s.http.get_model_config(name)["input"]
    assert (inp["name"], inp["data_type"], [int(d) for d in inp["dims"]], inp["allow_ragged_batch"]) == (
        "FRAME", "TYPE_UINT8", [-1, -1, 3], True,
    )  # fmt: skip
    s.http.unload_model(name)


@pytest.mark.parametrize("proto", [p for p, _ in PROTOCOLS])
def test_decoded_equals_encoded(decoded_server, photos, proto):
    """Photos of different sizes (JPEG and PNG): the decoded model's output is
    the encoded model's, bit for bit; and a request of two images of one size
    answers both."""
    client, mod = client_of(decoded_server, proto)
    paths = photos.jpeg()[:6] + photos.png()[:2]
    sizes = set()
    for p in paths:
        px = rgb(p)
        sizes.add(px.shape)
        want = infer_one(decoded_server.http, httpclient, IMAGENET, p)["PIXELS"]
        got = infer(client, mod, DECODED, [frame_input(mod, px)])["PIXELS"]
        assert got.shape == (1, 3, 224, 224)
        assert got.tobytes() == want.tobytes(), f"{p.name} {px.shape}: decoded input differs from the encoded model"
    assert len(sizes) > 1, "the photos should differ in size"
    px = rgb(paths[0])
    two = np.stack([px, px[:, ::-1]])  # one size, two images
    got = infer(client, mod, DECODED, [frame_input(mod, two)])["PIXELS"]
    one = infer(client, mod, DECODED, [frame_input(mod, np.ascontiguousarray(px[:, ::-1]))])["PIXELS"]
    assert got.shape == (2, 3, 224, 224) and got[1].tobytes() == one[0].tobytes()


def test_ragged_batch_and_refusals(decoded_server, photos):
    """One burst over gRPC: requests of different heights and widths, which
    the dynamic batcher may put in one batch, and among them a tensor whose
    shape does not match its bytes and one of 4 channels for an RGB input.
    Each bad request fails alone with a message naming the input and what is
    wrong; the others get the encoded model's output."""
    paths = photos.jpeg()[:6]
    pixels = [rgb(p) for p in paths]
    want = [infer_one(decoded_server.grpc, grpcclient, IMAGENET, p)["PIXELS"] for p in paths]

    short = grpcclient.InferInput("FRAME", [1, *pixels[0].shape], "UINT8")
    # A body of the wrong size cannot be built through set_data_from_numpy,
    # which checks it: the raw bytes are set directly, as a faulty client would.
    short._raw_content = pixels[0].tobytes()[:-3]
    short._input.ClearField("contents")
    rgba = np.concatenate([pixels[1], np.full((*pixels[1].shape[:2], 1), 255, np.uint8)], axis=2)

    inputs = [[frame_input(grpcclient, px)] for px in pixels]
    bad = {2: [short], 4: [frame_input(grpcclient, rgba)]}
    order = []
    for i, x in enumerate(inputs):
        order.append(("good", i, x))
        if i in bad:
            order.append(("bad", i, bad[i]))
    results = GrpcBurst(decoded_server.grpc).run(DECODED, [x for _, _, x in order])
    for (kind, i, _), (result, error) in zip(order, results):
        if kind == "good":
            assert error is None, f"{paths[i].name}: {error}"
            assert result.as_numpy("PIXELS").tobytes() == want[i].tobytes()
            continue
        assert error is not None, f"bad request {i} was answered"
        msg = str(error)
        # Triton checks both against the config (dims [-1, -1, 3]) before the
        # backend sees the request; the backend checks them again
        # (backend/decoded_test.go), for callers that skip that.
        assert "FRAME" in msg, msg
        if i == 2:
            assert str(pixels[0].nbytes - 3) in msg, msg


SMALL = "preprocess_decoded_small"


@pytest.mark.parametrize("proto", [p for p, _ in PROTOCOLS])
def test_refusals_each_protocol(decoded_server, photos, proto):
    """Over HTTP and gRPC alike, each failing only its request: 4 channels
    for an RGB input, a tensor of the wrong rank, and (on a copy of the model
    with max_image_pixels 150000) a photo over the pixel limit, while a
    smaller one on the same model is answered."""
    client, mod = client_of(decoded_server, proto)
    px = rgb(photos.jpeg()[0])
    rgba = np.concatenate([px, np.zeros((*px.shape[:2], 1), np.uint8)], axis=2)
    with pytest.raises(InferenceServerException) as e:
        infer(client, mod, DECODED, [frame_input(mod, rgba)])
    assert "FRAME" in str(e.value), str(e.value)
    flat = np.ascontiguousarray(px.reshape(1, -1))
    t = mod.InferInput("FRAME", list(flat.shape), "UINT8")
    t.set_data_from_numpy(flat)
    with pytest.raises(InferenceServerException) as e:
        infer(client, mod, DECODED, [t])
    assert "FRAME" in str(e.value), str(e.value)
    assert infer(client, mod, DECODED, [frame_input(mod, px)])["PIXELS"].shape == (1, 3, 224, 224)

    s = decoded_server
    if not s.http.is_model_ready(SMALL):
        cfg = (s.repo / DECODED / "config.pbtxt").read_text().replace(f'name: "{DECODED}"', f'name: "{SMALL}"')
        cfg += 'parameters { key: "max_image_pixels" value { string_value: "150000" } }\n'
        s.add_model(SMALL, cfg, (s.repo / DECODED / "1" / "pipeline.pbtxt").read_text())
        s.http.load_model(SMALL)
    big = np.zeros((400, 400, 3), np.uint8)
    small = np.ascontiguousarray(px[: min(px.shape[0], 300), : min(px.shape[1], 300)])
    with pytest.raises(InferenceServerException) as e:
        infer(client, mod, SMALL, [frame_input(mod, big)])
    msg = str(e.value)
    assert "FRAME element 0: too large: FRAME: image is 400x400 (160000 pixels), over the limit of 150000 (max_image_pixels)" in msg, msg
    assert infer(client, mod, SMALL, [frame_input(mod, small)])["PIXELS"].shape == (1, 3, 224, 224)
