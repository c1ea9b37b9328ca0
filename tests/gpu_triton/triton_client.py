"""The client side of the GPU-machine Triton checks (this folder's tests):
requests over HTTP (the binary extension; numpy only) and gRPC
(tritonclient, imported when used), metrics, model control, and the
concurrent load of check (f).
"""
import http.client
import json
import multiprocessing as mp
import struct
import threading
import time
import urllib.error
import urllib.request

import numpy as np

# The metrics text parser tests/triton shares. Not through tests/triton/helpers.py, which
# imports tritonclient.http: the GPU machine's carried tritonclient leaves it out (it needs gevent).
from .. import metrics_text

# ImageNet normalisation of the shipped pipeline: PIXELS * STD + MEAN is the 0..1 image.
MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
DTYPES = {"FP32": np.float32, "INT32": np.int32, "BOOL": np.bool_, "UINT8": np.uint8}


class InferError(Exception):
    pass


def http_body(rows, outputs):
    """An inference request with the binary extension: [B, N] UINT8 IMAGE."""
    data = np.stack([np.frombuffer(r, np.uint8) for r in rows])
    hdr = json.dumps({
        "inputs": [{"name": "IMAGE", "shape": list(data.shape), "datatype": "UINT8",
                    "parameters": {"binary_data_size": data.nbytes}}],
        "outputs": [{"name": o, "parameters": {"binary_data": True}} for o in outputs],
    }).encode()
    return hdr, hdr + data.tobytes()


def bytes_body(rows, outputs):
    """An inference request with the binary extension: [B, 1] BYTES IMAGE."""
    data = b"".join(struct.pack("<I", len(r)) + r for r in rows)
    hdr = json.dumps({
        "inputs": [{"name": "IMAGE", "shape": [len(rows), 1], "datatype": "BYTES",
                    "parameters": {"binary_data_size": len(data)}}],
        "outputs": [{"name": o, "parameters": {"binary_data": True}} for o in outputs],
    }).encode()
    return hdr, hdr + data


def tensors_body(inputs, outputs):
    """An inference request with the binary extension: {name: array} as they
    are (UINT8, FP32, INT32)."""
    names = {np.dtype(np.uint8): "UINT8", np.dtype(np.float32): "FP32", np.dtype(np.int32): "INT32"}
    arrs = {k: np.ascontiguousarray(v) for k, v in inputs.items()}
    hdr = json.dumps({
        "inputs": [{"name": k, "shape": list(a.shape), "datatype": names[a.dtype],
                    "parameters": {"binary_data_size": a.nbytes}} for k, a in arrs.items()],
        "outputs": [{"name": o, "parameters": {"binary_data": True}} for o in outputs],
    }).encode()
    return hdr, hdr + b"".join(a.tobytes() for a in arrs.values())


def grpc_result(hostport, model, inputs, outputs):
    """One request of {name: array} over gRPC (tritonclient), asking for
    outputs: tritonclient's InferResult."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException, np_to_triton_dtype
    cli = grpcclient.InferenceServerClient(hostport)
    xs = []
    for k, a in inputs.items():
        x = grpcclient.InferInput(k, list(a.shape), np_to_triton_dtype(a.dtype))
        x.set_data_from_numpy(np.ascontiguousarray(a))
        xs.append(x)
    try:
        return cli.infer(model, xs, outputs=[grpcclient.InferRequestedOutput(o) for o in outputs])
    except InferenceServerException as e:
        raise InferError(str(e))


def grpc_tensors(hostport, model, inputs, outputs):
    """One request of {name: array} over gRPC (tritonclient): {name: array}."""
    r = grpc_result(hostport, model, inputs, outputs)
    return {o: r.as_numpy(o) for o in outputs}


def http_infer(conn, model, rows, outputs, body=None):
    hdr, payload = body or http_body(rows, outputs)
    conn.request("POST", f"/v2/models/{model}/infer", payload,
                 {"Inference-Header-Content-Length": str(len(hdr)), "Content-Type": "application/octet-stream"})
    resp = conn.getresponse()
    raw = resp.read()
    n = resp.getheader("Inference-Header-Content-Length")
    if n is None and raw[:1] == b"{":
        # No length header: the JSON header ends where its object does.
        _, end = json.JSONDecoder().raw_decode(raw.decode("latin-1"))
        n = str(end) if end < len(raw) else None
    head = json.loads(raw[: int(n)] if n else raw)
    if resp.status != 200:
        raise InferError(head.get("error", raw[:300].decode(errors="replace")))
    res = {}
    if n is None:  # small outputs may come back as JSON data
        if any("data" not in o for o in head["outputs"]):
            raise InferError(f"response without data or binary header: {raw[:300]!r}")
        for o in head["outputs"]:
            res[o["name"]] = np.array(o["data"], DTYPES[o["datatype"]]).reshape(o["shape"])
        return res
    off = int(n)
    for o in head["outputs"]:
        size = o["parameters"]["binary_data_size"]
        res[o["name"]] = np.frombuffer(raw[off: off + size], DTYPES[o["datatype"]]).reshape(o["shape"])
        off += size
    return res


def grpc_infer(hostport, model, rows, outputs):
    """One request over gRPC (tritonclient): {name: array}."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException
    cli = grpcclient.InferenceServerClient(hostport)
    x = grpcclient.InferInput("IMAGE", [len(rows), len(rows[0])], "UINT8")
    x.set_data_from_numpy(np.stack([np.frombuffer(r, np.uint8) for r in rows]))
    try:
        r = cli.infer(model, [x], outputs=[grpcclient.InferRequestedOutput(o) for o in outputs])
    except InferenceServerException as e:
        raise InferError(str(e))
    return {o: r.as_numpy(o) for o in outputs}


def get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except Exception as e:  # connection refused, timeout
        return 0, str(e)


def ready(http_hostport, model):
    return get(f"http://{http_hostport}/v2/models/{model}/ready")[0] == 200


def repository(http_hostport, action, model):
    """Model control: action is load or unload."""
    req = urllib.request.Request(f"http://{http_hostport}/v2/repository/models/{model}/{action}", data=b"{}",
                                 method="POST")
    with urllib.request.urlopen(req, timeout=300) as r:
        return r.status


def wait_until(cond, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise TimeoutError(f"not done in {seconds} s")


def parse_metrics(text, family):
    """[(labels, value, line)] of the samples of one family in Prometheus text
    (comments and other families skipped; labels a dict)."""
    return [(labels, v, line) for name, labels, v, line in metrics_text.parse(text) if name == family]


def samples(metrics_hostport, family):
    """parse_metrics of the server's /metrics; none when it cannot be read."""
    st, text = get(f"http://{metrics_hostport}/metrics", timeout=10)
    return parse_metrics(text, family) if st == 200 else []


def decoded_metric(metrics_hostport):
    """sluice_gpu_decoded_images_total summed over its series, and the series' lines."""
    s = samples(metrics_hostport, "sluice_gpu_decoded_images_total")
    return sum(v for _, v, _ in s), [line for _, _, line in s]


def series(metrics_hostport, family, model, **want):
    """{gpu: value} of a family's series for a model (and the labels in want),
    summed over its other labels."""
    out = {}
    for labels, v, _ in samples(metrics_hostport, family):
        if labels.get("model") != model or any(labels.get(k) != w for k, w in want.items()):
            continue
        g = int(labels.get("gpu", -1))
        out[g] = out.get(g, 0.0) + v
    return out


def repository_index(http_hostport):
    """The repository's models, each {name, version, state, reason}."""
    req = urllib.request.Request(f"http://{http_hostport}/v2/repository/index", data=b"{}", method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def model_config(http_hostport, model):
    """The model's configuration as the server holds it (JSON)."""
    with urllib.request.urlopen(f"http://{http_hostport}/v2/models/{model}/config", timeout=30) as r:
        return json.loads(r.read())


# ---------------------------------------------------------------- load
def _worker(args):
    model, batch, seconds, threads, proto, hostport, files, start_at, wid, outputs = args
    rows_of = []
    for i in range(len(files)):
        data = open(files[(i + wid) % len(files)], "rb").read()
        rows_of.append([data] * batch)  # B copies: a [B, N] request needs equal sizes
    counts = {"ok": 0, "err": 0, "lat": [], "first_err": None}
    lock = threading.Lock()
    stop_at = start_at + seconds

    def run_thread(tid):
        k = tid
        if proto == "grpc":
            import tritonclient.grpc as grpcclient
            cli = grpcclient.InferenceServerClient(hostport)
            reqs = []
            for rows in rows_of:
                x = grpcclient.InferInput("IMAGE", [batch, len(rows[0])], "UINT8")
                x.set_data_from_numpy(np.stack([np.frombuffer(r, np.uint8) for r in rows]))
                reqs.append(x)
            outs = [grpcclient.InferRequestedOutput(o) for o in outputs]

            def call(i):
                cli.infer(model, [reqs[i]], outputs=outs)
        else:
            conn = http.client.HTTPConnection(hostport, timeout=60)
            bodies = [http_body(rows, outputs) for rows in rows_of]

            def call(i):
                http_infer(conn, model, None, outputs, bodies[i])
        while time.time() < start_at:
            time.sleep(0.001)
        while True:
            t0 = time.time()
            if t0 >= stop_at:
                break
            try:
                call(k % len(rows_of))
                t1 = time.time()
                with lock:
                    if t1 <= stop_at:
                        counts["ok"] += 1
                        counts["lat"].append(t1 - t0)
            except Exception as e:  # count and go on: a failing model shows as errors
                with lock:
                    counts["err"] += 1
                    counts["first_err"] = counts["first_err"] or str(e)[:300]
                time.sleep(0.01)
            k += threads

    ts = [threading.Thread(target=run_thread, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return counts


def load(model, batch, seconds, procs, threads, proto, hostport, files, outputs):
    """procs processes of threads clients each, for seconds: requests, infer/s, images/s, p50, p99."""
    ctx = mp.get_context("spawn")
    start_at = time.time() + 4  # the workers import and build their requests first
    with ctx.Pool(procs) as pool:
        res = pool.map(_worker, [(model, batch, seconds, threads, proto, hostport, files, start_at, w, outputs)
                                 for w in range(procs)])
    ok = sum(r["ok"] for r in res)
    err = sum(r["err"] for r in res)
    lat = sorted(x for r in res for x in r["lat"])
    first_err = next((r["first_err"] for r in res if r["first_err"]), None)
    p = lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 2) if lat else None  # noqa: E731
    return {"model": model, "batch": batch, "concurrency": procs * threads, "protocol": proto,
            "seconds": seconds, "requests": ok, "errors": err, "infer_per_s": round(ok / seconds, 1),
            "images_per_s": round(ok * batch / seconds, 1), "p50_ms": p(0.5), "p99_ms": p(0.99),
            "first_error": first_err}
