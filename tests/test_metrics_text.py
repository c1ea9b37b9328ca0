"""tests/metrics_text.py, the /metrics parser of tests/triton and
tests/gpu_triton, on text as tritonserver writes it: here, so that it runs
in make pytest without a server."""

from tests import metrics_text

TEXT = """\
# HELP sluice_images_total Images a Sluice model decoded
# TYPE sluice_images_total counter
sluice_images_total{model="preprocess_imagenet",version="1"} 12
sluice_image_failures_total{cause="not an image",model="m",version="1"} 2
sluice_odd_total{model="a\\"b}c 3",version="1"} 4
sluice_stamped_total{model="m"} 5 1700000000000
nv_cpu_utilization 0.25

not a sample
"""


def test_parse():
    got = list(metrics_text.parse(TEXT))
    assert [(n, labels, v) for n, labels, v, _ in got] == [
        ("sluice_images_total", {"model": "preprocess_imagenet", "version": "1"}, 12.0),
        ("sluice_image_failures_total", {"cause": "not an image", "model": "m", "version": "1"}, 2.0),
        # A quote and a brace inside a value stay in it, escapes as written.
        ("sluice_odd_total", {"model": 'a\\"b}c 3', "version": "1"}, 4.0),
        # A timestamp after the value is not the value.
        ("sluice_stamped_total", {"model": "m"}, 5.0),
        ("nv_cpu_utilization", {}, 0.25),
    ]
    assert got[0][3] == 'sluice_images_total{model="preprocess_imagenet",version="1"} 12'
    assert list(metrics_text.parse("")) == []
