"""The per-GPU checks of scripts/gpu_triton_check.py: preprocess_gpu's
instances on every GPU of --gpus (gpu_triton.sh's GT_GPUS), through the
real tritonserver.

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
image has it); without it (h) and (i) fail saying so.
"""
import base64
import json
import re
import threading
import time
import urllib.request

import numpy as np

from gpu_triton_check import InferError, get, grpc_infer

PIXELS = 3 * 224 * 224 * 4  # bytes of one image's PIXELS
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
SLOTS = 16  # requests in flight against one region, each its own slot
UNLOAD_SLACK = 16 << 20  # the driver's page granularity, not a leaked buffer


def series(metrics_hostport, family, model):
    """{gpu: value} of a family's series for a model, summed over its other labels."""
    _, text = get(f"http://{metrics_hostport}/metrics", timeout=10)
    out = {}
    for line in text.splitlines():
        if not line.startswith(family + "{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        if labels.get("model") != model:
            continue
        g = int(labels.get("gpu", -1))
        out[g] = out.get(g, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def repository(http_hostport, action, model):
    req = urllib.request.Request(f"http://{http_hostport}/v2/repository/models/{model}/{action}", data=b"{}",
                                 method="POST")
    with urllib.request.urlopen(req, timeout=300) as r:
        return r.status


def ready(http_hostport, model):
    return get(f"http://{http_hostport}/v2/models/{model}/ready")[0] == 200


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


def check_devices(a, gpus, files, pix_gpu, check, R):
    fam_dec, fam_copies = "sluice_gpu_decoded_images_total", "sluice_gpu_cross_device_copies_total"
    dec = series(a.metrics, fam_dec, "preprocess_gpu")
    R["decoded_by_gpu"] = dec
    check("g_decoded_per_gpu", all(dec.get(g, 0) > 0 for g in gpus),
          f"{fam_dec} of preprocess_gpu by gpu label: {dec} (want every one of {gpus} > 0)")

    try:
        import cupy as cp
    except Exception as e:
        check("h_cuda_shm_outputs", False, f"CuPy not importable: {e}")
        check("i_unload_frees_gpu_memory", False, f"CuPy not importable: {e}")
        return
    import tritonclient.grpc as grpcclient

    ref_files = [f for f in files if f in pix_gpu][:SLOTS]
    if not ref_files:
        check("h_cuda_shm_outputs", False, "no reference PIXELS from check (a)")
    for d in gpus if ref_files else []:
        cli = grpcclient.InferenceServerClient(a.grpc)
        region = f"sluice_gpu{d}"
        with cp.cuda.Device(d):
            ptr = cp.cuda.runtime.malloc(SLOTS * PIXELS)
            try:
                cp.cuda.runtime.memset(ptr, 0xFF, SLOTS * PIXELS)
                handle = cp.cuda.runtime.ipcGetMemHandle(ptr)
                cli.register_cuda_shared_memory(region, base64.b64encode(bytes(handle)), d, SLOTS * PIXELS)
                dec0 = series(a.metrics, fam_dec, "preprocess_gpu")
                cp0 = series(a.metrics, fam_copies, "preprocess_gpu")
                errs = shm_requests(a.grpc, region, ref_files)
                host = np.empty(SLOTS * PIXELS, np.uint8)
                cp.cuda.runtime.memcpy(host.ctypes.data, ptr, SLOTS * PIXELS, cp.cuda.runtime.memcpyDeviceToHost)
                # Metrics are recorded after the responses: wait for them.
                deadline = time.time() + 10
                while True:
                    dec1 = series(a.metrics, fam_dec, "preprocess_gpu")
                    cp1 = series(a.metrics, fam_copies, "preprocess_gpu")
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
            want = pix_gpu[ref_files[k % len(ref_files)]]
            worst = max(worst, float(np.abs((got - want) * STD * 255).mean()))
        ddec = {g: dec1.get(g, 0) - dec0.get(g, 0) for g in gpus}
        dcp = {g: cp1.get(g, 0) - cp0.get(g, 0) for g in gpus}
        others_dec = sum(v for g, v in ddec.items() if g != d)
        others_cp = sum(v for g, v in dcp.items() if g != d)
        ok = (not errs and worst <= 0.25 and dcp.get(d, 0) == 0 and others_cp == others_dec
              and sum(ddec.values()) == SLOTS)
        R[f"cuda_shm_gpu{d}"] = {"decoded": ddec, "copies": dcp, "worst_mean": worst, "errors": errs[:3]}
        check(f"h_cuda_shm_outputs_gpu{d}", ok,
              f"{SLOTS} requests, PIXELS in CUDA shared memory on GPU {d}: images decoded by gpu {ddec}, "
              f"cross-device copies by gpu {dcp} (want 0 on {d}, the other GPUs' images elsewhere); "
              f"worst mean |diff| vs HTTP {worst:.3f}" + (f"; errors: {errs[:3]}" if errs else ""))

    # (i) unload: the ensembles first, then the preprocess models.
    users = ["ensemble_gpu", "ensemble_gpu_bytes", "preprocess_gpu_bytes", "preprocess_gpu"]
    detail = []
    try:
        for m in users:
            repository(a.http, "unload", m)
        wait_until(lambda: not any(ready(a.http, m) for m in users), 120)
        time.sleep(3)
        before = free_memory(cp, gpus)
        repository(a.http, "load", "preprocess_gpu")
        for f in files[:64]:
            try:
                grpc_infer(a.grpc, "preprocess_gpu", [open(f, "rb").read()], ["PIXELS"])
            except InferError:
                pass  # a file's failure is not what this checks
        loaded = free_memory(cp, gpus)
        repository(a.http, "unload", "preprocess_gpu")
        wait_until(lambda: not ready(a.http, "preprocess_gpu"), 120)
        time.sleep(3)
        after = free_memory(cp, gpus)
        mib = lambda v: round(v / 2**20)  # noqa: E731
        rows = {d: {"before_load": mib(before[d]), "loaded": mib(loaded[d]), "after_unload": mib(after[d])}
                for d in gpus}
        R["unload_free_mib"] = rows
        ok = all(after[d] + UNLOAD_SLACK >= before[d] for d in gpus)
        detail.append(f"free MiB per GPU {json.dumps(rows)}; allowed {UNLOAD_SLACK >> 20} MiB less after unload")
    except Exception as e:
        ok = False
        detail.append(f"{type(e).__name__}: {e}")
    finally:
        for m in reversed(users):
            try:
                repository(a.http, "load", m)
            except Exception as e:
                detail.append(f"reload {m}: {e}")
    check("i_unload_frees_gpu_memory", ok, "; ".join(detail))


def wait_until(cond, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise TimeoutError(f"not done in {seconds} s")
