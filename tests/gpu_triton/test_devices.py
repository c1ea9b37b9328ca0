"""The per-GPU checks: preprocess_gpu's instances on every GPU of --gpus
(gpu_triton.sh's GT_GPUS), through the real tritonserver, after
test_checks.py's (its load, (f), feeds (g)):

  (g) sluice_gpu_decoded_images_total has a series for every GPU, each grown
      by the load before it (Triton spread the requests over the instances)
  (h) outputs in CUDA shared memory on each GPU (the client's, as a consumer
      on that GPU would hold them): every answer right; instances on that GPU
      wrote in place (no cross-device copy counted there), instances on other
      GPUs copied each image once (sluice_gpu_cross_device_copies_total
      equals the images they decoded)
  (i) unloading preprocess_gpu frees what it took on every GPU: free memory
      (cudaMemGetInfo, i.e. cuMemGetInfo) before its load and after its
      unload, the ensembles that use it unloaded first; all reloaded after

CUDA shared memory and memory queries go through CuPy (the GPU machine's
image has it); without it (h) and (i) fail saying so. Without preprocess_gpu
loaded they skip ((a) fails for it).
"""
import base64
import json
import threading
import time

import numpy as np
import pytest

from . import triton_client as tc
from .triton_client import STD, InferError

PIXELS = 3 * 224 * 224 * 4  # bytes of one image's PIXELS
SLOTS = 16  # requests in flight against one region, each its own slot
UNLOAD_SLACK = 16 << 20  # the driver's page granularity, not a leaked buffer
DECODED, COPIES = "sluice_gpu_decoded_images_total", "sluice_gpu_cross_device_copies_total"


def pytest_generate_tests(metafunc):
    if "gpu" in metafunc.fixturenames:
        gpus = metafunc.config.getoption("gpus", default=None) or "0"
        metafunc.parametrize("gpu", [int(g) for g in gpus.split(",")])


@pytest.fixture(autouse=True)
def needs_preprocess_gpu(report):
    if not report.gpu:
        pytest.skip("preprocess_gpu is not loaded: no per-GPU checks (a_gpu_matches_cpu fails for it)")


@pytest.fixture(scope="module")
def gpus(opts):
    return [int(g) for g in opts.gpus.split(",")]


def cupy_or_fail(report, check):
    """CuPy, or the check recorded as failed."""
    try:
        import cupy as cp
    except Exception as e:
        report.check(check, False, f"CuPy not importable: {e}")
    return cp


def free_memory(cp, gpus):
    out = {}
    for d in gpus:
        with cp.cuda.Device(d):
            out[d] = cp.cuda.runtime.memGetInfo()[0]
    return out


def shm_requests(grpc_hostport, region, files):
    """SLOTS requests at once, request k file k, its PIXELS into slot k of
    region; returns the errors."""
    import tritonclient.grpc as grpcclient

    errs = []
    lock = threading.Lock()

    def one(k):
        f = files[k % len(files)]
        data = open(f, "rb").read()
        cli = grpcclient.InferenceServerClient(grpc_hostport)
        x = grpcclient.InferInput("IMAGE", [1, len(data)], "UINT8")
        x.set_data_from_numpy(np.frombuffer(data, np.uint8).reshape(1, -1))
        out = grpcclient.InferRequestedOutput("PIXELS")
        out.set_shared_memory(region, PIXELS, offset=k * PIXELS)
        try:
            cli.infer("preprocess_gpu", [x], outputs=[out])
        except Exception as e:
            with lock:
                errs.append(f"{f}: {e}")

    ts = [threading.Thread(target=one, args=(k,)) for k in range(SLOTS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errs


def test_g_decoded_per_gpu(report, opts, gpus):
    dec = tc.series(opts.metrics, DECODED, "preprocess_gpu")
    report.R["decoded_by_gpu"] = dec
    report.check("g_decoded_per_gpu", all(dec.get(g, 0) > 0 for g in gpus),
                 f"{DECODED} of preprocess_gpu by gpu label: {dec} (want every one of {gpus} > 0)")


def test_h_cuda_shm_outputs(report, opts, files, gpus, gpu):
    """PIXELS into CUDA shared memory on GPU gpu, from the instances on every GPU."""
    cp = cupy_or_fail(report, "h_cuda_shm_outputs")
    import tritonclient.grpc as grpcclient

    ref_files = [f for f in files if f in report.pix_gpu][:SLOTS]
    if not ref_files:
        report.check("h_cuda_shm_outputs", False, "no reference PIXELS from check (a)")
    d = gpu
    cli = grpcclient.InferenceServerClient(opts.grpc)
    region = f"sluice_gpu{d}"
    with cp.cuda.Device(d):
        ptr = cp.cuda.runtime.malloc(SLOTS * PIXELS)
        try:
            cp.cuda.runtime.memset(ptr, 0xFF, SLOTS * PIXELS)
            handle = cp.cuda.runtime.ipcGetMemHandle(ptr)
            cli.register_cuda_shared_memory(region, base64.b64encode(bytes(handle)), d, SLOTS * PIXELS)
            dec0 = tc.series(opts.metrics, DECODED, "preprocess_gpu")
            cp0 = tc.series(opts.metrics, COPIES, "preprocess_gpu")
            errs = shm_requests(opts.grpc, region, ref_files)
            host = np.empty(SLOTS * PIXELS, np.uint8)
            cp.cuda.runtime.memcpy(host.ctypes.data, ptr, SLOTS * PIXELS, cp.cuda.runtime.memcpyDeviceToHost)
            # Metrics are recorded after the responses: wait for them.
            deadline = time.time() + 10
            while True:
                dec1 = tc.series(opts.metrics, DECODED, "preprocess_gpu")
                cp1 = tc.series(opts.metrics, COPIES, "preprocess_gpu")
                grown = sum(dec1.values()) - sum(dec0.values())
                if grown >= SLOTS - len(errs) or time.time() > deadline:
                    break
                time.sleep(0.1)
        finally:
            try:
                cli.unregister_cuda_shared_memory(region)
            finally:
                cp.cuda.runtime.free(ptr)
    worst = 0.0
    for k in range(SLOTS):
        got = host[k * PIXELS:(k + 1) * PIXELS].view(np.float32).reshape(3, 224, 224)
        want = report.pix_gpu[ref_files[k % len(ref_files)]]
        worst = max(worst, float(np.abs((got - want) * STD * 255).mean()))
    ddec = {g: dec1.get(g, 0) - dec0.get(g, 0) for g in gpus}
    dcp = {g: cp1.get(g, 0) - cp0.get(g, 0) for g in gpus}
    others_dec = sum(v for g, v in ddec.items() if g != d)
    others_cp = sum(v for g, v in dcp.items() if g != d)
    ok = (not errs and worst <= 0.25 and dcp.get(d, 0) == 0 and others_cp == others_dec
          and sum(ddec.values()) == SLOTS)
    report.R[f"cuda_shm_gpu{d}"] = {"decoded": ddec, "copies": dcp, "worst_mean": worst, "errors": errs[:3]}
    report.check(f"h_cuda_shm_outputs_gpu{d}", ok,
                 f"{SLOTS} requests, PIXELS in CUDA shared memory on GPU {d}: images decoded by gpu {ddec}, "
                 f"cross-device copies by gpu {dcp} (want 0 on {d}, the other GPUs' images elsewhere); "
                 f"worst mean |diff| vs HTTP {worst:.3f}" + (f"; errors: {errs[:3]}" if errs else ""))


def test_i_unload_frees_gpu_memory(report, opts, files, gpus):
    """Unload: the ensembles first, then the preprocess models; all loaded again after."""
    cp = cupy_or_fail(report, "i_unload_frees_gpu_memory")
    users = ["ensemble_gpu", "ensemble_gpu_bytes", "preprocess_gpu_bytes", "preprocess_gpu"]
    detail = []
    try:
        for m in users:
            tc.repository(opts.http, "unload", m)
        tc.wait_until(lambda: not any(tc.ready(opts.http, m) for m in users), 120)
        time.sleep(3)
        before = free_memory(cp, gpus)
        tc.repository(opts.http, "load", "preprocess_gpu")
        for f in files[:64]:
            try:
                tc.grpc_infer(opts.grpc, "preprocess_gpu", [open(f, "rb").read()], ["PIXELS"])
            except InferError:
                pass  # a file's failure is not what this checks
        loaded = free_memory(cp, gpus)
        tc.repository(opts.http, "unload", "preprocess_gpu")
        tc.wait_until(lambda: not tc.ready(opts.http, "preprocess_gpu"), 120)
        time.sleep(3)
        after = free_memory(cp, gpus)
        mib = lambda v: round(v / 2**20)  # noqa: E731
        rows = {d: {"before_load": mib(before[d]), "loaded": mib(loaded[d]), "after_unload": mib(after[d])}
                for d in gpus}
        report.R["unload_free_mib"] = rows
        ok = all(after[d] + UNLOAD_SLACK >= before[d] for d in gpus)
        detail.append(f"free MiB per GPU {json.dumps(rows)}; allowed {UNLOAD_SLACK >> 20} MiB less after unload")
    except Exception as e:
        ok = False
        detail.append(f"{type(e).__name__}: {e}")
    finally:
        for m in reversed(users):
            try:
                tc.repository(opts.http, "load", m)
            except Exception as e:
                detail.append(f"reload {m}: {e}")
    report.check("i_unload_frees_gpu_memory", ok, "; ".join(detail))
