"""Helpers shared by the tests against a real tritonserver (see conftest.py)."""

import http.client
import io
import json
import pathlib
import sys
import threading
import time

import numpy as np
import onnxruntime as ort
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from tests import metrics_text

TIMEOUT_S = 300  # per request: generous, two shared cores

IMAGENET = "preprocess_imagenet"
BYTES_MODEL = "preprocess_imagenet_bytes"  # preprocess_imagenet's pipeline, KIND_CPU, BYTES input
# Models the Sluice tests need, loaded once per session (the ensemble loads
# its steps too).
SLUICE_MODELS = [IMAGENET, "preprocess_letterbox", BYTES_MODEL, "ensemble_imagenet"]
BROKEN_OP = "resise"  # the typo preprocess_broken's pipeline carries
PROTOCOLS = [("grpc", grpcclient), ("http", httpclient)]
# A refusal before decode takes milliseconds; a decode of hostile files,
# seconds. Not a speed test: beyond this the check did not run first.
REFUSED_WITHIN_S = 2.0


def synthetic_rgb(rng, h, w):
    """A photo-like test image: smooth colour fields, edges, a little noise."""
    cell = int(rng.integers(8, 40))
    low = rng.random((h // cell + 2, w // cell + 2, 3))
    img = np.kron(low, np.ones((cell, cell, 1)))[:h, :w] * 180
    y, x = np.mgrid[0:h, 0:w]
    img += (x * 60 / w)[..., None] + (y * 20 / h)[..., None] + rng.normal(0, 6, (h, w, 3))
    return img.clip(0, 255).astype(np.uint8)


def make_synthetic(folder, n=40, seed=0):
    """n images of varied sizes and encodings (JPEG baseline/progressive,
    4:2:0/4:2:2/4:4:4, grey; PNG RGB/RGBA/grey/palette), then one large
    JPEG, written to folder; their paths in that order. For runs without
    the photo corpus."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        h, w = int(rng.integers(120, 640)), int(rng.integers(120, 640))
        im = Image.fromarray(synthetic_rgb(rng, h, w))
        if i % 5 == 4:
            mode = ["RGB", "RGBA", "L", "P"][(i // 5) % 4]
            im = im.convert(mode) if mode != "P" else im.quantize(64)
            p = folder / f"syn{i:02d}_{w}x{h}_{mode.lower()}.png"
            im.save(p, "PNG")
        else:
            grey = i % 7 == 3
            prog = i % 3 == 1
            sub = int(rng.integers(0, 3))
            if grey:
                im = im.convert("L")
            p = folder / f"syn{i:02d}_{w}x{h}_{'grey' if grey else 's%d' % sub}{'_prog' if prog else ''}.jpg"
            im.save(p, "JPEG", quality=int(rng.integers(50, 96)), subsampling=sub, progressive=prog)
        paths.append(p)
    p = folder / "syn_large_2400x1600.jpg"
    Image.fromarray(synthetic_rgb(rng, 1600, 2400)).save(p, "JPEG", quality=90)
    paths.append(p)
    return paths


def truncated(path, keep=0.6):
    """The first part of an encoded image, as UINT8 bytes."""
    b = pathlib.Path(path).read_bytes()
    return np.frombuffer(b[: int(len(b) * keep)], dtype=np.uint8)


def encoded(pixels, fmt, **options):
    """pixels (an array) encoded by Pillow in fmt, as UINT8 bytes."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=fmt, **options)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


def synthetic_jpeg(w=320, h=240):
    """A JPEG made here (no corpus needed), as UINT8 bytes."""
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([x * 255 // w, y * 255 // h, (x + y) % 256], axis=-1).astype(np.uint8)
    return encoded(rgb, "JPEG", quality=90)


def say(config, msg):
    """A line on the terminal even when output is captured."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    cm = config.pluginmanager.get_plugin("capturemanager")
    if tr is None or cm is None:
        print(msg, file=sys.stderr)
        return
    with cm.global_and_fixture_disabled():
        tr.write_line(msg)


# ------------------------------------------------------------------ requests


def client_of(s, proto):
    return (s.grpc, grpcclient) if proto == "grpc" else (s.http, httpclient)


def read_bytes(path):
    return np.fromfile(path, dtype=np.uint8)


def uint8_input(mod, data, name="IMAGE"):
    """One encoded image as a UINT8 [1, N] tensor."""
    x = data[None] if data.ndim == 1 else data
    t = mod.InferInput(name, list(x.shape), "UINT8")
    t.set_data_from_numpy(x)
    return t


def bytes_input(mod, blobs, name="IMAGE"):
    """Several encoded images as a BYTES [k, 1] tensor."""
    x = np.array([[bytes(b)] for b in blobs], dtype=np.object_)
    t = mod.InferInput(name, list(x.shape), "BYTES")
    t.set_data_from_numpy(x)
    return t


def infer_one(client, mod, model, path_or_bytes, outputs=("PIXELS",)):
    data = read_bytes(path_or_bytes) if isinstance(path_or_bytes, (str, pathlib.Path)) else path_or_bytes
    return infer(client, mod, model, [uint8_input(mod, data)], outputs)


def infer(client, mod, model, inputs, outputs=("PIXELS",)):
    """{output name: array} of one synchronous request."""
    kw = {"client_timeout": TIMEOUT_S} if mod is grpcclient else {}
    res = client.infer(model, inputs, outputs=[mod.InferRequestedOutput(o) for o in outputs], **kw)
    return {o: res.as_numpy(o) for o in outputs}


class GrpcBurst:
    """Sends requests concurrently over gRPC and collects (result, error) per
    request; after run, seconds[i] is how long request i took to answer."""

    def __init__(self, client):
        self.client = client
        self.seconds = []

    def run(self, model, inputs_list, outputs=("PIXELS",), timeout=TIMEOUT_S):
        done = threading.Event()
        results = [None] * len(inputs_list)
        self.seconds = [None] * len(inputs_list)
        left = [len(inputs_list)]
        lock = threading.Lock()

        def callback(i, t0):
            def cb(result, error):
                results[i] = (result, error)
                self.seconds[i] = time.monotonic() - t0
                with lock:
                    left[0] -= 1
                    if left[0] == 0:
                        done.set()

            return cb

        for i, inputs in enumerate(inputs_list):
            self.client.async_infer(
                model,
                inputs,
                callback(i, time.monotonic()),
                outputs=[grpcclient.InferRequestedOutput(o) for o in outputs],
                client_timeout=timeout,
            )
        assert done.wait(timeout + 30), f"{left[0]} of {len(inputs_list)} requests unanswered"
        return results


def post_infer(s, model, header, binary=b"", header_length=None):
    """A raw HTTP inference request: (status, parsed JSON error or body)."""
    head = json.dumps(header).encode() if isinstance(header, dict) else header
    body = head + binary
    headers = {"Content-Type": "application/octet-stream"}
    if binary or header_length is not None:
        headers["Inference-Header-Content-Length"] = str(len(head) if header_length is None else header_length)
    conn = http.client.HTTPConnection(s.host, s.http_port, timeout=TIMEOUT_S)
    try:
        conn.request("POST", f"/v2/models/{model}/infer", body, headers)
        r = conn.getresponse()
        raw = r.read()
    finally:
        conn.close()
    try:
        return r.status, json.loads(raw)
    except ValueError:
        return r.status, {"raw": raw[:200]}


def batch_sizes(client, model):
    """{batch size: execution count} from the model's statistics."""
    st = client.get_inference_statistics(model)["model_stats"][0]
    return {int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in st.get("batch_stats", [])}


# ------------------------------------------------------------------ the server's state


def scrape(server):
    """{(name, frozenset of label pairs): value} of every labelled sluice_* sample."""
    status, body = server.get("/metrics", port=server.metrics_port)
    assert status == 200
    return {(name, frozenset(labels.items())): v
            for name, labels, v, _ in metrics_text.parse(body) if name.startswith("sluice_") and labels}


def wait_unloaded(server, name, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state, _ = server.model_state(name)
        if state not in ("READY", "UNLOADING", "LOADING"):
            return state
        time.sleep(0.05)
    raise AssertionError(f"{name} still {server.model_state(name)} {timeout}s after unload")


def assert_unharmed(s, normal):
    """The process runs, says it is live over both protocols, and answers a
    normal request over both with the very bytes `sluice run` gives."""
    data, want = normal
    assert s.alive(), f"tritonserver died:\n{s.log_tail()}"
    assert s.http.is_server_live() and s.grpc.is_server_live()
    assert s.http.is_model_ready(IMAGENET) and s.grpc.is_model_ready(IMAGENET)
    for proto, mod in PROTOCOLS:
        got = infer_one(client_of(s, proto)[0], mod, IMAGENET, data)["PIXELS"]
        assert got.shape == (1, *want.shape) and got[0].tobytes() == want.tobytes(), f"{proto}: output changed"


# ------------------------------------------------------------------ the example networks


def onnx_session(repo, model):
    """ONNX Runtime over the model.onnx of model (classifier, classifier_crops,
    detector) in the repository repo, with the options its 1/model.py gives
    it (one thread): the reference its served answers are checked against."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(repo / model / "1" / "model.onnx"), options, providers=["CPUExecutionProvider"])
