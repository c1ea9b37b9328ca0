"""Hostile inputs against a real tritonserver: malformed requests over
gRPC and HTTP (tritonclient and raw), and images built to cost the most for
the fewest bytes. Every file is made here at test time (hostile_files.py).
Each case asserts a clear error naming the problem, the server still live,
and a normal request answered byte-identically afterwards (assert_unharmed).

Hostile configs (a static output of [3, 10000, 10000], max_batch_size
2147483647) and memory after a burst of 8192x8192 PNGs are in
test_budget.py; per-model image limits in test_oversized.py."""

import time

import grpc
import numpy as np
import pytest
from tritonclient.grpc import service_pb2, service_pb2_grpc

from tests.triton.helpers import (
    BYTES_MODEL,
    IMAGENET,
    PROTOCOLS,
    REFUSED_WITHIN_S,
    GrpcBurst,
    InferenceServerException,
    assert_unharmed,
    bytes_input,
    client_of,
    grpcclient,
    infer,
    infer_one,
    post_infer,
    synthetic_rgb,
    uint8_input,
)
from tests.triton.hostile_files import jpeg_claiming, jpeg_many_scans, jpeg_uncoded_ac, png_claiming, png_zeros

DECODE = "hostile_decode"  # the decoded image itself, for comparing with Pillow
DECODE_H, DECODE_W = 72, 104
MAX_PIXELS = 64 << 20  # the default max_image_pixels
MAX_BYTES = 64 << 20  # the default max_image_bytes
RSS_SLACK_KB = 256 * 1024  # growth allowed while refusing bombs

DECODE_PIPELINE = f"""
version: 1
input {{ name: "IMAGE" }}
node {{ op: "decode" arg {{ name: "color" str: "RGB" }} arg {{ name: "dct_scale" bool: false }} }}
node {{ op: "crop" arg {{ name: "roi" ints {{ v: [0, 0, {DECODE_H}, {DECODE_W}] }} }} }}
output {{ name: "PIXELS" }}
"""
DECODE_CONFIG = f"""
name: "{DECODE}"
backend: "sluice"
max_batch_size: 8
input [ {{ name: "IMAGE", data_type: TYPE_UINT8, dims: [ -1 ], allow_ragged_batch: true }} ]
output [ {{ name: "PIXELS", data_type: TYPE_UINT8, dims: [ {DECODE_H}, {DECODE_W}, 3 ] }} ]
instance_group [ {{ kind: KIND_CPU, count: 1 }} ]
"""


# ------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def hostile(sluice_models):
    """The server with DECODE loaded from a folder added to its repository copy."""
    s = sluice_models
    s.add_model(DECODE, DECODE_CONFIG, DECODE_PIPELINE)
    s.http.load_model(DECODE)
    yield s
    s.http.unload_model(DECODE)


@pytest.fixture
def srv(hostile):
    hostile.ensure_loaded(IMAGENET, BYTES_MODEL, DECODE)
    return hostile


def refused(client, mod, model, inputs, outputs=("PIXELS",)):
    """The message of the error a request must get."""
    with pytest.raises(InferenceServerException) as e:
        infer(client, mod, model, inputs, outputs)
    return str(e.value)


def assert_names(msg, *words):
    for w in words:
        assert w in msg, f"error should name {w!r}: {msg}"


# ------------------------------------------------------------------ malformed requests (tritonclient)


def raw_input(mod, x, datatype="UINT8", name="IMAGE"):
    t = mod.InferInput(name, list(x.shape), datatype)
    t.set_data_from_numpy(x)
    return t


@pytest.mark.parametrize("proto", ["grpc", "http"])
def test_malformed_requests(srv, normal, proto):
    """Wrong data type, wrong rank, missing and unknown inputs and outputs,
    a batch over max_batch_size, an empty image, a BYTES tensor on a UINT8
    input: each refused with a message naming what is wrong."""
    client, mod = client_of(srv, proto)
    img = normal[0][None]
    cases = [
        ("wrong dtype", [raw_input(mod, img.astype(np.float32), "FP32")], ("PIXELS",), ("FP32", "UINT8")),
        ("wrong shape", [raw_input(mod, img[None])], ("PIXELS",), ("IMAGE", "shape")),
        ("unknown input", [raw_input(mod, img, name="PICTURE")], ("PIXELS",), ("PICTURE",)),
        ("two inputs", [raw_input(mod, img), raw_input(mod, img, name="EXTRA")], ("PIXELS",), ("EXTRA",)),
        ("missing input", [], ("PIXELS",), ("input",)),
        ("unknown output", [raw_input(mod, img)], ("SCORES",), ("SCORES",)),
        ("over-batch", [raw_input(mod, np.tile(img, (65, 1)))], ("PIXELS",), ("batch-size must be <= 64",)),
        ("empty image", [raw_input(mod, np.zeros((1, 0), np.uint8))], ("PIXELS",), ("IMAGE", "not an image")),
        ("BYTES for UINT8", [bytes_input(mod, [normal[0].tobytes()])], ("PIXELS",), ("BYTES", "UINT8")),
    ]
    for label, inputs, outputs, words in cases:
        msg = refused(client, mod, IMAGENET, inputs, outputs)
        print(f"{proto} {label}: {msg}")
        assert_names(msg, *words)
    assert_unharmed(srv, normal)


@pytest.mark.parametrize("proto", ["grpc", "http"])
def test_bytes_with_one_garbage_element(srv, normal, proto):
    """A BYTES request of three images, the middle one garbage: the request
    fails naming that element; the other two, sent alone, are served."""
    client, mod = client_of(srv, proto)
    good = normal[0].tobytes()
    msg = refused(client, mod, BYTES_MODEL, [bytes_input(mod, [good, b"\x00garbage" * 50, good])])
    print(msg)
    assert_names(msg, "IMAGE element 1", "not an image")
    out = infer(client, mod, BYTES_MODEL, [bytes_input(mod, [good, good])])["PIXELS"]
    assert out[0].tobytes() == out[1].tobytes() == normal[1].tobytes()
    assert_unharmed(srv, normal)


def test_blob_of_100_mb(srv, normal):
    """100 MB of random bytes as one image: over max_image_bytes (64 MiB),
    refused naming the limit and the size, over both protocols."""
    blob = np.random.default_rng(5).integers(0, 256, (1, 100_000_000), dtype=np.uint8)
    blob[0, :3] = (0xFF, 0xD8, 0xFF)  # a JPEG by its magic: only the size is wrong
    for proto, mod in PROTOCOLS:
        msg = refused(client_of(srv, proto)[0], mod, IMAGENET, [uint8_input(mod, blob)])
        print(f"{proto}: {msg}")
        assert_names(msg, "too large", str(MAX_BYTES), str(blob.size))
    del blob
    assert_unharmed(srv, normal)


def test_dimension_and_png_bombs(srv, normal):
    """Headers claiming 60000x60000 pixels (JPEG and PNG, the PNG with
    real image data for all of them, 10 GB decoded) are refused from the
    header; a 512x512 PNG whose data inflates to 1 GiB is refused after
    reading what its header needs. The server's memory stays where it was."""
    cases = [
        ("JPEG 60000x60000", jpeg_claiming(60000, 60000), ("too large", "60000x60000", str(MAX_PIXELS))),
        ("PNG 60000x60000", png_claiming(60000, 60000), ("too large", "60000x60000", str(MAX_PIXELS))),
        ("PNG 60000x60000 of zeros", png_zeros(60000, 60000), ("too large", "60000x60000", str(MAX_PIXELS))),
        ("PNG 512x512 inflating to 1 GiB", png_zeros(512, 512, idat_bytes=1 << 30), ("corrupt data", "PNG")),
    ]
    rss0 = srv.rss_kb()
    for label, data, words in cases:
        data = np.frombuffer(data, np.uint8)
        for proto, mod in PROTOCOLS:
            t0 = time.monotonic()
            msg = refused(client_of(srv, proto)[0], mod, IMAGENET, [uint8_input(mod, data)])
            took = time.monotonic() - t0
            print(f"{label} ({data.size} bytes) {proto}: {took * 1000:.0f} ms: {msg}")
            assert_names(msg, *words)
            assert took < REFUSED_WITHIN_S, f"{label}: refused only after {took:.1f} s"
    grew = srv.rss_kb() - rss0
    assert grew < RSS_SLACK_KB, f"server RSS grew {grew} kB refusing bombs"
    assert_unharmed(srv, normal)


# ------------------------------------------------------------------ malformed requests (raw HTTP and gRPC)


def binary_header(shape, size, datatype="UINT8"):
    return {
        "inputs": [{"name": "IMAGE", "shape": shape, "datatype": datatype, "parameters": {"binary_data_size": size}}],
        "outputs": [{"name": "PIXELS", "parameters": {"binary_data": True}}],
    }


def json_header(shape, data, datatype="UINT8"):
    return {"inputs": [{"name": "IMAGE", "shape": shape, "datatype": datatype, "data": data}]}


def test_raw_http_malformed(srv, normal):
    """Requests tritonclient would never send: binary_data_size disagreeing
    with the shape or the body, a header length past the body, JSON data of
    the wrong type or count, a body that is not JSON. Each gets an error
    response; then the same image, sent right, is served."""
    img = normal[0].tobytes()
    n = len(img)
    cases = [
        ("binary size over the body", binary_header([1, n], n + 1000), img),
        ("binary size under the body", binary_header([1, n], n - 1000), img),
        ("binary size against the shape", binary_header([1, n + 7], n), img),
        ("negative binary size", binary_header([1, n], -5), img),
        ("two images' shape, one image's bytes", binary_header([2, n], n), img),
        ("header length past the body", binary_header([1, n], n), img, len(img) * 4),
        ("JSON strings for UINT8", json_header([1, 3], ["a", "b", "c"]), b""),
        ("JSON values out of range", json_header([1, 3], [1, 300, -7]), b""),
        ("JSON count against the shape", json_header([1, 10], [1, 2, 3]), b""),
        ("JSON nested objects", json_header([1, 2], [{"x": 1}, [2]]), b""),
        ("negative dimension", json_header([1, -3], [1, 2, 3]), b""),
        ("not JSON", b"\x00\x01 this is not json {", b""),
    ]
    for label, header, binary, *length in cases:
        status, body = post_infer(srv, IMAGENET, header, binary, *length)
        print(f"{label}: {status} {body}")
        # Triton 2.51's HTTP frontend answers what it cannot parse (JSON data
        # or shape of the wrong type, a negative binary_data_size, not JSON)
        # with 500, the sizes it can check with 400; Sluice sees none of them.
        assert status in (400, 500) and body.get("error"), f"{label}: {status} {body}"
    status, body = post_infer(srv, IMAGENET, binary_header([1, n], n), img)
    assert status == 200, body
    assert_unharmed(srv, normal)


def test_raw_grpc_malformed(srv, normal):
    """gRPC requests built by hand: raw contents shorter or longer than the
    shape or missing, BYTES whose length prefix runs past the buffer.
    INVALID_ARGUMENT each, with a message. (Triton 2.51 ignores raw contents
    beyond the inputs' count, so that case is no error.)"""
    img = normal[0].tobytes()
    n = len(img)
    T = service_pb2.ModelInferRequest.InferInputTensor

    def req(model, shape, raws, datatype="UINT8"):
        return service_pb2.ModelInferRequest(
            model_name=model, inputs=[T(name="IMAGE", datatype=datatype, shape=shape)], raw_input_contents=raws
        )

    bad_bytes = (1000).to_bytes(4, "little") + b"0123456789"  # says 1000 bytes, has 10
    cases = [
        ("raw contents short of the shape", req(IMAGENET, [1, n + 10], [img])),
        ("raw contents past the shape", req(IMAGENET, [1, n - 10], [img])),
        ("no raw contents", req(IMAGENET, [1, n], [])),
        ("BYTES length past the buffer", req(BYTES_MODEL, [1, 1], [bad_bytes], "BYTES")),
    ]
    with grpc.insecure_channel(srv.grpc_url) as ch:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(ch)
        for label, r in cases:
            with pytest.raises(grpc.RpcError) as e:
                stub.ModelInfer(r, timeout=60)
            print(f"{label}: {e.value.code()} {e.value.details()}")
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and e.value.details(), label
        ok = stub.ModelInfer(req(IMAGENET, [1, n], [img]), timeout=60)
        assert ok.raw_output_contents[0] == normal[1].tobytes()
    assert_unharmed(srv, normal)


# ------------------------------------------------------------------ costly JPEGs


@pytest.fixture(scope="module")
def scan_bombs():
    """8192x8192 progressive JPEGs of 499 and 694 scans, about 200 kB:
    libjpeg-turbo's own limit (500 scans) lets the first through, and
    stops the second only after 500 scans; either costs seconds of CPU."""
    return {n: np.frombuffer(jpeg_many_scans(n), np.uint8) for n in (499, 694)}


def test_many_scan_jpegs_refused_before_decode(srv, normal, scan_bombs):
    """Each refused, over both protocols, before decoding: the error names
    the scans, and comes in well under the seconds a decode would take."""
    for scans, data in scan_bombs.items():
        for proto, mod in PROTOCOLS:
            t0 = time.monotonic()
            msg = refused(client_of(srv, proto)[0], mod, IMAGENET, [uint8_input(mod, data)])
            took = time.monotonic() - t0
            print(f"{scans} scans ({data.size} bytes) {proto}: {took * 1000:.0f} ms: {msg}")
            assert_names(msg, "IMAGE", "scans")
            assert took < REFUSED_WITHIN_S, f"{scans} scans: refused only after {took:.1f} s (decoded first?)"
    assert_unharmed(srv, normal)


def test_many_scan_jpegs_do_not_stall_others(srv, normal, scan_bombs):
    """Four such files at once and a normal request alongside: the four are
    refused, and the normal request is answered correctly, within the
    bound too."""
    bombs = [scan_bombs[499], scan_bombs[694]] * 2
    inputs = [[uint8_input(grpcclient, b)] for b in bombs] + [[uint8_input(grpcclient, normal[0])]]
    burst = GrpcBurst(srv.grpc)
    res = burst.run(IMAGENET, inputs)
    for (_, error), took, data in zip(res[:4], burst.seconds, bombs):
        assert error is not None and "scans" in str(error), f"{data.size} bytes: {error or 'served'}"
        assert took < REFUSED_WITHIN_S, f"refused only after {took:.1f} s"
    (result, error), took = res[4], burst.seconds[4]
    assert error is None, error
    assert result.as_numpy("PIXELS")[0].tobytes() == normal[1].tobytes()
    print(f"normal request alongside four scan bombs: {took * 1000:.0f} ms")
    assert took < REFUSED_WITHIN_S, f"the normal request waited {took:.1f} s behind the scan bombs"
    assert_unharmed(srv, normal)


def test_progressive_with_uncoded_ac_matches_pillow(srv, normal):
    """A legal progressive JPEG whose scan script codes only DC and the
    luma's first five AC coefficients (the rest are zero by the standard)
    decodes, over both protocols, to exactly Pillow's pixels."""
    import io

    from PIL import Image

    rgb = synthetic_rgb(np.random.default_rng(3), DECODE_H, DECODE_W)
    data = jpeg_uncoded_ac(rgb)
    want = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    assert want.shape == (DECODE_H, DECODE_W, 3)
    for proto, mod in PROTOCOLS:
        got = infer_one(client_of(srv, proto)[0], mod, DECODE, np.frombuffer(data, np.uint8))["PIXELS"]
        assert got.shape == (1, DECODE_H, DECODE_W, 3)
        np.testing.assert_array_equal(got[0], want, err_msg=proto)
    assert_unharmed(srv, normal)
