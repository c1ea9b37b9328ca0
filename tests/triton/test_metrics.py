"""Sluice's own metrics at Triton's /metrics (cgo/metrics.go): images,
their encoded bytes, failures by cause and stage durations, per model and
version, counted as requests arrive."""

import time

import numpy as np
import pytest

from tests.triton.helpers import (
    IMAGENET,
    InferenceServerException,
    grpcclient,
    infer_one,
    read_bytes,
    scrape,
    truncated,
)


def key(name, **labels):
    return (name, frozenset(dict(model=IMAGENET, version="1", **labels).items()))


def test_metrics_families_listed(sluice_server):
    """Every family is there once the model is loaded, every cause and stage
    with its own series (at zero until something happens)."""
    got = scrape(sluice_server)
    for k in (
        key("sluice_images_total"),
        key("sluice_image_bytes_total"),
        *(key("sluice_image_failures_total", cause=c) for c in
          ("truncated", "not an image", "corrupt data", "unsupported", "too large", "cancelled", "invalid input")),
        *(key("sluice_stage_duration_seconds_total", stage=s) for s in ("collect", "pipeline", "respond")),
    ):
        assert k in got, (k, sorted(got)[:20])


def test_metrics_count_images_and_failures(sluice_server, photos):
    """Good and broken images, one per request: the counters rise by exactly
    what was sent."""
    good = [read_bytes(p) for p in photos.jpeg()[:4]]
    cut = [truncated(p) for p in photos.jpeg()[4:6]]
    junk = [b"this is not an image", b"GIF89a\x00\x00 neither"]
    before = scrape(sluice_server)
    t0 = time.monotonic()

    for data in good:
        infer_one(sluice_server.grpc, grpcclient, IMAGENET, data)
    for data in cut:
        with pytest.raises(InferenceServerException, match="truncated"):
            infer_one(sluice_server.grpc, grpcclient, IMAGENET, data)

    for b in junk:
        with pytest.raises(InferenceServerException):
            infer_one(sluice_server.grpc, grpcclient, IMAGENET, np.frombuffer(b, dtype=np.uint8))

    wall = time.monotonic() - t0
    after = scrape(sluice_server)

    def delta(k):
        return after.get(k, 0.0) - before.get(k, 0.0)

    assert delta(key("sluice_images_total")) == len(good)
    assert delta(key("sluice_image_bytes_total")) == sum(len(d) for d in good)
    assert delta(key("sluice_image_failures_total", cause="truncated")) == len(cut)
    failed = sum(delta(k) for k in after if k[0] == "sluice_image_failures_total" and dict(k[1])["model"] == IMAGENET)
    assert failed == len(cut) + len(junk)
    assert delta(key("sluice_image_failures_total", cause="corrupt data")) == 0
    for s in ("collect", "pipeline", "respond"):
        assert delta(key("sluice_stage_duration_seconds_total", stage=s)) > 0, s
    # In seconds: one request at a time, so the stages of these Executes
    # took less than the time spent sending them (in microseconds, or any
    # unit but seconds, the sum would exceed it).
    stages = sum(delta(key("sluice_stage_duration_seconds_total", stage=s)) for s in ("collect", "pipeline", "respond"))
    assert stages < wall, (stages, wall)
    # The pipeline stage split by operator, as the executor runs them
    # (resize and crop fused); decoding costs the most.
    op = {o: delta(key("sluice_op_duration_seconds_total", op=o)) for o in ("decode", "resize+crop", "normalize")}
    assert all(v > 0 for v in op.values()), op
    assert op["decode"] > op["normalize"], op
    # Other models' series are apart: the bytes model saw none of this.
    other = ("sluice_images_total", frozenset({("model", "preprocess_imagenet_bytes"), ("version", "1")}))
    assert after.get(other, 0.0) == before.get(other, 0.0)
