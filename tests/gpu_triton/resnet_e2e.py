"""The ResNet-50 ensemble's writer and its perf_analyzer sweep, for
scripts/gpu_triton.sh run with GT_RESNET=1 (run by path there: a site-packages
folder named tests could shadow the repository's):

  python3 tests/gpu_triton/resnet_e2e.py weights DIR
      writes resnet50.network(SEED)'s weights to DIR/resnet50.WEIGHTS and
      prints "FILE SEED DIGEST" for the config.
  python3 tests/gpu_triton/resnet_e2e.py perf --perf-analyzer PA --ld-library-path P
      --grpc H:P --http H:P --data BYTES.json --kind gpu --raw DIR --md FILE
      [--batches "64 256"] [--concurrency "4 8"] [--window-ms 2000]
      [--stability 15] [--trials 5] [--budget-s 240] [--note TEXT]
      perf_analyzer (gRPC) against each stage alone and the pair, at every batch
      size and concurrency, and one Markdown table (stdout and --md):
        pair     ensemble_resnet50_<kind>_bytes: the JPEGs of --data (BYTES, system
                 shared memory) to logits
        Sluice   ensemble_<kind>_bytes: the same JPEGs to PIXELS, reduced on the GPU
                 by the consumer model to one float per image, so that the 602 kB of
                 FP32 per image stays on the GPU as in the pair (preprocess alone
                 would measure the copy of it to the client)
        network  resnet50_<kind> fed pre-made tensors (random PIXELS) in CUDA shared
                 memory (system shared memory on a CPU, or where CUDA's fails: the
                 table says so)
      The slower stage bounds the pair; "pair / bound" says how close it comes.
      Triton's statistics around each pair run give the server batch sizes and
      the compute per batch of both steps. Runs past --budget-s are left out,
      named in the table.
"""
import argparse
import csv
import os
import subprocess
import sys
import time

try:
    from . import perf, resnet50
except ImportError:  # run by path
    import perf
    import resnet50


def weights(a):
    os.makedirs(a.dir, exist_ok=True)
    d = resnet50.save(os.path.join(a.dir, resnet50.WEIGHTS))
    print(resnet50.WEIGHTS, resnet50.SEED, d)
    return 0


def stats(http, path):
    """perf.py's stats: Triton's statistics of every model, saved (nothing where
    the server does not answer: the table then leaves their columns empty)."""
    try:
        perf.stats(argparse.Namespace(http=http, out=path))
    except OSError as e:
        print(f"statistics: {e}", flush=True)


def one_run(a, model, b, c, data, shm, raw):
    """perf_analyzer once: (row dict or None, note). Where no request finishes
    within a window, windows three times as long; a level that does not settle
    within --stability in --trials windows is measured again (3 windows, as they
    come), as gpu_triton.sh's sweep does."""
    tag = f"{model}.b{b}.c{c}.{shm}"
    csv_path, log = os.path.join(raw, tag + ".csv"), os.path.join(raw, tag + ".log")
    env = dict(os.environ, LD_LIBRARY_PATH=a.ld_library_path)
    open(log, "w").close()
    if os.path.exists(csv_path):
        os.remove(csv_path)

    def attempt(window, stability, trials):
        """Whether it wrote the CSV; and what it said."""
        args = [a.perf_analyzer, "-m", model, "-i", "grpc", "-u", a.grpc, "-b", str(b), "--concurrency-range", str(c),
                "--input-data", data, "--shared-memory", shm, "--measurement-interval", str(window), "-f", csv_path,
                "-s", str(stability), "--max-trials", str(trials)]
        with open(log, "a") as fh:
            fh.write(f"$ {' '.join(args)}\n")
            fh.flush()
            start = fh.tell()
            try:
                subprocess.run(args, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=a.run_timeout_s)
            except subprocess.TimeoutExpired:
                fh.write(f"\n(stopped after {a.run_timeout_s} s)\n")
        with open(log) as fh:
            fh.seek(start)
            said = fh.read().lower()
        return os.path.exists(csv_path) and os.path.getsize(csv_path) > 0, said

    notes, window = [], a.window_ms
    ok, said = attempt(window, a.stability, a.trials)
    if not ok and "larger time window" in said:
        window *= 3
        notes.append(f"no request finished within {a.window_ms} ms: windows of {window} ms")
        ok, said = attempt(window, a.stability, a.trials)
    if not ok and "stable" in said:
        notes.append(f"not stable within {a.stability}% in {a.trials} windows: 3 more, as they came")
        ok, said = attempt(window, 1000, 3)
    try:
        with open(csv_path) as fh:
            r = next(csv.DictReader(fh))
        row = {"ips": float(r["Inferences/Second"]), "p50": float(r["p50 latency"]) / 1000,
               "p99": float(r["p99 latency"]) / 1000}
    except (OSError, StopIteration, KeyError, ValueError):
        row = None
        notes.append(f"failed: see {os.path.basename(log)}")
    return row, "; ".join(notes)


def sweep(a):
    k = a.kind
    pair, sluice, network = f"ensemble_resnet50_{k}_bytes", f"ensemble_{k}_bytes", f"resnet50_{k}"
    pre = f"preprocess_{k}_bytes"
    os.makedirs(a.raw, exist_ok=True)
    net_shm = "cuda" if k == "gpu" else "system"
    t0 = time.time()
    results, notes, skipped = {}, [], []
    n = 0
    for b in a.batches.split():
        for c in a.concurrency.split():
            for stage, model in (("pair", pair), ("sluice", sluice), ("network", network)):
                if time.time() - t0 > a.budget_s:
                    skipped.append(f"{stage} b{b} c{c}")
                    continue
                data, shm = (a.data, "system") if stage != "network" else ("random", net_shm)
                s0 = os.path.join(a.raw, f"stats_{n}.json")
                stats(a.http, s0)
                row, note = one_run(a, model, b, c, data, shm, a.raw)
                if row is None and shm == "cuda":
                    # CUDA shared memory failed (the log says why): host memory instead, from here on.
                    row, note2 = one_run(a, model, b, c, data, "system", a.raw)
                    note = f"CUDA shared memory failed ({note}), system shared memory from here on" + (
                        f": {note2}" if note2 else "")
                    shm = net_shm = "system"
                s1 = os.path.join(a.raw, f"stats_{n + 1}.json")
                stats(a.http, s1)
                n += 2
                if row:
                    row["shm"] = shm
                    if stage == "pair":
                        before, after = perf.load_stats(s0), perf.load_stats(s1)
                        row["pre_batch"], row["pre_ms"] = perf.per_execution(before, after, pre)
                        row["net_batch"], row["net_ms"] = perf.per_execution(before, after, network)
                results[(b, c, stage)] = row
                if note:
                    notes.append(f"{stage} b{b} c{c}: {note}")
                done = f"{row['ips']:,.0f} images/s, p50 {row['p50']:.1f} ms" if row else "failed"
                print(f"{stage:8s} {model} b{b} c{c}: {done}{' (' + note + ')' if note else ''}", flush=True)
    md = table(a, results, notes, skipped, pair, sluice, network)
    with open(a.md, "w") as f:
        f.write(md + "\n")
    print()
    print(md)
    ok = all(results.get((b, c, s)) for b in a.batches.split() for c in a.concurrency.split()
             for s in ("pair", "sluice", "network"))
    return 0 if ok else 1


def table(a, results, notes, skipped, pair, sluice, network):
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        gpu = "no GPU"
    net_shm = {r["shm"] for (_, _, s), r in results.items() if s == "network" and r}
    lines = [
        f"perf_analyzer 2.51.0 (the tritonclient wheel's), gRPC, against tritonserver 2.51.0 on {gpu}, "
        f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        f"Pair: `{pair}` (Sluice's ImageNet pipeline, then torchvision's ResNet-50 with random weights "
        + ("in FP16 with CUDA graphs in the Python backend, PIXELS handed over in GPU memory" if a.kind == "gpu"
           else "in FP32 on the CPU in the Python backend") +
        f"). Sluice: `{sluice}` (the same preprocessing, PIXELS reduced by the consumer model to one float per "
        f"image{', on the GPU' if a.kind == 'gpu' else ''}). Network: `{network}` alone, fed "
        f"random PIXELS in {' and '.join(sorted(net_shm)) or '?'} shared memory. The JPEGs go in system shared "
        f"memory as BYTES elements{' (' + a.note + ')' if a.note else ''}.",
        f"Windows of {a.window_ms} ms, stable within {a.stability}%. images/s is perf_analyzer's infer/s; "
        "p50/p99 per request. Bound: the slower stage alone; pair / bound: the pair's share of it. Server "
        "batch and ms/batch: Triton's statistics over the pair's run (preprocess / network).",
        "",
        "| batch | concurrency | pair images/s | pair p50 ms | pair p99 ms | Sluice images/s | Sluice p50 / p99 ms "
        "| network images/s | network p50 / p99 ms | bound | pair / bound | server batch | ms/batch |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]

    def num(v, f="{:,.0f}"):
        return f.format(v) if v is not None else ""

    for b in a.batches.split():
        for c in a.concurrency.split():
            p, s, n = (results.get((b, c, x)) for x in ("pair", "sluice", "network"))
            cells = [b, c]
            cells += [num(p["ips"]), num(p["p50"], "{:.1f}"), num(p["p99"], "{:.1f}")] if p else ["failed", "", ""]
            cells += [num(s["ips"]), f"{s['p50']:.1f} / {s['p99']:.1f}"] if s else ["failed", ""]
            cells += [num(n["ips"]), f"{n['p50']:.1f} / {n['p99']:.1f}"] if n else ["failed", ""]
            if s and n:
                bound = "Sluice" if s["ips"] < n["ips"] else "network"
                ref = min(s["ips"], n["ips"])
                cells += [bound, f"{100 * p['ips'] / ref:.0f}%" if p else ""]
            else:
                cells += ["", ""]
            for x, y, f in (("pre_batch", "net_batch", "{:,.0f}"), ("pre_ms", "net_ms", "{:.1f}")):
                have = p and (p.get(x) is not None or p.get(y) is not None)
                cells.append(f"{num(p.get(x), f)} / {num(p.get(y), f)}" if have else "")
            lines.append("| " + " | ".join(cells) + " |")
    if notes:
        lines += [""] + [f"- {x}" for x in notes]
    if skipped:
        lines += ["", f"Left out past the time budget ({a.budget_s} s): {', '.join(skipped)}."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("weights")
    w.add_argument("dir")
    p = sub.add_parser("perf")
    p.add_argument("--perf-analyzer", required=True)
    p.add_argument("--ld-library-path", default="")
    p.add_argument("--grpc", required=True)
    p.add_argument("--http", required=True)
    p.add_argument("--data", required=True,
                   help="perf_analyzer input data of the *_bytes models (sluice perf-data --bytes)")
    p.add_argument("--kind", default="gpu", choices=["gpu", "cpu"])
    p.add_argument("--batches", default="64 256")
    p.add_argument("--concurrency", default="4 8")
    p.add_argument("--window-ms", type=int, default=2000)
    p.add_argument("--stability", type=int, default=15)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--run-timeout-s", type=int, default=60, help="one perf_analyzer run at most")
    p.add_argument("--budget-s", type=int, default=240, help="no run starts after this many seconds")
    p.add_argument("--note", default="", help="the input data, for the table's head")
    p.add_argument("--raw", required=True, help="perf_analyzer's CSVs and logs, Triton's statistics")
    p.add_argument("--md", required=True)
    a = ap.parse_args()
    return weights(a) if a.cmd == "weights" else sweep(a)


if __name__ == "__main__":
    sys.exit(main())
