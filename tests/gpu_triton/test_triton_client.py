"""The folder's metrics scraper (triton_client.parse_metrics, behind
decoded_metric and series) on a text as tritonserver writes it: needs no
server, so it runs wherever the folder is collected."""
from . import triton_client as tc

TEXT = """\
# HELP sluice_gpu_decoded_images_total Images the GPU instances of a Sluice model decoded
# TYPE sluice_gpu_decoded_images_total counter
sluice_gpu_decoded_images_total{gpu="0",model="preprocess_gpu",path="hardware",version="1"} 120
sluice_gpu_decoded_images_total{gpu="0",model="preprocess_gpu",path="cpu",version="1"} 3
sluice_gpu_decoded_images_total{gpu="1",model="preprocess_gpu",path="hardware",version="1"} 7
sluice_gpu_decoded_images_total{gpu="0",model="decoded_gpu",path="device",version="1"} 5
sluice_gpu_decoded_images_total_extra{gpu="0",model="preprocess_gpu"} 99
sluice_gpu_cross_device_copies_total{gpu="1",model="preprocess_gpu",version="1"} 2 1700000000000
nv_inference_count{model="preprocess_gpu",version="1"} 44
"""


def test_parse_metrics():
    got = tc.parse_metrics(TEXT, "sluice_gpu_decoded_images_total")
    assert [v for _, v, _ in got] == [120, 3, 7, 5]
    assert got[0][0] == {"gpu": "0", "model": "preprocess_gpu", "path": "hardware", "version": "1"}
    assert got[1][2].startswith('sluice_gpu_decoded_images_total{gpu="0"')
    # A timestamp after the value is not the value.
    assert [v for _, v, _ in tc.parse_metrics(TEXT, "sluice_gpu_cross_device_copies_total")] == [2]
    assert tc.parse_metrics(TEXT, "sluice_gpu_cross_device_bytes_total") == []
    assert tc.parse_metrics("", "nv_inference_count") == []


def test_series_and_decoded_metric(monkeypatch):
    monkeypatch.setattr(tc, "get", lambda url, timeout=5: (200, TEXT))
    assert tc.series("h:1", "sluice_gpu_decoded_images_total", "preprocess_gpu") == {0: 123, 1: 7}
    assert tc.series("h:1", "sluice_gpu_decoded_images_total", "preprocess_gpu", path="hardware") == {0: 120, 1: 7}
    assert tc.series("h:1", "sluice_gpu_cross_device_copies_total", "preprocess_cpu") == {}
    total, lines = tc.decoded_metric("h:1")
    assert total == 135 and len(lines) == 4
    # An unreachable server reads as no samples, as before.
    monkeypatch.setattr(tc, "get", lambda url, timeout=5: (0, "connection refused"))
    assert tc.decoded_metric("h:1") == (0, [])
