"""The GPU-machine Triton checks: scripts/gpu_triton.sh run starts a real
tritonserver with the models it writes (preprocess_*, consumer_*,
ensemble_*) and runs this folder against it:

  python3 -m pytest -s tests/gpu_triton --http H:P --grpc H:P --metrics H:P \
      --corpus DIR --out DIR [--seconds S] [--gpus 0,1]

Without --http every test here skips, so `make pytest` and CI, which collect
this folder on machines with no server and no GPU, stay green. The checks'
results go to --out as gpu_triton.json and gpu_triton.md.
"""
import glob
import http.client
import json
import os
import urllib.request

import pytest

from . import triton_client as tc

REPORT = pytest.StashKey()
MODELS = ["preprocess_gpu", "preprocess_cpu", "consumer_gpu", "consumer_cpu", "ensemble_gpu", "ensemble_cpu"]


def pytest_addoption(parser):
    g = parser.getgroup("gpu_triton", "the GPU-machine Triton checks (tests/gpu_triton)")
    g.addoption("--http", help="the server's HTTP host:port; without it the tests skip")
    g.addoption("--grpc", default="127.0.0.1:8001", help="its gRPC host:port")
    g.addoption("--metrics", default="127.0.0.1:8002", help="its metrics host:port")
    g.addoption("--corpus", help="the images to send (every file of the folder)")
    g.addoption("--out", help="the folder gpu_triton.json and gpu_triton.md go to")
    g.addoption("--seconds", type=float, default=15, help="seconds of load per row of check (f); 0: none")
    g.addoption("--procs", type=int, default=int(os.environ.get("GT_PROCS", 8)), help="load processes")
    g.addoption("--threads", type=int, default=int(os.environ.get("GT_THREADS", 2)), help="clients per process")
    g.addoption("--batches", default=os.environ.get("GT_BATCHES", "1,8"), help="load batch sizes, comma-separated")
    g.addoption("--gpus", default="0", help="the GPUs preprocess_gpu's instances are on, comma-separated")
    g.addoption("--perf-models", help="test_perf.py: the models perf_analyzer measures, comma-separated")


def option(config, name):
    # default: an option this conftest adds is unknown where pytest found the
    # folder only while collecting (pytest tests).
    return config.getoption(name, default=None)


def terminal_line(config, line):
    """A line on the terminal, on a line of its own (with -s as it comes; pytest
    holds back what a test prints otherwise)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None:
        print(line, flush=True)
    else:
        tr.ensure_newline()
        tr.write(line + "\n", flush=True)


@pytest.fixture
def say(request):
    """terminal_line for a test that keeps no report."""
    return lambda line: terminal_line(request.config, line)


@pytest.fixture(scope="session")
def opts(request):
    """The server's addresses and the run's settings (config.option)."""
    if not option(request.config, "http"):
        pytest.skip("no Triton server given (--http): scripts/gpu_triton.sh run starts one and runs these")
    if not option(request.config, "corpus"):
        pytest.fail("--corpus is needed with --http", pytrace=False)
    return request.config.option


@pytest.fixture(scope="session")
def files(opts):
    return sorted(f for f in glob.glob(os.path.join(opts.corpus, "*")) if os.path.isfile(f))


@pytest.fixture(scope="session")
def conn(opts):
    c = http.client.HTTPConnection(opts.http, timeout=120)
    yield c
    c.close()


class Report:
    """The checks' results (gpu_triton.json's document, R) and what one check
    hands the next: check (a)'s PIXELS of preprocess_gpu, the decode counter
    before any request."""

    def __init__(self, config, opts, files):
        self.config = config
        self.R = {"checks": {}, "models": {}, "load": [], "files": len(files)}
        self.failed = []
        self.pix_gpu = {}
        for m in MODELS:
            self.R["models"][m] = tc.ready(opts.http, m)
        self.say(f"models ready: {self.R['models']}")
        try:
            req = urllib.request.Request(f"http://{opts.http}/v2/repository/index", data=b"{}", method="POST")
            idx = json.loads(urllib.request.urlopen(req, timeout=10).read())
            self.R["repository"] = idx
            for e in idx:
                if e.get("state") != "READY":
                    self.say(f"  {e.get('name')}: {e.get('state')} {e.get('reason', '')}")
        except Exception as e:
            self.say(f"repository index: {e}")
        self.gpu = self.R["models"]["preprocess_gpu"]
        if not self.gpu:
            self.say("NOTE: preprocess_gpu is not loaded (no GPU here, or the GPU executor failed: see the server"
                " log); the GPU checks are reported as failed, the CPU parts still run")
        self.decoded_before, _ = tc.decoded_metric(opts.metrics)

    def say(self, line):
        terminal_line(self.config, line)

    def check(self, name, ok, detail):
        """Records a check; a failed one fails the test."""
        self.R["checks"][name] = {"ok": bool(ok), "detail": detail}
        self.say(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
        if not ok:
            if name not in self.failed:
                self.failed.append(name)
            pytest.fail(f"{name}: {detail}", pytrace=False)

    def markdown(self):
        md = ["| model | batch | in flight | protocol | infer/s | images/s | p50 ms | p99 ms | errors |",
              "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
        for r in self.R["load"]:
            md.append(f"| {r['model']} | {r['batch']} | {r['concurrency']} | {r['protocol']} | {r['infer_per_s']} | "
                      f"{r['images_per_s']} | {r['p50_ms']} | {r['p99_ms']} | {r['errors']} |")
        md += ["", "| check | result | detail |", "|---|---|---|"]
        for k, v in self.R["checks"].items():
            md.append(f"| {k} | {'PASS' if v['ok'] else 'FAIL'} | {v['detail'][:300]} |".replace("\n", " "))
        return "\n".join(md)


@pytest.fixture(scope="session")
def report(request, opts, files):
    r = Report(request.config, opts, files)
    request.config.stash[REPORT] = r
    return r


def pytest_sessionfinish(session):
    r = session.config.stash.get(REPORT, None)
    out = option(session.config, "out")
    if r is None or not out:
        return
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "gpu_triton.md"), "w") as fh:
        fh.write(r.markdown() + "\n")
    with open(os.path.join(out, "gpu_triton.json"), "w") as fh:
        json.dump(r.R, fh, indent=1, default=str)


def pytest_terminal_summary(terminalreporter):
    r = terminalreporter.config.stash.get(REPORT, None)
    if r is None:
        return
    terminalreporter.write_line("\n" + r.markdown())
    terminalreporter.write_line(f"\n{'FAILED: ' + ', '.join(r.failed) if r.failed else 'ALL CHECKS PASSED'}")
