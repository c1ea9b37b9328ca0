"""Hostile requests at the protocol's edges, against a real tritonserver:
outputs a request does not ask for, a system shared-memory region that
shrinks after registration, an ensemble asked for part of its outputs, and
Triton's own crashes reachable through a Sluice model (docs/reliability.md,
"Protocol edges"). Every file is made here at test time; after each case the
server is live and answers a normal request byte for byte (assert_unharmed)."""

import contextlib
import itertools
import os
import time
import uuid

import numpy as np
import pytest
import tritonclient.utils.shared_memory as shm

from tests.triton.helpers import (
    IMAGENET,
    PROTOCOLS,
    InferenceServerException,
    assert_unharmed,
    client_of,
    encoded,
    grpcclient,
    post_infer,
    scrape,
    synthetic_jpeg,
    synthetic_rgb,
    wait_unloaded,
)
from tests.triton.hostile_files import png_zeros

LETTERBOX = "preprocess_letterbox"
CROPS = "preprocess_crops"
DECODED = "preprocess_imagenet_decoded"
MARK = "hostile_mark"  # preprocess_imagenet with image_errors "mark"
MARK_CONFIG = """
name: "hostile_mark"
backend: "sluice"
max_batch_size: 8
input [ { name: "IMAGE", data_type: TYPE_STRING, dims: [ 1 ] } ]
parameters { key: "image_errors" value { string_value: "mark" } }
instance_group [ { kind: KIND_CPU, count: 1 } ]
"""
# Every Sluice model of model_repository/ plus the mark model: each output
# of each is asked for alone.
MODELS = [IMAGENET, "preprocess_imagenet_bytes", LETTERBOX, CROPS, DECODED, MARK]
RSS_SLACK_KB = 200 * 1024


@pytest.fixture(scope="module")
def srv(sluice_models):
    s = sluice_models
    s.add_model(MARK, MARK_CONFIG)
    s.ensure_loaded(*MODELS)
    yield s
    for m in (MARK, CROPS, DECODED):
        s.http.unload_model(m)
        wait_unloaded(s, m)


def model_inputs(s, mod, model, data, n=1):
    """A valid request's inputs for model, from its metadata: n copies of
    the encoded image data (UINT8 [n, N] or BYTES [n, 1]), relative boxes
    and their count, or a decoded frame."""
    meta = s.http.get_model_metadata(model)
    out = []
    for m in meta["inputs"]:
        name, dt = m["name"], m["datatype"]
        if name == "IMAGE" and dt == "BYTES":
            x = np.array([[data.tobytes()]] * n, dtype=np.object_)
        elif name == "IMAGE":
            x = np.tile(data, (n, 1))
        elif name == "BOXES":
            rows = np.full((8, 4), np.nan, dtype=np.float32)
            rows[:2] = [[0.1, 0.1, 0.6, 0.7], [0.5, 0.2, 1.0, 0.9]]
            x = np.tile(rows, (n, 1, 1))
        elif name == "COUNT":
            x = np.full((n, 1), 2, dtype=np.int32)
        elif name == "FRAME":
            x = np.tile(synthetic_rgb(np.random.default_rng(3), 90, 120), (n, 1, 1, 1))
        else:
            raise AssertionError(f"{model}: no test data for input {name}")
        t = mod.InferInput(name, list(x.shape), dt)
        t.set_data_from_numpy(x)
        out.append(t)
    return out


def output_names(result, mod):
    """The names of the outputs a response carries."""
    if mod is grpcclient:
        return sorted(o.name for o in result.get_response().outputs)
    return sorted(o["name"] for o in result.get_response()["outputs"])


@pytest.mark.parametrize("proto", [p for p, _ in PROTOCOLS])
@pytest.mark.parametrize("model", MODELS)
def test_only_requested_outputs(srv, normal, proto, model):
    """Each output asked for alone comes back alone, with the values it has
    when every output is asked for; a request naming none gets them all."""
    client, mod = client_of(srv, proto)
    data = synthetic_jpeg()
    inputs = model_inputs(srv, mod, model, data, n=2)
    everything = client.infer(model, inputs)
    names = sorted(o["name"] for o in srv.http.get_model_metadata(model)["outputs"])
    assert output_names(everything, mod) == names
    for name in names:
        r = client.infer(model, inputs, outputs=[mod.InferRequestedOutput(name)])
        assert output_names(r, mod) == [name], f"{model}: asked for {name} alone"
        got, want = r.as_numpy(name), everything.as_numpy(name)
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), f"{model} {name}"
    assert_unharmed(srv, normal)


def test_unrequested_outputs_cost_nothing(srv, normal):
    """The letterbox model asked for SCALE alone over HTTP, as JSON, for 64
    tiny PNGs (a 6 kB request): the body holds 64 floats, not the 64 canvases
    of 640x640x3 floats as JSON text (1.5 GB), and the server's memory stays
    where it was."""
    png = encoded(synthetic_rgb(np.random.default_rng(4), 4, 4), "PNG")
    batch = np.tile(png, (64, 1))
    header = {
        "inputs": [
            {"name": "IMAGE", "shape": list(batch.shape), "datatype": "UINT8", "parameters": {"binary_data_size": batch.size}}
        ],
        "outputs": [{"name": "SCALE"}],
    }
    before = srv.rss_kb()
    status, body = post_infer(srv, LETTERBOX, header, batch.tobytes())
    assert status == 200, body
    assert [o["name"] for o in body["outputs"]] == ["SCALE"]
    assert len(body["outputs"][0]["data"]) == 64
    grown = srv.rss_kb() - before
    assert grown < RSS_SLACK_KB, f"server RSS grew {grown / 1024:.0f} MB answering 64 SCALEs"
    assert_unharmed(srv, normal)


def test_ensemble_output_subsets(srv, normal):
    """ensemble_crops answers every subset of its outputs, each output the
    same as in a request for all of them."""
    ens = "ensemble_crops"
    srv.ensure_loaded(ens)
    client, mod = client_of(srv, "grpc")
    x = model_inputs(srv, mod, ens, synthetic_jpeg())
    names = sorted(o["name"] for o in srv.http.get_model_metadata(ens)["outputs"])
    everything = client.infer(ens, x)
    failed = []
    for k in range(1, len(names) + 1):
        for subset in itertools.combinations(names, k):
            try:
                r = client.infer(ens, x, outputs=[mod.InferRequestedOutput(n) for n in subset])
            except InferenceServerException as e:
                failed.append(f"{subset}: {e}")
                continue
            assert output_names(r, mod) == sorted(subset)
            for n in subset:
                assert r.as_numpy(n).tobytes() == everything.as_numpy(n).tobytes(), f"{subset}: {n}"
    assert not failed, "\n".join(failed)
    assert_unharmed(srv, normal)


def unregister(client, name, timeout=30):
    """Unregisters a region, waiting while Triton still holds the last
    request that used it (released just after its response is sent)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return client.unregister_system_shared_memory(name)
        except InferenceServerException as e:
            if "in use" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextlib.contextmanager
def registered_region(client, nbytes):
    """A system shared-memory region of nbytes registered with the server:
    (its name, its handle, the path of its file); unregistered and
    destroyed after."""
    key = f"/sluice-test-{uuid.uuid4().hex[:12]}"
    name = key[1:]
    region = shm.create_shared_memory_region(name, key, nbytes)
    try:
        client.register_system_shared_memory(name, key, nbytes)
        try:
            yield name, region, "/dev/shm" + key
        finally:
            unregister(client, name)
    finally:
        shm.destroy_shared_memory_region(region)


def assert_gone(e, tensor):
    msg = str(e.value)
    assert tensor in msg and "shared-memory region" in msg and "truncated" in msg, msg


@pytest.mark.parametrize("proto", [p for p, _ in PROTOCOLS])
def test_shared_memory_truncated_after_registration(srv, normal, proto):
    """A client registers a system shared-memory region holding a JPEG,
    then truncates its file: reading the input would raise SIGBUS. The
    request fails naming the input and the shrunk region; the server lives.
    A region left intact is served from shared memory as from the body."""
    client, mod = client_of(srv, proto)
    data = synthetic_jpeg(640, 480)
    batch = data[None]
    want = client.infer(IMAGENET, model_inputs(srv, mod, IMAGENET, data)).as_numpy("PIXELS")
    for truncate in (False, True):
        with registered_region(client, batch.nbytes) as (name, region, path):
            shm.set_shared_memory_region(region, [batch])
            x = mod.InferInput("IMAGE", list(batch.shape), "UINT8")
            x.set_shared_memory(name, batch.nbytes)
            if truncate:
                os.truncate(path, 0)
                with pytest.raises(InferenceServerException) as e:
                    client.infer(IMAGENET, [x])
                assert_gone(e, "input IMAGE")
            else:
                assert client.infer(IMAGENET, [x]).as_numpy("PIXELS").tobytes() == want.tobytes()
        assert_unharmed(srv, normal)


@pytest.mark.parametrize("proto", [p for p, _ in PROTOCOLS])
def test_output_shared_memory_truncated_after_registration(srv, normal, proto):
    """The same for an output: PIXELS asked for in a system shared-memory
    region that the client truncates before the answer is written. The
    request fails naming the output; the server lives. Intact, the region
    receives the very bytes of a plain answer."""
    client, mod = client_of(srv, proto)
    data = synthetic_jpeg(640, 480)
    want = client.infer(IMAGENET, model_inputs(srv, mod, IMAGENET, data)).as_numpy("PIXELS")
    for truncate in (False, True):
        with registered_region(client, want.nbytes) as (name, region, path):
            out = mod.InferRequestedOutput("PIXELS")
            out.set_shared_memory(name, want.nbytes)
            if truncate:
                os.truncate(path, 0)
                with pytest.raises(InferenceServerException) as e:
                    client.infer(IMAGENET, model_inputs(srv, mod, IMAGENET, data), outputs=[out])
                assert_gone(e, "output PIXELS")
            else:
                client.infer(IMAGENET, model_inputs(srv, mod, IMAGENET, data), outputs=[out])
                got = shm.get_contents_as_numpy(region, np.float32, list(want.shape))
                assert got.tobytes() == want.tobytes()
        assert_unharmed(srv, normal)


BOXES_MODEL = "hostile_boxes"  # up to 256 boxes, UINT8 crops: a valid config
BOXES_PIPELINE = """
version: 1
input { name: "IMAGE" }
input { name: "BOXES" boxes { max: 256 coords: "relative" } }
node { op: "decode" input: "IMAGE" arg { name: "color" str: "RGB" } }
node { op: "crop_boxes" input: ["decode", "BOXES"] arg { name: "size" ints { v: [64, 64] } } }
output { name: "CROPS" source: "crop_boxes" dtype: "UINT8" dims: [256, 64, 64, 3] }
output { name: "NUM_CROPS" source: "crop_boxes:count" dtype: "INT32" dims: [1] }
"""
BOXES_CONFIG = """
name: "hostile_boxes"
backend: "sluice"
max_batch_size: 16
input [
  { name: "IMAGE", data_type: TYPE_UINT8, dims: [ -1 ], allow_ragged_batch: true },
  { name: "BOXES", data_type: TYPE_FP32, dims: [ 256, 4 ] }
]
instance_group [ { kind: KIND_CPU, count: 1 } ]
"""


def boxes_request(mod, images, rows):
    """UINT8 [n, N] images (zero-padded) with the same relative boxes each."""
    n = max(len(b) for b in images)
    batch = np.zeros((len(images), n), np.uint8)
    for i, b in enumerate(images):
        batch[i, : len(b)] = np.frombuffer(b, np.uint8)
    boxes = np.full((len(images), 256, 4), np.nan, np.float32)
    boxes[:, : len(rows)] = rows
    x = mod.InferInput("IMAGE", list(batch.shape), "UINT8")
    x.set_data_from_numpy(batch)
    b = mod.InferInput("BOXES", list(boxes.shape), "FP32")
    b.set_data_from_numpy(boxes)
    return [x, b]


@pytest.fixture
def boxes_model(srv):
    srv.add_model(BOXES_MODEL, BOXES_CONFIG, BOXES_PIPELINE)
    srv.http.load_model(BOXES_MODEL)
    yield srv
    srv.http.unload_model(BOXES_MODEL)
    wait_unloaded(srv, BOXES_MODEL)


def image_counts(s, model):
    """(images decoded, images failed as cancelled) of model, from /metrics."""
    m = scrape(s)
    labels = {("model", model), ("version", "1")}
    done = m[("sluice_images_total", frozenset(labels))]
    cancelled = m[("sluice_image_failures_total", frozenset(labels | {("cause", "cancelled")}))]
    return done, cancelled


def test_cancelled_request_is_abandoned(boxes_model, normal):
    """A gRPC request whose client gives up after 0.5 s (Triton cancels it)
    stops where it is: its remaining images are not decoded (counted as
    cancelled), and the next request is not kept waiting for them."""
    s = boxes_model
    client, mod = client_of(s, "grpc")
    big = png_zeros(8192, 8192, colour_type=0)
    rows = np.tile([0, 0, 1, 1], (4, 1)).astype(np.float32)
    done0, cancelled0 = image_counts(s, BOXES_MODEL)
    with pytest.raises(InferenceServerException, match="Deadline"):
        client.infer(BOXES_MODEL, boxes_request(mod, [big] * 16, rows),
                     outputs=[mod.InferRequestedOutput("NUM_CROPS")], client_timeout=0.5)  # fmt: skip
    r = client.infer(BOXES_MODEL, boxes_request(mod, [synthetic_jpeg().tobytes()], rows[:1]),
                     outputs=[mod.InferRequestedOutput("NUM_CROPS")])  # fmt: skip
    assert int(r.as_numpy("NUM_CROPS")[0, 0]) == 1
    done, cancelled = image_counts(s, BOXES_MODEL)
    assert cancelled > cancelled0, "no image of the cancelled request was abandoned"
    assert (done - done0 - 1) + (cancelled - cancelled0) == 16, (done - done0, cancelled - cancelled0)
    assert_unharmed(s, normal)


def test_crop_boxes_work_is_priced(boxes_model, normal):
    """256 whole-image boxes on a 65 kB 8192x8192 PNG (before: 14 s of CPU
    for one image, 221 s for 16, and a small request waited 111 s behind
    them) are refused naming crop_boxes and the limit, asked for NUM_CROPS
    alone or for everything; a small request to the same model is answered
    right after."""
    s = boxes_model
    client, mod = client_of(s, "grpc")
    big = png_zeros(8192, 8192, colour_type=0)
    whole = np.tile([0, 0, 1, 1], (256, 1)).astype(np.float32)
    for outputs in (("NUM_CROPS",), ("CROPS", "NUM_CROPS")):
        with pytest.raises(InferenceServerException) as e:
            client.infer(BOXES_MODEL, boxes_request(mod, [big] * 2, whole),
                         outputs=[mod.InferRequestedOutput(o) for o in outputs])  # fmt: skip
        msg = str(e.value)
        assert "too large" in msg and "crop_boxes" in msg and "max_image_work" in msg, msg
    small = synthetic_jpeg(320, 240).tobytes()
    r = client.infer(BOXES_MODEL, boxes_request(mod, [small], whole[:3]),
                     outputs=[mod.InferRequestedOutput("NUM_CROPS")])  # fmt: skip
    assert int(r.as_numpy("NUM_CROPS")[0, 0]) == 3
    assert_unharmed(s, normal)


MARK_OK = "hostile_mark_ok"


def test_mark_ok_has_no_string_output(srv, normal):
    """Triton 2.51 dies (SIGFPE) classifying a TYPE_STRING output such as
    IMAGE_ERROR, so that request is not sent here. image_errors "mark_ok"
    has IMAGE_OK alone: asking to classify it, or any output, is answered
    with an error or a result, and a broken image is still marked."""
    srv.add_model(MARK_OK, MARK_CONFIG.replace(MARK, MARK_OK).replace('"mark"', '"mark_ok"'))
    srv.http.load_model(MARK_OK)
    try:
        outs = {o["name"]: o["datatype"] for o in srv.http.get_model_metadata(MARK_OK)["outputs"]}
        assert outs == {"PIXELS": "FP32", "IMAGE_OK": "BOOL"}, outs
        client, mod = client_of(srv, "http")
        good = synthetic_jpeg().tobytes()
        x = mod.InferInput("IMAGE", [2, 1], "BYTES")
        x.set_data_from_numpy(np.array([[good], [good[: len(good) // 2]]], dtype=np.object_))
        r = client.infer(MARK_OK, [x], outputs=[mod.InferRequestedOutput("IMAGE_OK")])
        assert r.as_numpy("IMAGE_OK").ravel().tolist() == [True, False]
        with pytest.raises(InferenceServerException, match="class result not available"):
            client.infer(MARK_OK, [x], outputs=[mod.InferRequestedOutput("IMAGE_OK", class_count=1)])
        r = client.infer(MARK_OK, [x], outputs=[mod.InferRequestedOutput("PIXELS", class_count=3)])
        assert r.as_numpy("PIXELS").shape == (2, 3)
    finally:
        srv.http.unload_model(MARK_OK)
        wait_unloaded(srv, MARK_OK)
    assert_unharmed(srv, normal)
