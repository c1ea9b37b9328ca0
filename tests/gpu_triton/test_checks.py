"""Checks and throughput of Sluice's KIND_GPU models in a real tritonserver
(conftest.py says how scripts/gpu_triton.sh runs them). The checks need
only numpy (HTTP with the binary extension); the load uses gRPC through
tritonclient when it imports, else HTTP. In order, each test one check:

  (a) preprocess_gpu against preprocess_cpu on every corpus file (JPEGs and
      the other formats gpu_triton.sh build makes)
  (b) random bytes to preprocess_gpu: an error that names the cause; the server stays up
  (c) ensemble_gpu's MEAN equals the mean of preprocess_gpu's PIXELS
  (d) whether consumer_gpu received GPU tensors (ON_GPU)
  (e) sluice_gpu_decoded_images_total grew
  (f) infer/s and images/s under concurrent load (recorded, never failed)
  (g)-(i) per GPU: test_devices.py
"""
import os

import numpy as np
import pytest

from . import triton_client as tc
from .triton_client import MEAN, STD, InferError

MEAN_BOUND, MAX_BOUND = 0.25, 4  # GPU vs CPU on the 0..255 scale, per image


def test_a_gpu_matches_cpu(report, conn, files):
    """GPU against CPU, on the 0..255 scale."""
    if not (report.gpu and report.R["models"]["preprocess_cpu"]):
        report.check("a_gpu_matches_cpu", False, "preprocess_gpu or preprocess_cpu not loaded")
    rows, errs = [], []
    for f in files:
        data = open(f, "rb").read()
        try:
            g = tc.http_infer(conn, "preprocess_gpu", [data], ["PIXELS"])["PIXELS"][0]
            c = tc.http_infer(conn, "preprocess_cpu", [data], ["PIXELS"])["PIXELS"][0]
        except InferError as e:
            errs.append(f"{os.path.basename(f)}: {e}")
            continue
        report.pix_gpu[f] = g
        d = np.abs((g * STD + MEAN) * 255 - (c * STD + MEAN) * 255)
        rows.append({"file": os.path.basename(f), "mean_abs": float(d.mean()), "max_abs": float(d.max())})
    report.R["gpu_vs_cpu"] = rows
    # IDCT rounding: measured on an H200 worst mean |diff| 0.11, max 3
    # (README); the bounds of executor/gpu's TestGPUMatchesCPU.
    bad = [r for r in rows if r["mean_abs"] > MEAN_BOUND or r["max_abs"] > MAX_BOUND]
    mx = max((r["max_abs"] for r in rows), default=0)
    mm = max((r["mean_abs"] for r in rows), default=0)
    report.check("a_gpu_matches_cpu", not bad and not errs and rows,
                 f"{len(rows)} files, worst mean |diff| {mm:.3f}, worst max {mx:.1f} (limits {MEAN_BOUND}, {MAX_BOUND})"
                 + (f"; over the limits: {[(r['file'], round(r['mean_abs'], 3), round(r['max_abs'], 1)) for r in bad]}"
                    if bad else "")
                 + (f"; errors: {errs[:5]}" if errs else ""))


def test_b_broken_input(report, opts, conn, files):
    target = "preprocess_gpu" if report.gpu else "preprocess_cpu"
    junk = np.random.default_rng(1).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    try:
        tc.http_infer(conn, target, [junk], ["PIXELS"])
        report.check("b_broken_input", False, f"{target} accepted random bytes")
    except InferError as e:
        st, _ = tc.get(f"http://{opts.http}/v2/health/live")
        st2, _ = tc.get(f"http://{opts.http}/v2/models/{target}/ready")
        still = None
        if files:
            try:
                tc.http_infer(conn, target, [open(files[0], "rb").read()], ["PIXELS"])
                still = True
            except InferError as e2:
                still = f"no: {e2}"
        report.check("b_broken_input" + ("" if report.gpu else "_cpu_only"),
                     st == 200 and st2 == 200 and still is True,
                     f"{target} error: {str(e)[:200]!r}; server live {st == 200}, model ready {st2 == 200}, "
                     f"next request ok {still}")
    except Exception as e:
        report.check("b_broken_input", False, f"{target}: {type(e).__name__}: {e}")


@pytest.mark.parametrize("ens, pre", [("ensemble_gpu", "preprocess_gpu"), ("ensemble_cpu", "preprocess_cpu")])
def test_c_ensemble(report, opts, conn, files, ens, pre):
    """The ensemble's MEAN against the mean of its preprocess model's PIXELS."""
    if not report.R["models"][ens]:
        report.check(f"c_{ens}", False, f"{ens} not loaded")
    errs, worst, flags = [], 0.0, set()
    for f in files[:16]:
        data = open(f, "rb").read()
        try:
            r = tc.grpc_infer(opts.grpc, ens, [data], ["MEAN", "ON_GPU"])
            p = report.pix_gpu.get(f) if pre == "preprocess_gpu" else None
            if p is None:
                p = tc.http_infer(conn, pre, [data], ["PIXELS"])["PIXELS"][0]
        except InferError as e:
            errs.append(f"{os.path.basename(f)}: {e}")
            continue
        want = float(p.astype(np.float64).mean())
        worst = max(worst, abs(float(r["MEAN"][0, 0]) - want))
        flags.add(int(r["ON_GPU"][0, 0]))
    report.R[f"{ens}_on_gpu"] = sorted(flags)
    seen = {1: "yes", 0: "no"}.get(next(iter(flags)), "?") if len(flags) == 1 else sorted(flags)
    report.say(f"{'INFO' if ens == 'ensemble_cpu' else 'RESULT'} d_{ens}: consumer saw GPU tensors: {seen}")
    report.check(f"c_{ens}", not errs and worst < 1e-4,
                 f"MEAN vs mean(PIXELS of {pre}) worst |diff| {worst:.2e} over {min(16, len(files))} files"
                 + (f"; errors: {errs[:3]}" if errs else ""))


def test_d_consumer_gpu_saw_gpu_tensors(report):
    report.check("d_consumer_gpu_saw_gpu_tensors", report.R.get("ensemble_gpu_on_gpu") == [1],
                 f"ON_GPU flags consumer_gpu reported: {report.R.get('ensemble_gpu_on_gpu')} (want [1])")


def test_e_gpu_decoded_metric(report, opts):
    dec1, lines = tc.decoded_metric(opts.metrics)
    report.R["decoded_metric"] = lines
    report.check("e_gpu_decoded_metric", dec1 > report.decoded_before,
                 f"sluice_gpu_decoded_images_total {report.decoded_before:g} -> {dec1:g}: {lines}")


def test_f_load(report, opts, files):
    """Throughput under load: recorded in the report, never a failure."""
    try:
        import tritonclient.grpc  # noqa: F401
        proto, hostport = "grpc", opts.grpc
    except Exception as e:
        report.say(f"tritonclient.grpc not importable ({e}): HTTP load")
        proto, hostport = "http", opts.http
    batches = [int(b) for b in opts.batches.split(",") if b]
    for m, outs in (("preprocess_gpu", ["PIXELS"]), ("preprocess_cpu", ["PIXELS"]),
                    ("ensemble_gpu", ["MEAN", "ON_GPU"]), ("ensemble_cpu", ["MEAN", "ON_GPU"])):
        if not report.R["models"][m] or opts.seconds <= 0:
            continue
        for b in batches:
            r = tc.load(m, b, opts.seconds, opts.procs, opts.threads, proto, hostport, files, outs)
            report.R["load"].append(r)
            report.say(f"load {m} b{b} c{r['concurrency']} {proto}: {r['infer_per_s']} infer/s, {r['images_per_s']} img/s, "
                  f"p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, errors {r['errors']}"
                  + (f" ({r['first_error']})" if r["first_error"] else ""))
    _, lines = tc.decoded_metric(opts.metrics)
    report.R["decoded_metric_after_load"] = lines
