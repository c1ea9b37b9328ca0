"""Explicit model control: a model whose pipeline is invalid fails to load
with the pipeline's error while the others serve; loading and unloading a
Sluice model repeatedly does not grow the server's memory."""

import time

import numpy as np
import pytest

from tests.triton.helpers import (
    BROKEN_OP,
    IMAGENET,
    SLUICE_MODELS,
    GrpcBurst,
    InferenceServerException,
    grpcclient,
    httpclient,
    infer_one,
    read_bytes,
    say,
    synthetic_jpeg,
    uint8_input,
    wait_unloaded,
)


def test_python_model_unload_load(server):
    """The explicit-mode plumbing itself, on the Python classifier."""
    server.http.unload_model("classifier")
    wait_unloaded(server, "classifier")
    assert not server.http.is_model_ready("classifier")
    server.grpc.load_model("classifier")
    assert server.grpc.is_model_ready("classifier")


def test_invalid_pipeline_fails_to_load(sluice_server):
    s = sluice_server
    pfile = s.repo / "preprocess_broken" / "1" / "pipeline.pbtxt"
    broken_text = pfile.read_text()
    try:
        with pytest.raises(InferenceServerException) as e:
            s.http.load_model("preprocess_broken")
        msg = str(e.value)
        print(f"load error: {msg}")
        assert f'unknown operator "{BROKEN_OP}"' in msg and str(pfile) in msg, msg
        # The repository index says why, too.
        state, reason = s.model_state("preprocess_broken")
        assert state == "UNAVAILABLE", (state, reason)
        assert f'unknown operator "{BROKEN_OP}"' in reason, reason
        # gRPC reports the same failure.
        with pytest.raises(InferenceServerException) as e:
            s.grpc.load_model("preprocess_broken")
        assert BROKEN_OP in str(e.value)
        # Everything else still serves. (Triton's strict readiness reports
        # the server not ready while a model of the repository has failed.)
        assert s.alive() and s.http.is_server_live()
        assert not s.http.is_server_ready()
        for name in SLUICE_MODELS + ["classifier"]:
            assert s.http.is_model_ready(name), name
        out = infer_one(s.grpc, grpcclient, IMAGENET, synthetic_jpeg())["PIXELS"]
        assert out.shape == (1, 3, 224, 224)
    finally:
        # Repaired, the same model loads and serves, and the server is
        # ready again; then it goes.
        pfile.write_text(broken_text.replace(f'op: "{BROKEN_OP}"', 'op: "resize"'))
        s.http.load_model("preprocess_broken")
        pfile.write_text(broken_text)
    out = infer_one(s.http, httpclient, "preprocess_broken", synthetic_jpeg())["PIXELS"]
    assert out.shape == (1, 3, 224, 224)
    assert s.http.is_server_ready()
    s.http.unload_model("preprocess_broken")
    wait_unloaded(s, "preprocess_broken")
    assert s.http.is_server_ready()


def test_edited_text_beside_stale_compact_refused(sluice_server):
    """A copied model folder whose pipeline.pbtxt was edited but not
    recompiled: the model.sluice beside it no longer matches, and the model
    fails to load naming both files rather than serving the old pipeline.
    Recompiled (here: the stale file removed), the edit loads."""
    s = sluice_server
    name = "preprocess_edited"
    src, d = s.repo / IMAGENET, s.repo / name
    (d / "1").mkdir(parents=True)
    for f in ("model.sluice", "pipeline.pbtxt"):
        (d / "1" / f).write_bytes((src / "1" / f).read_bytes())
    text = (d / "1" / "pipeline.pbtxt").read_text()
    assert 'arg { name: "shorter" int: 256 }' in text
    (d / "1" / "pipeline.pbtxt").write_text(text.replace("int: 256", "int: 240"))
    (d / "config.pbtxt").write_text(
        (src / "config.pbtxt").read_text().replace(f'name: "{IMAGENET}"', f'name: "{name}"'))
    try:
        with pytest.raises(InferenceServerException) as e:
            s.http.load_model(name)
        msg = str(e.value)
        assert "define different pipelines" in msg, msg
        assert str(d / "1" / "model.sluice") in msg and str(d / "1" / "pipeline.pbtxt") in msg, msg
    finally:
        (d / "1" / "model.sluice").unlink()
        s.http.load_model(name)
    out = infer_one(s.http, httpclient, name, synthetic_jpeg())["PIXELS"]
    assert out.shape == (1, 3, 224, 224)
    s.http.unload_model(name)
    wait_unloaded(s, name)
    assert s.http.is_server_ready()


# Load/unload cycles measured, after the warm-up ones, and the bound on the
# server's memory growth per cycle: the least-squares slope of VmRSS over
# the cycles. Measured (tritonserver 2.51, 2 shared cores, 2026-12-01):
# -48, -12, -7, -2, +12, +35 kB/cycle in six windows of 100 cycles once
# warm (the first 100 after only 20 warm-up cycles still rose, +64
# kB/cycle); VmRSS itself swings by ±8 MB between samples. The bound is
# about three times the largest slope; a model whose buffers or workers
# outlived its unload adds megabytes a cycle.
CYCLES, WARMUP, SLOPE_BOUND_KB = 100, 60, 150


def test_load_unload_does_not_leak(sluice_server, photos, request):
    """preprocess_imagenet unloaded and loaded over and over, with inference
    in between (single requests and a concurrent burst, so that batches of
    several images fill the instance's buffers): the server's resident
    memory does not trend upwards once warm.

    The images are ImageNet-size: a multi-megapixel one makes the Go heap
    and glibc's arenas swing by tens of MB from one sample to the next
    (garbage not yet collected or returned). A slope over many cycles
    averages those swings out, where a difference of two ends would not."""
    s = sluice_server
    images = photos[:4]
    burst_images = photos[4:12]
    want = {str(p): infer_one(s.grpc, grpcclient, IMAGENET, p)["PIXELS"] for p in images + burst_images}
    burst = GrpcBurst(s.grpc)

    def cycle():
        s.http.unload_model(IMAGENET)
        wait_unloaded(s, IMAGENET)
        with pytest.raises(InferenceServerException):
            infer_one(s.grpc, grpcclient, IMAGENET, images[0])
        s.http.load_model(IMAGENET)
        assert s.http.is_model_ready(IMAGENET)
        for p in images:
            assert np.array_equal(infer_one(s.grpc, grpcclient, IMAGENET, p)["PIXELS"], want[str(p)]), p.name
        results = burst.run(IMAGENET, [[uint8_input(grpcclient, read_bytes(p))] for p in burst_images])
        for p, (res, err) in zip(burst_images, results):
            assert err is None, f"{p.name}: {err}"
            assert np.array_equal(res.as_numpy("PIXELS"), want[str(p)]), p.name

    for _ in range(WARMUP):  # allocator pools, Go heap, Triton's own caches
        cycle()

    def window():
        rss = []
        t0 = time.monotonic()
        for _ in range(CYCLES):
            cycle()
            rss.append(s.rss_kb())
        took = time.monotonic() - t0
        slope_kb = float(np.polyfit(np.arange(CYCLES), rss, 1)[0])
        line = (
            f"VmRSS over {CYCLES} load/unload cycles ({took:.1f}s), after {WARMUP} warm-up cycles: "
            f"slope {slope_kb:+.1f} kB/cycle (bound {SLOPE_BOUND_KB}), {rss[0] / 1024:.1f} -> {rss[-1] / 1024:.1f} MB, "
            f"min {min(rss) / 1024:.1f}, max {max(rss) / 1024:.1f}"
        )
        print(line)
        say(request.config, "\n" + line)
        return slope_kb, line

    # A leak grows every window; memory that earlier tests left to be
    # returned (the buffer pool drains 5 s after use, FreeOSMemory runs at
    # most every 10 s) can move one window: seen once in CI after the
    # hostile suite, +216 kB/cycle, where this test alone measures +25..+53.
    # So a later window judges an earlier one over the bound: up to three
    # (a local fresh-clone CI run measured +171 and +170 kB/cycle in two
    # windows after the whole suite, while the real CI and this test alone
    # measure +14..+74).
    for _ in range(3):
        slope_kb, line = window()
        if slope_kb < SLOPE_BOUND_KB:
            break
    assert slope_kb < SLOPE_BOUND_KB, line
    # Unloading preprocess_imagenet unloads the ensemble that uses it, and
    # loading it loads the ensemble again: it serves.
    s.ensure_loaded(*SLUICE_MODELS)
    scores = infer_one(s.grpc, grpcclient, "ensemble_imagenet", images[0], outputs=("SCORES",))["SCORES"]
    assert scores.shape == (1, 1000)
