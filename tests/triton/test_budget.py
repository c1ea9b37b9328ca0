"""Memory bounds of a model, against the real server: a model whose worst
case cannot be afforded fails its load naming the numbers (a fixed output
over max_image_pixels, max_batch_size x one sample's outputs over
max_batch_bytes), and the server stays up; requests over a model's bounds
get INVALID_ARG and leave the next request's answer unchanged; a burst of
huge images gives its memory back within 30 s of idle.

Before these bounds, the first two models loaded and a 64-byte request
killed tritonserver (Go's "fatal error: runtime: out of memory" allocating
76.8 GB, then 60 GB for max_batch_size 2147483647), and eight 65 kB PNGs of
8192x8192 zeros left a model holding a gigabyte for minutes.
"""

import time

import numpy as np
import pytest

from tests.triton.helpers import (
    IMAGENET,
    GrpcBurst,
    InferenceServerException,
    encoded,
    grpcclient,
    httpclient,
    infer,
    say,
    synthetic_jpeg,
    uint8_input,
    wait_unloaded,
)

SAMPLE = 3 * 224 * 224 * 4  # bytes of one PIXELS sample, FP32 [3, 224, 224]
BUDGET = 2 << 30  # the default max_batch_bytes
PIXEL_LIMIT = 64 << 20  # the default max_image_pixels

HUGE_PIPELINE = """\
version: 1
name: "huge_output"
input { name: "IMAGE" }
node { op: "decode" }
node { op: "resize" arg { name: "size" ints { v: [10000, 10000] } } }
node { op: "normalize" }
output { name: "PIXELS" dtype: "FP32" dims: [3, 10000, 10000] }
"""


def config(name, max_batch_size, dims=(3, 224, 224), params=None):
    params = params or {}
    lines = [
        f'name: "{name}"',
        'backend: "sluice"',
        f"max_batch_size: {max_batch_size}",
        'input [ { name: "IMAGE", data_type: TYPE_UINT8, dims: [ -1 ], allow_ragged_batch: true } ]',
        f'output [ {{ name: "PIXELS", data_type: TYPE_FP32, dims: [ {", ".join(map(str, dims))} ] }} ]',
        "dynamic_batching { max_queue_delay_microseconds: 2000 }",
        "instance_group [ { kind: KIND_CPU, count: 1 } ]",
    ]
    lines += [f'parameters {{ key: "{k}" value {{ string_value: "{v}" }} }}' for k, v in params.items()]
    return "\n".join(lines) + "\n"


def invalid_arg(e):
    return e.status() in ("StatusCode.INVALID_ARGUMENT", "400")


def assert_serving(s):
    assert s.alive(), s.log_tail()
    assert s.http.is_server_live() and s.grpc.is_server_live()
    out = infer(s.grpc, grpcclient, IMAGENET, [uint8_input(grpcclient, synthetic_jpeg())])["PIXELS"]
    assert out.shape == (1, 3, 224, 224) and np.isfinite(out).all()


def refused_then_repaired(s, name, cfg, parts, repaired_cfg):
    """Loading name with cfg fails over both protocols naming every part;
    the server keeps serving; with repaired_cfg the model loads, and goes."""
    d = s.repo / name
    for client in (s.http, s.grpc):
        with pytest.raises(InferenceServerException) as e:
            client.load_model(name)
        msg = str(e.value)
        print(f"{name}: load error: {msg}")
        for p in parts:
            assert p in msg, (p, msg)
        state, reason = s.model_state(name)
        assert state == "UNAVAILABLE" and parts[0] in reason, (state, reason)
        assert_serving(s)
    # Triton's strict readiness counts the failed model until it loads.
    (d / "config.pbtxt").write_text(repaired_cfg)
    s.http.load_model(name)
    assert s.http.is_model_ready(name)
    s.http.unload_model(name)
    wait_unloaded(s, name)
    assert s.http.is_server_ready()
    (d / "config.pbtxt").write_text(cfg)


def test_huge_static_output_fails_to_load(sluice_server):
    """dims [3, 10000, 10000]: the resize's 10000x10000 images are over
    max_image_pixels (every image would fail), and 64 samples of 1.2 GB
    over max_batch_bytes."""
    s = sluice_server
    name = "budget_huge_output"
    cfg = config(name, 64, dims=(3, 10000, 10000), params={"workers": "1"})
    s.add_model(name, cfg, HUGE_PIPELINE)
    parts = [
        f'node "resize" outputs 10000x10000 images (100000000 pixels), over max_image_pixels {PIXEL_LIMIT}',
        f"max_batch_size 64 × 1200000000 bytes of outputs per sample (PIXELS FP32 [3, 10000, 10000]) "
        f"= 76800000000 bytes, over max_batch_bytes {BUDGET}",
    ]
    # One sample fits the budget and the pixel limit raised: it loads.
    repaired = config(name, 1, dims=(3, 10000, 10000), params={"workers": "1", "max_image_pixels": "100000000"})
    refused_then_repaired(s, name, cfg, parts, repaired)


def test_max_batch_size_over_budget_fails_to_load(sluice_server):
    """max_batch_size 2147483647 on the ImageNet pipeline: 1.3 PB of outputs
    for a full batch, and over the 65536 samples Sluice takes."""
    s = sluice_server
    name = "budget_max_batch"
    cfg = config(name, 2147483647, params={"workers": "1"})
    s.add_model(name, cfg)
    fits = BUDGET // SAMPLE
    parts = [
        f"max_batch_size 2147483647 × {SAMPLE} bytes of outputs per sample (PIXELS FP32 [3, 224, 224]) "
        f"= {2147483647 * SAMPLE} bytes, over max_batch_bytes {BUDGET}: lower max_batch_size to {fits}",
        "max_batch_size 2147483647 is over 65536",
    ]
    refused_then_repaired(s, name, cfg, parts, config(name, fits, params={"workers": "1"}))


def test_requests_over_a_models_bounds(sluice_server):
    """A model just inside its budget (max_batch_bytes = 8 samples, the
    most max_batch_size 8 needs): a request of 9 images and one whose input
    is larger than 8 images of max_image_bytes each get INVALID_ARG, and
    the requests after them are answered byte for byte as before. Triton
    refuses the first itself (its batcher never exceeds max_batch_size,
    which the load fitted to the budget); Sluice refuses the second as too
    large: before copying it where Triton hands it over in pieces, else
    from max_image_bytes before decoding."""
    s = sluice_server
    name = "budget_just_under"
    max_bytes = 100000
    s.add_model(name, config(name, 8, params={"max_batch_bytes": str(8 * SAMPLE), "max_image_bytes": str(max_bytes)}))
    s.http.load_model(name)
    try:
        imgs = [synthetic_jpeg(160 + 16 * i, 120) for i in range(8)]
        width = max(len(x) for x in imgs)
        batch = np.stack([np.pad(x, (0, width - len(x))) for x in imgs])
        over_batch = np.concatenate([batch, batch[:1]])
        over_input = np.zeros((1, 8 * (max_bytes + 4) + 1000), np.uint8)
        over_input[0, : len(imgs[0])] = imgs[0]
        for client, mod in ((s.grpc, grpcclient), (s.http, httpclient)):
            before_one = infer(client, mod, name, [uint8_input(mod, imgs[0])])["PIXELS"]
            before_all = infer(client, mod, name, [uint8_input(mod, batch)])["PIXELS"]
            assert before_all.shape == (8, 3, 224, 224)
            np.testing.assert_array_equal(before_all[0], before_one[0])
            with pytest.raises(InferenceServerException) as e:
                infer(client, mod, name, [uint8_input(mod, over_batch)])
            print(f"{mod.__name__} batch of 9: {e.value}")
            assert invalid_arg(e.value) and "batch-size must be <= 8" in str(e.value), str(e.value)
            with pytest.raises(InferenceServerException) as e:
                infer(client, mod, name, [uint8_input(mod, over_input)])
            print(f"{mod.__name__} input of {over_input.size} bytes: {e.value}")
            assert invalid_arg(e.value) and "too large" in str(e.value) and str(over_input.size) in str(e.value), str(e.value)
            np.testing.assert_array_equal(infer(client, mod, name, [uint8_input(mod, imgs[0])])["PIXELS"], before_one)
            np.testing.assert_array_equal(infer(client, mod, name, [uint8_input(mod, batch)])["PIXELS"], before_all)
        assert_serving(s)
    finally:
        s.http.unload_model(name)
        wait_unloaded(s, name)


def zero_png(side):
    return encoded(np.zeros((side, side), np.uint8), "PNG")


def test_memory_returns_after_a_burst_of_huge_images(sluice_server, request):
    """Eight 8192x8192 PNGs of zeros (64 MP, inside the default limit; 65 kB
    each, 200 MB each decoded), four at a time: the server's resident memory
    is back within 200 MB of where it was within 30 s of idle. Every worker
    decodes one, so without releasing each would hold 250 MB."""
    s = sluice_server
    png = zero_png(8192)
    normal = synthetic_jpeg(320, 240)
    want = infer(s.grpc, grpcclient, IMAGENET, [uint8_input(grpcclient, normal)])["PIXELS"]
    burst = GrpcBurst(s.grpc)
    # Settle: ordinary traffic, then a moment for whatever it left.
    burst.run(IMAGENET, [[uint8_input(grpcclient, normal)] for _ in range(16)])
    time.sleep(2)
    before = s.rss_kb()
    t0 = time.monotonic()
    peak = before
    for _ in range(2):
        for res, err in burst.run(IMAGENET, [[uint8_input(grpcclient, png)] for _ in range(4)]):
            assert err is None, err
            out = res.as_numpy("PIXELS")
            assert out.shape == (1, 3, 224, 224)
        peak = max(peak, s.rss_kb())
    took = time.monotonic() - t0
    samples = []
    t1 = time.monotonic()
    while True:
        time.sleep(1)
        rss = s.rss_kb()
        samples.append(rss)
        if rss - before <= 200 * 1024 or time.monotonic() - t1 >= 30:
            break
    idle = time.monotonic() - t1
    line = (
        f"VmRSS before a burst of 8 PNGs 8192x8192: {before / 1024:.0f} MB; peak seen {peak / 1024:.0f} MB "
        f"(burst took {took:.1f}s); after {idle:.0f}s idle {samples[-1] / 1024:.0f} MB "
        f"(bound +200 MB within 30 s); samples: {' '.join(f'{r / 1024:.0f}' for r in samples)}"
    )
    print(line)
    say(request.config, "\n" + line)
    assert samples[-1] - before <= 200 * 1024, line
    # It serves as before.
    np.testing.assert_array_equal(infer(s.grpc, grpcclient, IMAGENET, [uint8_input(grpcclient, normal)])["PIXELS"], want)
