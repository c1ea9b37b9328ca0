"""The server itself: health, metadata, the config Sluice auto-completes,
statistics and metrics."""

import json

import numpy as np

from tests import metrics_text
from tests.triton.helpers import grpcclient, httpclient, infer, infer_one


def test_health(server):
    assert server.http.is_server_live() and server.grpc.is_server_live()
    assert server.http.is_server_ready() and server.grpc.is_server_ready()
    assert server.get("/v2/health/live")[0] == 200
    assert server.get("/v2/health/ready")[0] == 200


def test_server_metadata(server):
    meta = server.http.get_server_metadata()
    assert meta["name"] == "triton"
    assert meta["version"] == "2.51.0"
    for ext in ("model_repository", "statistics", "binary_tensor_data"):
        assert ext in meta["extensions"], meta["extensions"]
    gmeta = server.grpc.get_server_metadata(as_json=True)
    assert gmeta["version"] == "2.51.0"


def test_python_classifier_serves(server):
    """The Python backend (stub, numpy from the venv) works: the stand-in
    classifier gives a probability vector per image."""
    x = np.random.default_rng(1).standard_normal((2, 3, 224, 224)).astype(np.float32)
    for client, mod in ((server.http, httpclient), (server.grpc, grpcclient)):
        t = mod.InferInput("PIXELS", list(x.shape), "FP32")
        t.set_data_from_numpy(x)
        s = infer(client, mod, "classifier", [t], outputs=("SCORES",))["SCORES"]
        assert s.shape == (2, 1000) and s.dtype == np.float32
        np.testing.assert_allclose(s.sum(axis=1), 1.0, rtol=1e-5)


def test_model_metadata(sluice_server):
    for client, as_json in ((sluice_server.http, {}), (sluice_server.grpc, {"as_json": True})):
        meta = client.get_model_metadata("preprocess_imagenet", **as_json)
        assert meta["name"] == "preprocess_imagenet"
        assert meta["platform"] == "sluice", meta
        (i,) = meta["inputs"]
        assert (i["name"], i["datatype"], [int(d) for d in i["shape"]]) == ("IMAGE", "UINT8", [-1, -1])
        (o,) = meta["outputs"]
        assert (o["name"], o["datatype"], [int(d) for d in o["shape"]]) == ("PIXELS", "FP32", [-1, 3, 224, 224])

    meta = sluice_server.http.get_model_metadata("preprocess_imagenet_bytes")
    assert [(i["name"], i["datatype"], i["shape"]) for i in meta["inputs"]] == [("IMAGE", "BYTES", [-1, 1])]


def tensors(cfg, key):
    return {t["name"]: t for t in cfg.get(key, [])}


def test_letterbox_config_autocompleted(sluice_server):
    """preprocess_letterbox's config.pbtxt names only the backend and the
    instance group: inputs, outputs, max_batch_size and dynamic batching come
    from its pipeline."""
    # The file really leaves them out.
    text = (sluice_server.repo / "preprocess_letterbox" / "config.pbtxt").read_text()
    code = "\n".join(line.split("#")[0] for line in text.splitlines())
    for key in ("input", "output", "max_batch_size", "dynamic_batching"):
        assert key not in code, f"config.pbtxt sets {key}: the test would prove nothing"

    http_cfg = sluice_server.http.get_model_config("preprocess_letterbox")
    grpc_cfg = sluice_server.grpc.get_model_config("preprocess_letterbox", as_json=True)["config"]
    for cfg in (http_cfg, grpc_cfg):
        assert cfg["backend"] == "sluice"
        assert int(cfg["max_batch_size"]) == 64
        assert "dynamic_batching" in cfg
        ins = tensors(cfg, "input")
        assert list(ins) == ["IMAGE"]
        assert ins["IMAGE"]["data_type"] == "TYPE_UINT8"
        assert [int(d) for d in ins["IMAGE"]["dims"]] == [-1]
        assert ins["IMAGE"].get("allow_ragged_batch") is True
        outs = tensors(cfg, "output")
        want = {"PIXELS": [3, 640, 640], "SCALE": [1], "OFFSET": [2]}
        assert set(outs) == set(want)
        for name, dims in want.items():
            assert outs[name]["data_type"] == "TYPE_FP32", outs[name]
            assert [int(d) for d in outs[name]["dims"]] == dims, outs[name]
    # The raw endpoint agrees (what `curl .../config` shows).
    status, body = sluice_server.get("/v2/models/preprocess_letterbox/config")
    assert status == 200 and json.loads(body)["max_batch_size"] == 64


def test_metrics_reachable(server):
    status, body = server.get("/metrics", port=server.metrics_port)
    assert status == 200
    assert "nv_inference_request_success" in body
    assert "nv_cpu_utilization" in body or "nv_cpu_memory_used_bytes" in body


def test_statistics_nonzero(sluice_server, photos):
    """After requests, the model's statistics carry compute input, infer and
    output times (the backend reports them per request and per batch), and
    the metrics endpoint counts them."""
    imgs = photos[:6]
    for p in imgs:
        infer_one(sluice_server.grpc, grpcclient, "preprocess_imagenet", p)
    status, body = sluice_server.get("/v2/models/preprocess_imagenet/stats")
    assert status == 200
    (ms,) = json.loads(body)["model_stats"]
    st = ms["inference_stats"]
    assert int(ms["inference_count"]) >= len(imgs)
    assert int(ms["execution_count"]) >= 1
    assert int(st["success"]["count"]) >= len(imgs)
    for key in ("compute_input", "compute_infer", "compute_output", "success"):
        assert int(st[key]["count"]) >= len(imgs), (key, st[key])
        assert int(st[key]["ns"]) > 0, (key, st[key])
    assert ms["batch_stats"], "no batch statistics"
    for b in ms["batch_stats"]:
        assert int(b["compute_infer"]["count"]) > 0 and int(b["compute_infer"]["ns"]) > 0, b

    status, body = sluice_server.get("/metrics", port=sluice_server.metrics_port)
    done = [v for name, labels, v, _ in metrics_text.parse(body)
            if name == "nv_inference_request_success" and labels.get("model") == "preprocess_imagenet"]
    assert done and done[0] >= len(imgs), done
