#!/usr/bin/env python3
"""How Sluice's GPU ImageNet pipeline scales from one GPU to several of one
host, beside nvImageCodec (the decoder inside DALI 2.x) doing the same on each
GPU in the same run. Prints a Markdown table and writes it (--md-out) and JSON
(--json-out).

    python3 -m bench.multigpu --sluice .bench/gpu/sluice --corpus .bench/gpu/corpus \\
        --gpus 0,1 --batches 64,256 --seconds 4 --md-out multigpu.md --json-out multigpu.json

Files: the whole mix of bench.gpu (corpus/jpeg/derived + jpeg/native), and
its larger photos with --kinds.

- Sluice: `sluice bench --gpu 0` (one GPU), then `sluice bench --gpu 0,1` (one
  process, --instances executors on each GPU, as a Triton instance group with
  gpus: [0, 1]).
- nvImageCodec: bench.gpu's contender ("nvimgcodec": decode with every
  backend and core, then torch resize/crop/normalize; "nvimgcodec-decode":
  the decode alone), one process per GPU, all started together and timed over
  the same seconds; the sum is the host's rate. Each process sizes its CPU
  threads to all cores, as one would run it.
"""

import argparse
import json
import multiprocessing as mp
import os
import pathlib
import sys
import tempfile
import time

from bench import common
from bench.gpu import NvImgCodec

PEERS = {"nvimgcodec": "full", "nvimgcodec-decode": "decode"}


def peer_worker(name, gpu, mode, files, batch, seconds, barrier, q):
    try:
        peer = NvImgCodec(name, gpu, mode, seconds)
        peer.setup()
        peer.prepare(None, [pathlib.Path(f).read_bytes() for f in files], [batch])  # warm-up
        barrier.wait(timeout=300)
        q.put((gpu, peer.measure(batch)))
    except Exception as e:  # a cell of the table, not a crash
        try:
            barrier.abort()
        except Exception:
            pass
        q.put((gpu, common.error_of(e)))


def bench_peer(name, mode, gpus, files, batch, seconds):
    """One process per GPU, timed together; their summed images/s."""
    ctx = mp.get_context("spawn")  # CUDA does not survive fork
    barrier, q = ctx.Barrier(len(gpus)), ctx.Queue()
    procs = [ctx.Process(target=peer_worker, args=(name, g, mode, files, batch, seconds, barrier, q)) for g in gpus]
    for p in procs:
        p.start()
    res = dict(q.get(timeout=seconds + 600) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    errs = [f"GPU {g}: {r['error']}" for g, r in res.items() if "error" in r]
    if errs:
        return {"error": "; ".join(errs)}
    return {"images_per_sec": sum(r["images_per_sec"] for r in res.values()),
            "images_per_sec_by_gpu": {str(g): r["images_per_sec"] for g, r in sorted(res.items())},
            "p50_ms": max(r["p50_ms"] for r in res.values()), "p99_ms": max(r["p99_ms"] for r in res.values())}


def scaling(many, one):
    if not many or not one or "error" in many or "error" in one or not one["images_per_sec"]:
        return "n/a"
    return f"{many['images_per_sec'] / one['images_per_sec']:.2f}x"


def cell(r):
    if r is None:
        return "–"
    if "error" in r:
        return common.md_failed(r["error"])[:200]
    s = f"{r['images_per_sec']:,.0f}"
    by_gpu = r.get("images_per_sec_by_gpu", {})  # sluice bench's key, and bench_peer's
    if len(by_gpu) > 1:
        s += " (" + " + ".join(f"{v:,.0f}" for _, v in sorted(by_gpu.items())) + ")"
    return s


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.multigpu")
    common.add_inputs(ap)
    ap.add_argument("--pipeline", default=common.IMAGENET_PIPELINE)
    ap.add_argument("--gpus", default="0,1", help="comma-separated device ordinals; the first is the one-GPU run")
    ap.add_argument("--batches", default="64,256")
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--instances", type=int, default=1, help="sluice bench --instances: executors per GPU")
    ap.add_argument("--workers", type=int, default=0, help="sluice bench --workers (0: its default)")
    ap.add_argument("--kinds", default="whole mix", help="comma-separated: whole mix, larger photos")
    ap.add_argument("--only", default="sluice," + ",".join(PEERS))
    ap.add_argument("--json-out")
    ap.add_argument("--md-out")
    args = ap.parse_args()
    gpus = [int(g) for g in args.gpus.split(",")]
    only = [c.strip() for c in args.only.split(",") if c.strip()]
    corpus = pathlib.Path(args.corpus)
    kinds = {"whole mix": common.mix_files(corpus), "larger photos": common.larger_photos(corpus)}
    sets = [[gpus[0]], gpus] if len(gpus) > 1 else [gpus]
    command = common.command_line()
    info = {"date": common.utc_now(),
            "gpus": gpus, "gpu": common.gpu_info(), "cpus": os.cpu_count(), "command": command,
            "seconds": args.seconds, "instances_per_gpu": args.instances}
    rows = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sluice-mgpu-") as tmp:
        for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
            files = kinds[kind]
            kdir = common.link_dir(tmp, kind, files)
            for b in [int(x) for x in args.batches.split(",")]:
                row = {"kind": kind, "files": len(files), "batch": b}
                for gs in sets:
                    key = ",".join(map(str, gs))
                    if "sluice" in only:
                        row[f"sluice@{key}"] = common.sluice_bench(args.sluice, args.pipeline, [kdir], b, args.seconds,
                                                                   gpus=key, workers=args.workers,
                                                                   instances=args.instances)
                    for name, mode in PEERS.items():
                        if name in only:
                            row[f"{name}@{key}"] = bench_peer(name, mode, gs, [str(p) for p in files], b, args.seconds)
                rows.append(row)
                print(f"# {kind} batch {b}: " + "  ".join(f"{k} {cell(v)}" for k, v in row.items()
                                                          if "@" in k), file=sys.stderr, flush=True)
    info["wall_seconds"] = round(time.perf_counter() - t0, 1)

    one, many = ",".join(map(str, sets[0])), ",".join(map(str, sets[-1]))
    contenders = [c for c in ["sluice", *PEERS] if c in only]
    md = [f"# Sluice on {len(gpus)} GPU(s) of one host vs one GPU",
          "",
          f"{info['date']}; GPU: {info['gpu']} × {len(gpus)}; {info['cpus']} CPUs; {args.seconds:g} s per cell; "
          f"Sluice {args.instances} instance(s) per GPU; wall {info['wall_seconds']} s",
          "",
          "nvimgcodec: decode (every backend, all cores) + torch resize/crop/normalize; nvimgcodec-decode: the decode "
          "alone; one process per GPU, timed together, summed (per GPU in brackets).",
          "",
          f"Command: `{command}`",
          "",
          common.md_row(["kind (files)", "batch",
                         *(f"{c} GPU {one} img/s | {c} GPUs {many} img/s | scaling" for c in contenders)]),
          common.md_rule(2 + 3 * len(contenders))]
    for r in rows:
        cells = []
        for c in contenders:
            a, b = r.get(f"{c}@{one}"), r.get(f"{c}@{many}")
            cells += [cell(a), cell(b) if many != one else "–", scaling(b, a) if many != one else "–"]
        md.append(common.md_row([f"{r['kind']} ({r['files']})", str(r["batch"]), *cells]))
    text = "\n".join(md) + "\n"
    print(text)
    if args.md_out:
        pathlib.Path(args.md_out).write_text(text)
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps({"info": info, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
