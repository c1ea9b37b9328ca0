"""The perf_analyzer step's check (scripts/gpu_triton.sh, GT_PERF=1): does
the server read what perf_analyzer sends as the images themselves? One batch
of 8 of the JPEGs in --corpus to each model of --perf-models, in the form
perf_analyzer sends it (a *_bytes model: BYTES elements; else UINT8 rows
zero-padded to the largest file's size, as tests.gpu_triton.perf's input
data pads them), against each JPEG alone and unpadded to the UINT8 model of
the same kind: the pixels must agree. Skips without --perf-models.
"""
import glob
import os

import numpy as np
import pytest

from . import triton_client as tc
from .triton_client import MEAN, STD, InferError

MEAN_LIMIT, MAX_LIMIT = 0.5, 4  # levels of the 8-bit image


@pytest.fixture
def perf_models(request, opts):
    models = request.config.getoption("perf_models", default=None)
    if not models:
        pytest.skip("no --perf-models: gpu_triton.sh's perf_analyzer step (GT_PERF=1) runs this")
    return models.split(",")


def test_perf_inputs(opts, conn, perf_models, say):
    files = sorted(glob.glob(os.path.join(opts.corpus, "*.jp*g")))
    if not files:
        pytest.fail(f"no JPEGs in {opts.corpus}", pytrace=False)
    width = max(os.path.getsize(f) for f in files)  # perf_data.py --pad pads to the largest
    rows = [open(f, "rb").read() for f in files[:: max(1, len(files) // 8)][:8]]
    failed = []
    for model in perf_models:
        single = model.removesuffix("_bytes")
        try:
            if model.endswith("_bytes"):
                form = "BYTES elements"
                got = tc.http_infer(conn, model, None, ["PIXELS"], tc.bytes_body(rows, ["PIXELS"]))["PIXELS"]
            else:
                form = f"UINT8 rows zero-padded to {width} bytes"
                got = tc.http_infer(conn, model, [r + bytes(width - len(r)) for r in rows], ["PIXELS"])["PIXELS"]
            want = np.stack([tc.http_infer(conn, single, [r], ["PIXELS"])["PIXELS"][0] for r in rows])
        except InferError as e:
            say(f"FAIL perf input {model}: {e}")
            failed.append(model)
            continue
        d = np.abs((got * STD + MEAN) - (want * STD + MEAN)) * 255
        ok = got.shape == want.shape and d.mean() <= MEAN_LIMIT and d.max() <= MAX_LIMIT
        if not ok:
            failed.append(model)
        say(f"{'PASS' if ok else 'FAIL'} perf input {model}: a batch of {len(rows)} as {form} against each "
                    f"image alone to {single}: mean |diff| {d.mean():.3f}, max {d.max():.1f} levels "
                    f"(limits {MEAN_LIMIT}, {MAX_LIMIT})")
    assert not failed, f"perf_analyzer's inputs read wrong by {failed}"
