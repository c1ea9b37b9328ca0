"""Oversized input, refused on the server side without harm: an encoded
image over the model's max_image_bytes, an image whose header claims more
pixels than max_image_pixels (refused from the header, before the decoder
allocates anything), and a request batch over max_batch_size (refused by
Triton itself). Each gets an error response that says why; the server stays
healthy and the next ordinary request is served.

Triton 2.51 has no request-size limit of its own to test against: its HTTP
endpoint takes any body (--http-max-input-size came later) and its gRPC
endpoint accepts messages up to 2 GB, too big to send here. Sluice's
max_image_bytes is what bounds an image.
"""

import numpy as np
import pytest

from tests.triton.helpers import (
    BYTES_MODEL,
    IMAGENET,
    PROTOCOLS,
    InferenceServerException,
    bytes_input,
    client_of,
    encoded,
    grpcclient,
    httpclient,
    infer,
    infer_one,
    scrape,
    synthetic_jpeg,
    synthetic_rgb,
    uint8_input,
)
from tests.triton.hostile_files import jpeg_claiming, png_claiming

SMALL = "preprocess_small_limits"  # preprocess_imagenet's pipeline, small limits
MAX_BYTES = 6000
MAX_PIXELS = 200000  # resize (shorter side 256) outputs count too: 160x100 -> 409x256 passes
# Growth of the server's memory allowed while it refuses a header claiming
# billions of pixels (decoding the 60000x60000 claim would need 10 GB).
# Measured (2026-12-01, four refusals each in two runs): +0 to +1.6 MB, the
# most on a fresh server's first requests. The bound is ten times that.
RSS_SLACK_KB = 16 * 1024

SMALL_CONFIG = f"""\
# Test model (tests/triton/test_oversized.py): small input limits.
name: "{SMALL}"
backend: "sluice"
max_batch_size: 8
input [ {{ name: "IMAGE", data_type: TYPE_UINT8, dims: [ -1 ], allow_ragged_batch: true }} ]
output [ {{ name: "PIXELS", data_type: TYPE_FP32, dims: [ 3, 224, 224 ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 2000 }}
instance_group [ {{ kind: KIND_CPU, count: 1 }} ]
parameters {{ key: "max_image_bytes" value {{ string_value: "{MAX_BYTES}" }} }}
parameters {{ key: "max_image_pixels" value {{ string_value: "{MAX_PIXELS}" }} }}
"""


@pytest.fixture(scope="module")
def small(sluice_models):
    """The server with SMALL loaded from a folder added to its repository copy."""
    s = sluice_models
    s.add_model(SMALL, SMALL_CONFIG)
    s.http.load_model(SMALL)
    yield s
    s.http.unload_model(SMALL)


@pytest.fixture
def limits_server(small):
    small.ensure_loaded(IMAGENET, BYTES_MODEL, SMALL)
    yield small
    assert small.alive(), f"tritonserver died:\n{small.log_tail()}"


def assert_still_serving(s, model=IMAGENET, image=None):
    """Health endpoints say live and ready over both protocols, and an
    ordinary request is served over both."""
    image = synthetic_jpeg(160, 100) if image is None else image  # under every limit here
    assert s.alive(), s.log_tail()
    assert s.http.is_server_live() and s.grpc.is_server_live()
    assert s.http.is_model_ready(model) and s.grpc.is_model_ready(model)
    status, _ = s.get(f"/v2/models/{model}/ready")
    assert status == 200
    for proto, mod in PROTOCOLS:
        client, _ = client_of(s, proto)
        out = infer_one(client, mod, model, image)["PIXELS"]
        assert out.shape == (1, 3, 224, 224) and np.isfinite(out).all(), proto


def noisy_jpeg(w, h, quality=95):
    """A JPEG that compresses badly (so its size is predictable from w, h)."""
    return encoded(synthetic_rgb(np.random.default_rng(1), h, w), "JPEG", quality=quality)


def too_large_count(s, model):
    k = ("sluice_image_failures_total", frozenset({("model", model), ("version", "1"), ("cause", "too large")}))
    return scrape(s).get(k, 0.0)


def test_image_over_max_image_bytes(limits_server):
    """(a) An encoded image over the model's max_image_bytes: INVALID_ARG
    naming the cause and the limit; images under it are served."""
    s = limits_server
    big = noisy_jpeg(320, 240)
    assert big.size > MAX_BYTES
    ok = synthetic_jpeg(160, 100)
    assert ok.size <= MAX_BYTES and 160 * 100 <= MAX_PIXELS
    n0 = too_large_count(s, SMALL)
    for proto, mod in PROTOCOLS:
        client, _ = client_of(s, proto)
        with pytest.raises(InferenceServerException) as e:
            infer_one(client, mod, SMALL, big)
        msg = str(e.value)
        print(f"{proto}: {msg}")
        assert "too large" in msg and str(MAX_BYTES) in msg and str(big.size) in msg, msg
        assert_still_serving(s, SMALL, ok)
    assert too_large_count(s, SMALL) - n0 == 2
    assert_still_serving(s)


def test_limits_are_per_model(limits_server):
    """The image the small model refuses passes the other models, which keep
    the default limits (64 MiB, 64 MP): a model's parameters are its own."""
    s = limits_server
    big = noisy_jpeg(320, 240)
    out = infer(s.grpc, grpcclient, BYTES_MODEL, [bytes_input(grpcclient, [big.tobytes()])])["PIXELS"]
    assert out.shape == (1, 3, 224, 224)
    assert infer_one(s.http, httpclient, IMAGENET, big)["PIXELS"].shape == (1, 3, 224, 224)


@pytest.mark.parametrize("fmt", ["jpeg", "png"])
def test_header_claims_more_pixels_than_max_image_pixels(limits_server, fmt):
    """(b) A header that claims more pixels than max_image_pixels: refused
    from the header ("too large", naming the limit), before any pixel buffer
    is allocated: on the default limit (64 MP) a 60000x60000 claim, which
    would need 10 GB decoded, leaves the server's memory where it was."""
    s = limits_server
    make = jpeg_claiming if fmt == "jpeg" else png_claiming
    cases = [
        (SMALL, make(640, 480), 640, 480, MAX_PIXELS),  # over the small model's limit
        (IMAGENET, make(60000, 60000), 60000, 60000, 64 << 20),  # over the default limit
    ]
    for model, data, w, h, limit in cases:
        rss0 = s.rss_kb()
        for proto, mod in PROTOCOLS:
            client, _ = client_of(s, proto)
            with pytest.raises(InferenceServerException) as e:
                infer_one(client, mod, model, data)
            msg = str(e.value)
            print(f"{model} {proto}: {msg}")
            assert "too large" in msg and str(limit) in msg and f"{w}x{h}" in msg, msg
        grew = s.rss_kb() - rss0
        print(f"{model}: server RSS {grew:+d} kB refusing a {w}x{h} claim")
        assert grew < RSS_SLACK_KB, f"server RSS grew {grew} kB refusing a {w}x{h} claim"
        assert_still_serving(s, model)


def test_batch_over_max_batch_size(limits_server):
    """(c) A request whose batch exceeds the model's max_batch_size: Triton
    refuses it before Sluice sees it, with its own message; one at the limit
    is served."""
    s = limits_server
    img = synthetic_jpeg(96, 64)
    for model, mbs in ((IMAGENET, 64), (SMALL, 8)):
        for proto, mod in PROTOCOLS:
            client, _ = client_of(s, proto)
            over = np.tile(img, (mbs + 1, 1))
            with pytest.raises(InferenceServerException) as e:
                infer(client, mod, model, [uint8_input(mod, over)])
            msg = str(e.value)
            print(f"{model} {proto}: {msg}")
            assert f"batch-size must be <= {mbs}" in msg, msg
            out = infer(client, mod, model, [uint8_input(mod, np.tile(img, (mbs, 1)))])["PIXELS"]
            assert out.shape == (mbs, 3, 224, 224)
        assert_still_serving(s, model)
    # BYTES input: the batch is the number of elements.
    for proto, mod in PROTOCOLS:
        client, _ = client_of(s, proto)
        with pytest.raises(InferenceServerException) as e:
            infer(client, mod, BYTES_MODEL, [bytes_input(mod, [img.tobytes()] * 65)])
        assert "batch-size must be <= 64" in str(e.value), str(e.value)
    assert_still_serving(s, IMAGENET)
