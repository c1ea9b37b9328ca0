"""Hostile model loads against a real tritonserver: what someone with the
model-load API or write access to the model repository can put in a
config or a version folder. Each load must fail quickly with a short error
naming the problem, and leave the server live and serving. Every model
folder is made here at test time, in the server's repository copy.

  - a parameter value of 1 MB: the error quotes its start and length only;
  - a pipeline of 50,000 outputs: refused on the count, naming the limit;
  - a model.sluice that is a FIFO: refused at once, naming it (opening a
    FIFO blocks until a writer comes, which hung the load forever)."""

import os
import threading
import time

import pytest

from tests.triton.helpers import (
    IMAGENET,
    InferenceServerException,
    assert_unharmed,
    wait_unloaded,
)

# How long a refused load may take. The refusals themselves take
# milliseconds; Triton's own work around a load (reading the config,
# starting the load thread, the HTTP round trip) is the rest.
REFUSED_LOAD_S = 5.0
# A load error's length: a few lines of Sluice's message and Triton's
# prefix. The 1 MB value came back whole before.
MAX_ERROR_BYTES = 4096
MAX_OUTPUTS = 256  # pipeline.MaxOutputs

IMAGENET_CONFIG = """\
name: "{name}"
backend: "sluice"
max_batch_size: 8
input [ {{ name: "IMAGE", data_type: TYPE_UINT8, dims: [ -1 ], allow_ragged_batch: true }} ]
output [ {{ name: "PIXELS", data_type: TYPE_FP32, dims: [ 3, 224, 224 ] }} ]
instance_group [ {{ kind: KIND_CPU, count: 1 }} ]
{extra}
"""


def load_error(s, name, timeout=REFUSED_LOAD_S):
    """The load of name fails: (its message, seconds it took)."""
    t0 = time.monotonic()
    with pytest.raises(InferenceServerException) as e:
        s.http.load_model(name)
    took = time.monotonic() - t0
    msg = str(e.value)
    print(f"{name}: refused in {took * 1000:.0f} ms, {len(msg)} bytes: {msg[:300]}")
    assert took < timeout, f"{name}: the refusal took {took:.1f}s: {msg[:300]}"
    return msg, took


def repaired(s, name, fix):
    """fix() repairs the model folder; the model then loads, and goes.
    Triton's strict readiness counts a failed model until it loads, and the
    other tests of the session expect a ready server."""
    fix()
    s.http.load_model(name)
    assert s.http.is_model_ready(name)
    s.http.unload_model(name)
    wait_unloaded(s, name)
    assert s.http.is_server_ready()


def copy_imagenet_pipeline(s, name):
    for f in (s.repo / IMAGENET / "1").iterdir():
        (s.repo / name / "1" / f.name).write_bytes(f.read_bytes())


def log_size(s):
    try:
        return s.log.stat().st_size
    except OSError:
        return 0


def test_huge_parameter_value(sluice_server, normal):
    """workers of 1 MB of digits: the error names the parameter and quotes
    the value's start and length, a few hundred bytes in all, over HTTP and
    gRPC; the server's log grows by kilobytes, not megabytes."""
    s = sluice_server
    name = "hostile_load_workers"
    value = "1234567890" * 100_000
    extra = f'parameters {{ key: "workers" value {{ string_value: "{value}" }} }}'
    s.add_model(name, IMAGENET_CONFIG.format(name=name, extra=extra))
    before = log_size(s)
    msg, _ = load_error(s, name)
    assert len(msg) < MAX_ERROR_BYTES, f"error of {len(msg)} bytes: {msg[:300]}"
    assert 'parameter "workers"' in msg and "(1000000 bytes)" in msg and "is not an integer from 1 to 1024" in msg, msg
    with pytest.raises(InferenceServerException) as e:
        s.grpc.load_model(name)
    assert len(str(e.value)) < MAX_ERROR_BYTES and 'parameter "workers"' in str(e.value)
    state, reason = s.model_state(name)
    assert state == "UNAVAILABLE" and len(reason) < MAX_ERROR_BYTES, (state, len(reason))
    grew = log_size(s) - before
    print(f"server log grew by {grew} bytes over two refused loads")
    assert grew < 64 * 1024, f"the log grew by {grew} bytes"
    assert_unharmed(s, normal)
    repaired(s, name, lambda: (s.repo / name / "config.pbtxt").write_text(IMAGENET_CONFIG.format(name=name, extra="")))


def test_too_many_outputs(sluice_server, normal):
    """A pipeline of 50,000 outputs (1.3 MB of text, under the 4 MiB file
    limit), the config left to auto-complete: refused on the count, naming
    it and the limit, in milliseconds; it used to load, after 94 s here."""
    s = sluice_server
    name = "hostile_load_outputs"
    lines = ["version: 1", 'input { name: "IMAGE" }', 'node { op: "decode" }',
             'node { op: "resize" arg { name: "size" ints { v: [8, 8] } } }']
    lines += [f'output {{ name: "O{i}" source: "resize" }}' for i in range(50_000)]
    s.add_model(name, f'name: "{name}"\nbackend: "sluice"\n', "\n".join(lines) + "\n")
    msg, _ = load_error(s, name)
    assert f"output: 50000 given, over the limit of {MAX_OUTPUTS}" in msg, msg[:500]
    assert str(s.repo / name / "1" / "pipeline.pbtxt") in msg, msg[:500]
    assert len(msg) < MAX_ERROR_BYTES
    assert_unharmed(s, normal)

    def fix():
        (s.repo / name / "1" / "pipeline.pbtxt").unlink()
        copy_imagenet_pipeline(s, name)

    repaired(s, name, fix)


def test_fifo_pipeline_file(sluice_server, normal):
    """model.sluice is a FIFO: the load fails at once naming the file and
    what it is. A regression would block the load on the FIFO's open; the
    test then opens it for writing, which frees the load, and fails."""
    s = sluice_server
    name = "hostile_load_fifo"
    d = s.repo / name
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(IMAGENET_CONFIG.format(name=name, extra=""))
    fifo = d / "1" / "model.sluice"
    os.mkfifo(fifo)
    result = {}

    def load():
        t0 = time.monotonic()
        try:
            s.http_client().load_model(name)
            result["error"] = None
        except InferenceServerException as e:
            result["error"] = str(e)
        result["took"] = time.monotonic() - t0

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(REFUSED_LOAD_S)
    if t.is_alive():
        try:  # a blocked reader is waiting: this open succeeds and frees it
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        t.join(60)
        pytest.fail(f"the load of {name} blocked on {fifo} for {REFUSED_LOAD_S}s")
    msg = result["error"]
    print(f"{name}: refused in {result['took'] * 1000:.0f} ms: {msg}")
    assert msg is not None, "a FIFO loaded as a pipeline"
    assert f"pipeline file {fifo} is a named pipe (FIFO), not a regular file" in msg, msg
    assert_unharmed(s, normal)

    def fix():
        fifo.unlink()
        copy_imagenet_pipeline(s, name)

    repaired(s, name, fix)
