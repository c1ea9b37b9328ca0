#!/usr/bin/env python3
"""Fairness under hostile load: how long a normal request waits while other
clients send expensive images to the same model.

  python3 -m bench.fairness --url 127.0.0.1:8001 --model preprocess_imagenet \\
      --good photo.jpg --hostile bomb.jp2 --copies 16 --clients 32 --seconds 60 [--pid PID]

CLIENTS threads each send, back to back over gRPC, one request of COPIES
copies of the hostile file (UINT8 [COPIES, N]); one more thread sends the
good image alone, back to back, and records each answer's latency. Prints
JSON: the good requests' count, p50, p99 and max latency, the hostile
requests' count, answers, refusals and those still unanswered at the end,
and the server's peak resident memory (with --pid). Talks only to the
address given; stops by itself SECONDS (plus half a minute at most for the
requests in flight, which it then gives up on)."""

import argparse
import json
import threading
import time

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from bench.common import rss_mb


def request(data, copies):
    x = np.tile(np.frombuffer(data, np.uint8), (copies, 1))
    t = grpcclient.InferInput("IMAGE", list(x.shape), "UINT8")
    t.set_data_from_numpy(x)
    return [t]


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.fairness", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="gRPC address, on this machine")
    ap.add_argument("--model", default="preprocess_imagenet")
    ap.add_argument("--good", required=True)
    ap.add_argument("--hostile", required=True)
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--pid", type=int)
    a = ap.parse_args()
    if not a.url.startswith(("127.", "localhost", "[::1]")):
        ap.error("--url must be a loopback address")
    good, bad = open(a.good, "rb").read(), open(a.hostile, "rb").read()
    stop = time.monotonic() + a.seconds
    lock = threading.Lock()
    hostile = {"sent": 0, "answered": 0, "refused": 0, "unanswered": 0, "seconds": []}
    latencies, good_errors, peak = [], [], [0.0]
    good_unanswered = [0]

    def left():
        # Requests still out at the end are given up on (counted, not
        # waited for): the server may take minutes over them.
        return max(1.0, stop - time.monotonic() + 5)

    def attacker():
        c = grpcclient.InferenceServerClient(a.url)
        inputs = request(bad, a.copies)
        while time.monotonic() < stop:
            t0 = time.monotonic()
            try:
                c.infer(a.model, inputs, client_timeout=left())
                key = "answered"
            except InferenceServerException as e:
                key = "unanswered" if "Deadline" in str(e) or "timeout" in str(e).lower() else "refused"
            with lock:
                hostile["sent"] += 1
                hostile[key] += 1
                hostile["seconds"].append(time.monotonic() - t0)

    def prober():
        c = grpcclient.InferenceServerClient(a.url)
        inputs = request(good, 1)
        while time.monotonic() < stop:
            t0 = time.monotonic()
            try:
                c.infer(a.model, inputs, client_timeout=left() + 25)
                latencies.append(time.monotonic() - t0)
            except InferenceServerException as e:
                if "Deadline" in str(e) or "timeout" in str(e).lower():
                    good_unanswered[0] += 1  # waited past the end of the run
                else:
                    good_errors.append(str(e)[:200])
            time.sleep(0.05)

    def sampler():
        while time.monotonic() < stop:
            peak[0] = max(peak[0], rss_mb(a.pid) or 0.0)  # None: the server is gone
            time.sleep(0.5)

    threads = [threading.Thread(target=attacker) for _ in range(a.clients)] + [threading.Thread(target=prober)]
    if a.pid:
        threads.append(threading.Thread(target=sampler))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ms = np.array(latencies) * 1000
    hs = np.array(hostile.pop("seconds")) * 1000
    out = {
        "clients": a.clients,
        "copies": a.copies,
        "seconds": a.seconds,
        "good": {
            "requests": len(latencies),
            "errors": len(good_errors),
            "unanswered_by_the_end": good_unanswered[0],
            "p50_ms": round(float(np.percentile(ms, 50)), 1) if len(ms) else None,
            "p99_ms": round(float(np.percentile(ms, 99)), 1) if len(ms) else None,
            "max_ms": round(float(ms.max()), 1) if len(ms) else None,
        },
        "hostile": {**hostile, "p50_ms": round(float(np.percentile(hs, 50)), 1) if len(hs) else None},
        "good_error_texts": sorted(set(good_errors))[:3],
    }
    if a.pid:
        out["rss_peak_mb"] = round(peak[0])
        out["rss_end_mb"] = round(rss_mb(a.pid) or 0.0)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
