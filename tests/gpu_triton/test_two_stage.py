"""Two-stage pipelines on KIND_GPU instances through the real tritonserver
(scripts/gpu_triton.sh writes the models from model_repository's
preprocess_crops and preprocess_imagenet_decoded, and tests/gpu_triton/models'
frames and ensemble_frames):

  (j) decoded images from the client: decoded_gpu equals decoded_cpu within
      float rounding, over HTTP and gRPC; they count as path "input"
  (k) decoded images an upstream model leaves in GPU memory (frames_gpu, a
      Python model returning CUDA tensors, in ensemble_frames): decoded_gpu
      reads them in place (path "device") and answers what it answers for the
      same pixels sent from the client, byte for byte
  (l) box crops: crops_gpu against crops_cpu over HTTP and gRPC, the counts
      equal, every crop within the JPEG decode's rounding, unused rows zeros
  (m) requested outputs: crops_gpu returns only the outputs a request names,
      over HTTP and gRPC, equal to crops_cpu's
"""
import os

import numpy as np
import pytest

from . import triton_client as tc
from .triton_client import MEAN, STD

DECODED = "sluice_gpu_decoded_images_total"
MEAN_BOUND, MAX_BOUND = 0.25, 4  # as test_checks.py's (a), per image or crop, 0..255 scale
# x1, y1, x2, y2 relative; the second reaches past the edges, the third is NaN (unused).
BOXES = np.array([[0.1, 0.1, 0.6, 0.5], [0.5, 0.6, 1.1, 1.05], [np.nan, 0, 1, 1], [0.2, 0.2, 0.4, 0.9],
                  [0, 0, 1, 1], [0.3, 0.3, 0.35, 0.8], [0.6, 0.1, 0.9, 0.3], [0.05, 0.4, 0.95, 0.6]], np.float32)


@pytest.fixture(scope="module")
def jpegs(files):
    return [f for f in files if f.endswith(".jpg")][:12]


def need(report, *models):
    missing = [m for m in models if not tc.ready(report.config.option.http, m)]
    if missing:
        report.check("two_stage_models", False, f"not loaded: {missing} (see tritonserver.log)")


def rgb(path):
    import cv2  # the GPU machine has OpenCV; CI only collects this file

    return cv2.cvtColor(cv2.imread(path, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def levels(p):
    return (p * STD + MEAN) * 255


def path_count(opts, model, path):
    return sum(tc.series(opts.metrics, DECODED, model, path=path).values())


def test_j_decoded_input(report, opts, conn, jpegs):
    need(report, "decoded_gpu", "decoded_cpu")
    before = path_count(opts, "decoded_gpu", "input")
    worst, sent = 0.0, 0
    for i, f in enumerate(jpegs):
        frame = rgb(f)[None]
        infer = (lambda m: tc.http_infer(conn, m, None, ["PIXELS"], body=tc.tensors_body({"FRAME": frame}, ["PIXELS"]))) \
            if i % 2 == 0 else (lambda m: tc.grpc_tensors(opts.grpc, m, {"FRAME": frame}, ["PIXELS"]))
        g, c = infer("decoded_gpu")["PIXELS"], infer("decoded_cpu")["PIXELS"]
        worst = max(worst, float(np.abs(levels(g) - levels(c)).max()))
        sent += 1
    grew = path_count(opts, "decoded_gpu", "input") - before
    report.check("j_decoded_input", worst <= 1.01 and grew == sent,
                 f"{sent} frames over HTTP and gRPC: max |GPU - CPU| {worst:.3f} levels (float rounding: <= 1); "
                 f"path \"input\" grew by {grew:g} (want {sent})")


def test_k_device_input(report, opts, conn, jpegs):
    need(report, "ensemble_frames", "frames_gpu", "decoded_gpu")
    before = {p: path_count(opts, "decoded_gpu", p) for p in ("device", "input")}
    diffs, sent = [], 0
    for f in jpegs:
        data = open(f, "rb").read()
        via = tc.http_infer(conn, "ensemble_frames", [data], ["PIXELS"])["PIXELS"]
        direct = tc.http_infer(conn, "decoded_gpu", None, ["PIXELS"],
                               body=tc.tensors_body({"FRAME": rgb(f)[None]}, ["PIXELS"]))["PIXELS"]
        if not np.array_equal(via, direct):
            diffs.append(f"{os.path.basename(f)}: max {float(np.abs(levels(via) - levels(direct)).max()):.3f}")
        sent += 1
    dev = path_count(opts, "decoded_gpu", "device") - before["device"]
    inp = path_count(opts, "decoded_gpu", "input") - before["input"]
    report.check("k_device_input", not diffs and dev == sent and inp == sent,
                 f"{sent} photos through ensemble_frames: read in place (path \"device\") {dev:g}, from the client "
                 f"(path \"input\") {inp:g} (want {sent} each); outputs equal byte for byte"
                 + (f"; differ: {diffs[:5]}" if diffs else ""))


def test_l_box_crops(report, opts, conn, jpegs):
    need(report, "crops_gpu", "crops_cpu")
    rows, bad, crops = 0, [], 0
    worst_mean, worst_max = 0.0, 0.0
    for i, f in enumerate(jpegs):
        data = np.frombuffer(open(f, "rb").read(), np.uint8)[None]
        inputs = {"IMAGE": data, "BOXES": BOXES[None], "COUNT": np.array([[7 - i % 3]], np.int32)}
        outs = ["CROPS", "NUM_CROPS"]
        infer = (lambda m: tc.http_infer(conn, m, None, outs, body=tc.tensors_body(inputs, outs))) \
            if i % 2 == 0 else (lambda m: tc.grpc_tensors(opts.grpc, m, inputs, outs))
        g, c = infer("crops_gpu"), infer("crops_cpu")
        if int(g["NUM_CROPS"].ravel()[0]) != int(c["NUM_CROPS"].ravel()[0]):
            bad.append(f"{os.path.basename(f)}: count {g['NUM_CROPS'].ravel()} vs {c['NUM_CROPS'].ravel()}")
        for k in range(BOXES.shape[0]):
            gk, ck = g["CROPS"][0, k], c["CROPS"][0, k]
            if not ck.any():
                if gk.any():
                    bad.append(f"{os.path.basename(f)}: crop {k} zeros on the CPU only")
                continue
            d = np.abs(levels(gk) - levels(ck))
            worst_mean, worst_max = max(worst_mean, float(d.mean())), max(worst_max, float(d.max()))
            if d.mean() > MEAN_BOUND or d.max() > MAX_BOUND:
                bad.append(f"{os.path.basename(f)}: crop {k}: mean {d.mean():.3f}, max {d.max():.1f}")
            crops += 1
        rows += 1
    report.check("l_box_crops", not bad and crops > 0,
                 f"{rows} photos, {crops} crops over HTTP and gRPC: worst mean |GPU - CPU| {worst_mean:.3f}, worst max "
                 f"{worst_max:.1f} (limits {MEAN_BOUND}, {MAX_BOUND}); counts equal" + (f"; {bad[:5]}" if bad else ""))


def test_m_requested_outputs(report, opts, conn, jpegs):
    """A KIND_GPU model returns only the outputs a request names, over HTTP
    and gRPC, each equal to the CPU model's (the crops are never sent when
    only the count or the boxes are asked for)."""
    need(report, "crops_gpu", "crops_cpu")
    bad, asked = [], 0
    for i, f in enumerate(jpegs[:6]):
        data = np.frombuffer(open(f, "rb").read(), np.uint8)[None]
        inputs = {"IMAGE": data, "BOXES": BOXES[None], "COUNT": np.array([[7 - i % 3]], np.int32)}
        for outs in (["NUM_CROPS"], ["CROP_BOXES", "NUM_CROPS"]):
            g = tc.http_infer(conn, "crops_gpu", None, outs, body=tc.tensors_body(inputs, outs))
            c = tc.http_infer(conn, "crops_cpu", None, outs, body=tc.tensors_body(inputs, outs))
            names = sorted(o.name for o in tc.grpc_result(opts.grpc, "crops_gpu", inputs, outs).get_response().outputs)
            if sorted(g) != sorted(outs) or names != sorted(outs):
                bad.append(f"{os.path.basename(f)}: asked {outs}, HTTP returned {sorted(g)}, gRPC {names}")
                continue
            for o in outs:
                if not np.array_equal(g[o], c[o], equal_nan=True):
                    bad.append(f"{os.path.basename(f)}: {o} {g[o].ravel()[:8]} on the GPU, {c[o].ravel()[:8]} on the CPU")
            asked += 1
    report.check("m_requested_outputs", not bad and asked > 0,
                 f"{asked} requests of a subset of crops_gpu's outputs over HTTP and gRPC: only those returned, "
                 f"equal to crops_cpu's" + (f"; {bad[:5]}" if bad else ""))
