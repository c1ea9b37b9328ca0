#!/usr/bin/env python3
"""The perf_analyzer step of scripts/gpu_triton.sh run (GT_PERF=1): what runs
around perf_analyzer. Standard library and numpy only.

  gpu_triton_perf.py check --http H:P --models M,... --corpus DIR
      one batch of 8 of the JPEGs in DIR to each model, in the form perf_analyzer
      sends it (a *_bytes model: BYTES elements; else UINT8 rows zero-padded
      to the largest file's size), against each JPEG alone and unpadded to the UINT8
      model of the same kind: the pixels must agree (check (a)'s limits).
      Exits 1 when they do not.
  gpu_triton_perf.py stats --http H:P -o FILE
      Triton's statistics of every model (/v2/models/stats), saved.
  gpu_triton_perf.py table --runs FILE [--standalone "64=17000 256=20000"]
      the Markdown table, from the runs list the shell script wrote (one
      line per perf_analyzer run, tab-separated: model, input, batch,
      concurrency, preprocess model, consumer model, CSV, stats before,
      stats after, log, note).
"""
import argparse
import csv
import glob
import http.client
import json
import os
import struct
import sys
import urllib.request

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_triton_check import MEAN, STD, InferError, http_infer  # noqa: E402


def bytes_body(rows, outputs):
    """An inference request with the binary extension: [B, 1] BYTES IMAGE."""
    data = b"".join(struct.pack("<I", len(r)) + r for r in rows)
    hdr = json.dumps({
        "inputs": [{"name": "IMAGE", "shape": [len(rows), 1], "datatype": "BYTES",
                    "parameters": {"binary_data_size": len(data)}}],
        "outputs": [{"name": "PIXELS", "parameters": {"binary_data": True}}],
    }).encode()
    return hdr, hdr + data


def check(a):
    files = sorted(glob.glob(os.path.join(a.corpus, "*.jp*g")))
    if not files:
        sys.exit(f"gpu_triton_perf.py: no JPEGs in {a.corpus}")
    width = max(os.path.getsize(f) for f in files)  # perf_data.py --pad pads to the largest
    rows = [open(f, "rb").read() for f in files[:: max(1, len(files) // 8)][:8]]
    conn = http.client.HTTPConnection(a.http, timeout=120)
    failed = False
    for model in a.models.split(","):
        single = model.removesuffix("_bytes")
        try:
            if model.endswith("_bytes"):
                form = "BYTES elements"
                got = http_infer(conn, model, None, ["PIXELS"], bytes_body(rows, ["PIXELS"]))["PIXELS"]
            else:
                form = f"UINT8 rows zero-padded to {width} bytes"
                got = http_infer(conn, model, [r + bytes(width - len(r)) for r in rows], ["PIXELS"])["PIXELS"]
            want = np.stack([http_infer(conn, single, [r], ["PIXELS"])["PIXELS"][0] for r in rows])
        except InferError as e:
            print(f"FAIL perf input {model}: {e}")
            failed = True
            continue
        d = np.abs((got * STD + MEAN) - (want * STD + MEAN)) * 255
        ok = got.shape == want.shape and d.mean() <= 0.5 and d.max() <= 4
        failed |= not ok
        print(f"{'PASS' if ok else 'FAIL'} perf input {model}: a batch of {len(rows)} as {form} against each "
              f"image alone to {single}: mean |diff| {d.mean():.3f}, max {d.max():.1f} levels (limits 0.5, 4)")
    return 1 if failed else 0


def stats(a):
    with urllib.request.urlopen(f"http://{a.http}/v2/models/stats", timeout=30) as r:
        data = r.read()
    with open(a.out, "wb") as f:
        f.write(data)
    return 0


def load_stats(path):
    """{model: (inferences, executions, compute_infer ns summed over executions)}."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    res = {}
    for m in doc.get("model_stats", []):
        infer_ns = sum(int(b.get("compute_infer", {}).get("ns", 0)) for b in m.get("batch_stats", []))
        res[m["name"]] = (int(m.get("inference_count", 0)), int(m.get("execution_count", 0)), infer_ns)
    return res


def per_execution(before, after, model):
    """Average batch and compute ms per execution of model between two snapshots."""
    b, e = before.get(model), after.get(model)
    if not b or not e or e[1] <= b[1]:
        return None, None
    n = e[1] - b[1]
    return (e[0] - b[0]) / n, (e[2] - b[2]) / n / 1e6


def table(a):
    standalone = dict(kv.split("=") for kv in a.standalone.split())
    head = ["model", "input", "batch", "concurrency", "requests/s", "images/s", "p50 ms", "p99 ms",
            "server batch", "preprocess ms/batch", "consumer ms/batch"]
    if standalone:
        head.append("of standalone")
    head.append("note")
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if h in ("model", "input", "note") else "---:"
                                                         for h in head) + "|"]
    with open(a.runs) as f:
        for line in f:
            (model, form, batch, conc, pre, consumer, csv_path, s0, s1, log, note) = line.rstrip("\n").split("\t")
            cells = [f"`{model}`", form, batch, conc]
            try:
                with open(csv_path) as fh:
                    r = next(csv.DictReader(fh))
                ips = float(r["Inferences/Second"])  # perf_analyzer counts each image of a batch
                cells += [f"{ips / int(batch):,.1f}", f"{ips:,.0f}",
                          f"{float(r['p50 latency']) / 1000:.1f}", f"{float(r['p99 latency']) / 1000:.1f}"]
            except (OSError, StopIteration, KeyError, ValueError):
                ips = None
                cells += ["failed", "", "", ""]
                note = (note + "; " if note else "") + f"see {os.path.basename(log)}"
            before, after = load_stats(s0), load_stats(s1)
            avg, pre_ms = per_execution(before, after, pre)
            cells += [f"{avg:.0f}" if avg else "", f"{pre_ms:.1f}" if pre_ms else ""]
            _, con_ms = per_execution(before, after, consumer) if consumer else (None, None)
            cells.append(f"{con_ms:.1f}" if con_ms else "")
            if standalone:
                ref = float(standalone.get(batch, 0))
                cells.append(f"{100 * ips / ref:.0f}%" if ips and ref else "")
            cells.append(note)
            lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("--http", required=True)
    c.add_argument("--models", required=True)
    c.add_argument("--corpus", required=True)
    s = sub.add_parser("stats")
    s.add_argument("--http", required=True)
    s.add_argument("-o", "--out", required=True)
    t = sub.add_parser("table")
    t.add_argument("--runs", required=True)
    t.add_argument("--standalone", default="", help='standalone images/s per batch size: "64=17000 256=20000"')
    a = ap.parse_args()
    return {"check": check, "stats": stats, "table": table}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
