"""The hostile files of every format against a real tritonserver: each case
of internal/hostile (written at test time by `go run ./internal/hostile/mkhostile`,
with a manifest saying what must come of it) is sent in one BYTES request
(several copies where the case says so). A case with refusal words must be
refused naming them, a single file within REFUSED_WITHIN_S (a refusal
from the headers takes milliseconds, a decode of these files seconds or
minutes; a request of several may first decode what its budget allows);
a legal one must be answered. After each, the server is unharmed (helpers'
assert_unharmed); after them all, its resident memory is back within
200 MB of where it was, C libraries' allocations included."""

import json
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.triton.helpers import (
    BYTES_MODEL,
    IMAGENET,
    REFUSED_WITHIN_S,
    InferenceServerException,
    assert_unharmed,
    bytes_input,
    grpcclient,
    infer,
    say,
)

RSS_BACK_KB = 200 * 1024
RSS_WAIT_S = 30


def load_cases():
    """Every case, its file's bytes under "data"; written once, when the
    module is collected, since the case names parametrize the test."""
    with tempfile.TemporaryDirectory(prefix="hostile-") as d:
        subprocess.run(["go", "run", "./internal/hostile/mkhostile", d], cwd=ROOT, check=True, timeout=600)
        cases = json.loads((Path(d) / "manifest.json").read_text())
        for c in cases:
            c["data"] = (Path(d) / c["file"]).read_bytes()
    return {c["name"]: c for c in cases}


CASES = load_cases()


@pytest.fixture(scope="module")
def srv(sluice_models):
    sluice_models.ensure_loaded(IMAGENET, BYTES_MODEL)
    return sluice_models


@pytest.fixture(scope="module")
def rss_before(srv):
    return srv.rss_kb()


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_case(srv, normal, rss_before, name, request):  # noqa: F811 (normal is a fixture)
    c = CASES[name]
    inputs = [bytes_input(grpcclient, [c["data"]] * c["per_request"])]
    t0 = time.monotonic()
    err = None
    try:
        infer(srv.grpc, grpcclient, BYTES_MODEL, inputs)
    except InferenceServerException as e:
        err = str(e)
    took = time.monotonic() - t0
    line = f"{name} ({c['format']}, {c['bytes']} bytes x {c['per_request']}): {took * 1000:.0f} ms, " + (
        f"refused: {err[:300]}" if err else "answered"
    )
    print(line)
    say(request.config, "\n" + line)
    if c["refused"]:
        assert err is not None, f"{name} ({c['row']}) was decoded; it must be refused naming {c['refused']}"
        for w in c["refused"]:
            assert w.lower() in err.lower(), f"{name}: the error should name {w!r}: {err}"
        # One file is refused from its headers; a request of several may
        # first decode what its budget allows, so only the words count.
        if c["per_request"] == 1:
            assert took < REFUSED_WITHIN_S, f"{name}: refused after {took:.1f} s: the check did not come before decode"
    else:
        assert err is None, f"{name} ({c['row']}) is legal and must decode: {err}"
    assert_unharmed(srv, normal)


def test_memory_returns_after_the_hostile_files(srv, rss_before, request):
    """Runs after the cases (pytest keeps file order): within RSS_WAIT_S of
    idle, the server's resident memory is back within 200 MB of where it
    was before them."""
    t0 = time.monotonic()
    samples = []
    while True:
        rss = srv.rss_kb()
        samples.append(rss)
        if rss - rss_before <= RSS_BACK_KB or time.monotonic() - t0 >= RSS_WAIT_S:
            break
        time.sleep(1)
    line = (
        f"VmRSS before the hostile files {rss_before / 1024:.0f} MB, after them and {time.monotonic() - t0:.0f} s "
        f"idle {samples[-1] / 1024:.0f} MB (bound +200 MB); samples: {' '.join(f'{r / 1024:.0f}' for r in samples)}"
    )
    print(line)
    say(request.config, "\n" + line)
    assert samples[-1] - rss_before <= RSS_BACK_KB, line
