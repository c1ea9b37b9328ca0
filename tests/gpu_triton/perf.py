"""What runs around perf_analyzer in scripts/gpu_triton.sh (GT_PERF=1):

  python3 -m tests.gpu_triton.perf jpegs CORPUS DST
      (build, from the repository's root: bench.common and Pillow) copies the
      baseline colour JPEGs of CORPUS's jpeg/derived and jpeg/native to DST,
      split as the GPU benchmark splits them: the photos `sluice bench --gpu`
      is measured on.
  python3 tests/gpu_triton/perf.py stats --http H:P -o FILE
      Triton's statistics of every model (/v2/models/stats), saved.
  python3 tests/gpu_triton/perf.py table --runs FILE [--standalone "64=17000 256=20000"]
      the Markdown table, from the runs list the shell script wrote (one
      line per perf_analyzer run, tab-separated: model, input, batch,
      concurrency, preprocess model, consumer model, CSV, stats before,
      stats after, log, note).

stats and table need only the standard library and run by path on the GPU
machine, where a site-packages folder named tests could shadow the repository's
(a regular package wins over this namespace one). That the server reads
perf_analyzer's inputs as the images is a test: test_perf.py.
"""
import argparse
import csv
import json
import os
import pathlib
import shutil
import sys
import urllib.request


def jpegs(a):
    from bench.common import classify

    corpus, dst = pathlib.Path(a.corpus), pathlib.Path(a.dst)
    files = sorted(p for d in ("jpeg/derived", "jpeg/native") for p in (corpus / d).glob("*.jp*g"))
    for p in files:
        if classify(p) == "baseline colour":
            if (dst / p.name).exists():
                sys.exit(f"two {p.name}")
            shutil.copy(p, dst / p.name)
    return 0


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
    j = sub.add_parser("jpegs")
    j.add_argument("corpus")
    j.add_argument("dst")
    s = sub.add_parser("stats")
    s.add_argument("--http", required=True)
    s.add_argument("-o", "--out", required=True)
    t = sub.add_parser("table")
    t.add_argument("--runs", required=True)
    t.add_argument("--standalone", default="", help='standalone images/s per batch size: "64=17000 256=20000"')
    a = ap.parse_args()
    return {"jpegs": jpegs, "stats": stats, "table": table}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
