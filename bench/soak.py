#!/usr/bin/env python3
"""Soak test: a Sluice model in a real tritonserver under steady load of
good and broken images for a bounded time, its memory sampled throughout.

Needs only python3, numpy and tritonclient's gRPC client. Talks gRPC to a
server on 127.0.0.1 (nowhere else), one it started itself (--start: this
checkout's scripts/triton.sh, .venv-triton, build/backends) or one already
running (--url, with --pid or a single tritonserver process to watch).

  python3 -m bench.soak --start --minutes 10 --concurrency 64
  python3 -m bench.soak --url 127.0.0.1:8001 --model preprocess_gpu --pid 1234 --gpu \\
      --good DIR --broken DIR --minutes 5

What it checks: every good image's outputs equal, byte for byte, those of
its first response (taken one request at a time before the load starts);
every broken image gets an error; the server stays alive. It stops after
--minutes or --max-requests, whichever comes first, and prints a summary:
requests, errors expected and unexpected, the server's RSS under load
(first, min, max, last, slope) and after --idle seconds without requests,
and with --gpu its GPU memory. Exit status 1 when an answer was wrong or
the server died; a server it started then leaves its log behind.

Broken images: the files of --broken (by default corpus/broken; those
MANIFEST.tsv lists as valid images under a misleading name count as good)
and some made here from good JPEGs: cut in half, a header claiming
60000x60000 pixels, bytes that are no image.
"""

import argparse
import collections
import hashlib
import json
import os
import pathlib
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from bench import common
from bench.common import rss_mb

LOCAL_HOSTS = ("127.0.0.1", "localhost")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".pbm", ".pgm", ".ppm", ".pnm", ".tif", ".tiff", ".jp2",
                  ".j2k", ".avif")


def parse_args():
    ap = argparse.ArgumentParser(prog="python3 -m bench.soak", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="gRPC host:port of a running tritonserver (127.0.0.1 only)")
    ap.add_argument("--start", action="store_true", help="start tritonserver here with scripts/triton.sh")
    ap.add_argument("--model", default="preprocess_imagenet")
    ap.add_argument("--pid", type=int, help="the tritonserver to watch (default: the only one running)")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--max-requests", type=int, default=1_000_000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--broken-share", type=float, default=0.2, help="share of requests carrying a broken image")
    ap.add_argument("--corpus", default=str(common.CORPUS))
    ap.add_argument("--good", action="append", help="folder of valid images (default: corpus/jpeg, corpus/png)")
    ap.add_argument("--broken", help="folder of broken images (default: corpus/broken)")
    ap.add_argument("--interval", type=float, default=5, help="seconds between memory samples")
    ap.add_argument("--idle", type=float, default=30, help="seconds of memory samples after the load, with no requests")
    ap.add_argument("--gpu", action="store_true", help="sample GPU memory with nvidia-smi too")
    ap.add_argument("--timeout", type=float, default=120, help="seconds one request may take")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the summary here as JSON too")
    a = ap.parse_args()
    if bool(a.url) == a.start:
        ap.error("give exactly one of --url and --start")
    if a.url and a.url.rsplit(":", 1)[0] not in LOCAL_HOSTS:
        ap.error(f"--url {a.url}: only a server on 127.0.0.1 is soaked")
    if a.concurrency < 1 or a.minutes <= 0 or a.max_requests < 1 or not 0 <= a.broken_share < 1:
        ap.error("--concurrency, --minutes and --max-requests must be positive, --broken-share in [0, 1)")
    return a


# ------------------------------------------------------------------ the server


class Started:
    """A tritonserver started with scripts/triton.sh in a temporary work
    folder (its log is there)."""

    def __init__(self, model):
        self.work = tempfile.mkdtemp(prefix="soak-")
        self.script = str(common.ROOT / "scripts" / "triton.sh")
        cmd = ["bash", self.script, "--work-dir", self.work, "--explicit", "--load-model", model]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0:
            sys.exit(f"scripts/triton.sh failed:\n{proc.stderr[-3000:]}")
        env = dict(line.split("=", 1) for line in proc.stdout.split() if "=" in line)
        self.pid = int(env["TRITON_PID"])
        self.url = f"127.0.0.1:{env['TRITON_GRPC_PORT']}"
        self.log = env["TRITON_LOG"]

    def stop(self):
        subprocess.run(["bash", self.script, "--stop", "--work-dir", self.work], capture_output=True, timeout=120)


def find_server_pid():
    pids = []
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() == "tritonserver":
                    pids.append(int(d.name))
            except OSError:
                pass
    if len(pids) != 1:
        sys.exit(f"{len(pids)} tritonserver processes here ({pids}): name one with --pid")
    return pids[0]


def gpu_mb(pid):
    """(the process's GPU memory, the whole GPU's used memory), MiB; None
    where nvidia-smi does not say (a container may hide the pid)."""

    def query(args):
        try:
            out = subprocess.run(["nvidia-smi", *args, "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=20).stdout  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return []
        return [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]

    mine = sum(float(r[1]) for r in query(["--query-compute-apps=pid,used_memory"]) if r[0] == str(pid))
    used = query(["--query-gpu=memory.used"])
    return (mine or None), (float(used[0][0]) if used else None)


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


# ------------------------------------------------------------------ images


def files_in(folder):
    return sorted(p for p in pathlib.Path(folder).rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def valid_by_manifest(corpus):
    """corpus files MANIFEST.tsv marks as valid images under a misleading name."""
    m = pathlib.Path(corpus) / "MANIFEST.tsv"
    if not m.exists():
        return set()
    rows = [line.rstrip("\n").split("\t") for line in m.read_text().splitlines()]
    i, k = rows[0].index("file"), rows[0].index("kind")
    return {str(pathlib.Path(corpus) / r[i]) for r in rows[1:] if len(r) > k and r[k] == "broken/wrong-magic"}


def made_broken(jpegs):
    """Broken images made from good JPEGs: {label: bytes}."""
    out = {"garbage.bin": b"this is not an image at all\n" * 40}
    for p in jpegs[:3]:
        b = p.read_bytes()
        out[f"{p.name}[:half]"] = b[: len(b) // 2]
    for p in jpegs:
        b = bytearray(p.read_bytes())
        i = next((b.find(m) for m in (b"\xff\xc0", b"\xff\xc1", b"\xff\xc2") if b.find(m) > 0), -1)
        if i > 0:
            b[i + 5 : i + 9] = struct.pack(">HH", 60000, 60000)  # SOF: length, precision, height, width
            out[f"{p.name}[60000x60000]"] = bytes(b)
            break
    return out


class Case:
    def __init__(self, label, data, good):
        self.label, self.data, self.good = label, data, good
        self.req = None  # the request's inputs
        self.want = None  # digest of the outputs, for a good image


def load_cases(a):
    """The good images, the broken ones of --broken, and those made here."""
    corpus = pathlib.Path(a.corpus)
    good_dirs = a.good or [corpus / "jpeg", corpus / "png"]
    good = [p for d in good_dirs for p in files_in(d)]
    if not good:
        sys.exit(f"no good images in {[str(d) for d in good_dirs]}")
    broken_dir = pathlib.Path(a.broken) if a.broken else corpus / "broken"
    broken = files_in(broken_dir) if broken_dir.is_dir() else []
    valid = valid_by_manifest(corpus) | valid_by_manifest(broken_dir.parent)
    cases = [Case(str(p.relative_to(p.parents[1])), p.read_bytes(), True) for p in good]
    cases += [Case(f"broken/{p.name}", p.read_bytes(), str(p) in valid) for p in broken]
    jpegs = [p for p in good if p.suffix.lower() in (".jpg", ".jpeg")]
    return cases + [Case(k, v, False) for k, v in made_broken(jpegs).items()]


# ------------------------------------------------------------------ the load


class Soak:
    def __init__(self, args, client, pid, cases):
        self.a, self.client, self.pid = args, client, pid
        self.cases = cases
        meta = client.get_model_metadata(args.model, as_json=True)
        if len(meta["inputs"]) != 1:
            sys.exit(f"{args.model} has {len(meta['inputs'])} inputs: bench.soak sends one encoded image")
        self.input = meta["inputs"][0]
        self.outputs = [o["name"] for o in meta["outputs"]]
        for c in cases:
            c.req = self.inputs(c.data)
        self.lock = threading.Lock()
        keys = ("correct", "errors_expected", "errors_unexpected", "successes_unexpected", "wrong_outputs")
        self.counts = collections.Counter(dict.fromkeys(keys, 0))
        self.messages = collections.Counter()  # error texts of broken images
        self.unexpected = []
        self.latency = []
        self.samples = []  # (seconds since start, RSS MiB, process GPU MiB, whole GPU MiB)
        self.stop = threading.Event()

    def inputs(self, data):
        x = np.frombuffer(data, np.uint8)[None]
        if self.input["datatype"] == "BYTES":
            x = np.array([[data]], dtype=np.object_)
        t = grpcclient.InferInput(self.input["name"], list(x.shape), self.input["datatype"])
        t.set_data_from_numpy(x)
        return [t]

    def digest(self, result):
        h = hashlib.sha256()
        for o in self.outputs:
            x = result.as_numpy(o)
            h.update(f"{o}{x.dtype}{x.shape}".encode())
            h.update(x.tobytes())
        return h.hexdigest()

    def reference(self):
        """One request per image, before the load: the good images' outputs."""
        dropped = []
        for c in self.cases:
            try:
                res = self.client.infer(self.a.model, c.req, outputs=self.requested(), client_timeout=self.a.timeout)
            except InferenceServerException as e:
                if c.good:
                    sys.exit(f"a good image fails before the load starts: {c.label}: {e}")
                continue
            if not c.good:
                # nvJPEG decodes some damaged streams that libjpeg refuses
                # (corrupt_scan.jpg), and not the same way twice: neither
                # an expected error nor a fixed answer, so left out.
                print(f"left out: broken image {c.label} succeeds on this model", flush=True)
                dropped.append(c)
                continue
            c.want = self.digest(res)
        self.cases = [c for c in self.cases if not any(c is d for d in dropped)]

    def requested(self):
        return [grpcclient.InferRequestedOutput(o) for o in self.outputs]

    def sample(self, t0):
        while True:
            g = gpu_mb(self.pid) if self.a.gpu else (None, None)
            self.samples.append((time.monotonic() - t0, rss_mb(self.pid), *g))
            if not alive(self.pid):
                self.stop.set()
            if self.stop.wait(self.a.interval):
                break

    def run(self):
        a = self.a
        good = [c for c in self.cases if c.good]
        broken = [c for c in self.cases if not c.good]
        rng = random.Random(a.seed)
        slots = threading.BoundedSemaphore(a.concurrency)
        outs = self.requested()
        t0 = time.monotonic()
        sampler = threading.Thread(target=self.sample, args=(t0,), daemon=True)
        sampler.start()
        deadline = t0 + a.minutes * 60
        sent = 0

        def done(case, start):
            def cb(result, error):
                took = time.monotonic() - start
                if error is not None and case.good:
                    verdict = ("errors_unexpected", f"valid image failed: {error}")
                elif error is not None:
                    verdict = ("errors_expected", None)
                elif not case.good:
                    verdict = ("successes_unexpected", "broken image succeeded")
                elif self.digest(result) != case.want:
                    verdict = ("wrong_outputs", "outputs differ from its first response")
                else:
                    verdict = ("correct", None)
                with self.lock:
                    self.latency.append(took)
                    self.counts[verdict[0]] += 1
                    if verdict[1]:
                        self.unexpected.append(f"{case.label}: {verdict[1]}")
                    if verdict[0] == "errors_expected":
                        self.messages[str(error)[:100]] += 1
                slots.release()

            return cb

        while sent < a.max_requests and time.monotonic() < deadline and not self.stop.is_set():
            if not slots.acquire(timeout=1):
                continue
            case = rng.choice(broken) if broken and rng.random() < a.broken_share else rng.choice(good)
            cb = done(case, time.monotonic())
            self.client.async_infer(a.model, case.req, cb, outputs=outs, client_timeout=a.timeout)
            sent += 1
        # Drain: every request in flight answers or times out.
        drained = all(slots.acquire(timeout=a.timeout + 10) for _ in range(a.concurrency))
        self.elapsed = time.monotonic() - t0
        self.stop.wait(a.idle)  # memory the load leaves behind
        self.stop.set()
        sampler.join()
        self.sent = sent
        self.drained = drained


# ------------------------------------------------------------------ summary


def slope(points):
    """Least-squares slope of (seconds, MiB) points, in MiB per minute."""
    if len(points) < 3:
        return None
    x = np.array([p[0] for p in points]) / 60
    y = np.array([p[1] for p in points])
    return round(float(np.polyfit(x, y, 1)[0]), 1)


def memory_stats(samples, col, load_end):
    """Under load: first, min, max, last, slopes (whole run, second half),
    the last sample of each minute; then the last sample after the idle."""
    pts = [(s[0], s[col]) for s in samples if s[col] is not None]
    load = [p for p in pts if p[0] <= load_end]
    if not load:
        return None
    v = [p[1] for p in load]
    half = [p for p in load if p[0] >= load_end / 2]
    minutes = {int(t // 60): round(m) for t, m in load}
    return {"first": round(v[0], 1), "min": round(min(v), 1), "max": round(max(v), 1), "last": round(v[-1], 1),
            "slope_mib_per_min": slope(load), "slope_second_half": slope(half),
            "by_minute": [minutes[k] for k in sorted(minutes)],
            "after_idle": round(pts[-1][1], 1), "idle_s": round(pts[-1][0] - load_end)}  # fmt: skip


def main():
    a = parse_args()
    started = Started(a.model) if a.start else None
    url = started.url if started else a.url
    pid = started.pid if started else (a.pid or find_server_pid())
    try:
        client = grpcclient.InferenceServerClient(url)
        if not client.is_server_live() or not client.is_model_ready(a.model):
            sys.exit(f"{url}: server not live or {a.model} not ready")
        cases = load_cases(a)
        s = Soak(a, client, pid, cases)
        t = time.monotonic()
        s.reference()
        print(f"soak: {url} {a.model}, tritonserver pid {pid}; {sum(c.good for c in cases)} good and "
              f"{sum(not c.good for c in cases)} broken images, first responses in {time.monotonic() - t:.1f} s; "
              f"{a.minutes:g} min at concurrency {a.concurrency}, {a.broken_share:.0%} broken", flush=True)  # fmt: skip
        s.run()
        # Afterwards: still alive and still right.
        live = alive(pid)
        after_ok = False
        if live:
            try:
                c = next(c for c in cases if c.good)
                after_ok = s.digest(client.infer(a.model, c.req, outputs=s.requested())) == c.want
            except InferenceServerException as e:
                s.unexpected.append(f"request after the soak failed: {e}")
    finally:
        if started:
            started.stop()

    lat = s.latency
    p50, p99 = common.percentiles(lat) if lat else (None, None)
    summary = {
        "url": url, "model": a.model, "pid": pid, "minutes": round(s.elapsed / 60, 2), "concurrency": a.concurrency,
        "requests": s.sent, "answered": len(lat), "per_s": round(len(lat) / s.elapsed, 1),
        **dict(s.counts),
        "p50_ms": round(p50, 1) if lat else None,
        "p99_ms": round(p99, 1) if lat else None,
        "rss_mib": memory_stats(s.samples, 1, s.elapsed),
        "gpu_process_mib": memory_stats(s.samples, 2, s.elapsed) if a.gpu else None,
        "gpu_used_mib": memory_stats(s.samples, 3, s.elapsed) if a.gpu else None,
        "server_alive": live, "correct_after": after_ok, "all_answered": s.drained,
        "broken_messages": dict(s.messages.most_common(12)),
        "unexpected": s.unexpected[:20],
    }  # fmt: skip
    print(json.dumps(summary, indent=2))
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(summary, indent=2) + "\n")
    bad = s.unexpected or not live or not after_ok or not s.drained
    print("soak: " + ("FAIL" if bad else "PASS"))
    if started and bad:
        print(f"soak: the server's log: {started.log}")
    elif started:
        shutil.rmtree(started.work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
