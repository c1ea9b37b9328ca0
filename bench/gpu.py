#!/usr/bin/env python3
"""Sluice's GPU ImageNet pipeline side by side with torchvision on the GPU and
OpenCV on all cores, on the same photos in one run, per kind of JPEG and batch
size. Prints a Markdown table and writes it (--md-out) and JSON (--json-out).

    python3 scripts/bench_gpu.py --sluice .bench/gpu/sluice --corpus .bench/gpu/corpus \\
        --batches 16,64,256 --seconds 3 --gpu 0 --json-out bench.json --md-out bench.md

The photos are corpus/jpeg/derived and corpus/jpeg/native, split by Pillow into
baseline colour, grayscale and progressive JPEGs, plus all of them together, and
the photos of jpeg/large and jpeg/exif with a side of 1,000 px or more.

- Sluice: `sluice bench --gpu N`, one process per kind and batch size (its own
  warm-up pass over every image first).
- torchvision, as a user would write it: torchvision.io.decode_jpeg on a list of
  encoded tensors with device='cuda', then per image resize(256, antialias) and
  center_crop(224) on the uint8 tensor, stack, /255, normalize; synchronized per batch.
- sluice-x2: the same with --instances 2 (two executors sharing the GPU's
  decoders, as a Triton instance count of 2).
- DALI 2.4, as its docs write an inference pipeline: fn.external_source (the
  encoded bytes in host memory, cycled as sluice bench fills its batches) ->
  fn.decoders.image(device="mixed", output_type=RGB, hw_decoder_load=0.65 (its
  default) or 0.9) -> fn.resize(resize_shorter=256, linear, antialias) ->
  fn.crop_mirror_normalize(crop 224, ImageNet mean/std x255, FLOAT, CHW);
  num_threads os.cpu_count(), prefetch_queue_depth 2, 10 warm-up iterations,
  the device synchronised after the measured iterations.
- OpenCV: bench_cpu.py's opencv_one over a thread pool of os.cpu_count() threads,
  one batch at a time.

Latency is per batch (p50/p99, the same percentile definition as sluice bench).
torch is imported only when torchvision runs, so --only sluice,opencv works
without it; --gpu -1 runs Sluice's CPU executor (for dry runs on a machine
with no GPU).
"""

import argparse
import datetime
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
KINDS = ["baseline colour", "grayscale", "progressive", "whole mix", "larger photos"]
CONTENDERS = ["sluice", "sluice-x2", "dali-0.65", "dali-0.9", "torchvision", "nvimgcodec", "nvimgcodec-decode",
              "nvimgcodec-hw", "opencv"]
# The full-pipeline peers Sluice's ratio is taken against (the best of them).
FULL_PEERS = ["dali-0.65", "dali-0.9", "torchvision", "nvimgcodec", "opencv"]
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def classify(path):
    from PIL import Image

    with Image.open(path) as im:
        if im.mode == "L":
            return "grayscale"
        # Pillow sets 'progressive' (and the older 'progression') for SOF2 files.
        if im.info.get("progressive") or im.info.get("progression"):
            return "progressive"
        return "baseline colour"


def size_of(path):
    from PIL import Image

    with Image.open(path) as im:
        return im.size


def percentiles(lat):
    """p50 and p99 in ms, as sluice bench picks them from the sorted latencies."""
    lat = sorted(lat)
    return lat[len(lat) // 2] * 1e3, lat[min(len(lat) - 1, len(lat) * 99 // 100)] * 1e3


def batches_of(items, size):
    """Endless batches cycling through items, as sluice bench fills its batch."""
    i = 0
    while True:
        yield [items[(i + k) % len(items)] for k in range(size)]
        i += size


def timed(run_batch, batches, seconds):
    lat = []
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        b = next(batches)
        t = time.perf_counter()
        run_batch(b)
        lat.append(time.perf_counter() - t)
        n += len(b)
    elapsed = time.perf_counter() - start
    p50, p99 = percentiles(lat)
    return {"images_per_sec": n / elapsed, "p50_ms": p50, "p99_ms": p99, "batches": len(lat),
            "seconds": elapsed}


def short_error(text, limit=300):
    """The line of a failure's output that says what went wrong: a Go panic, else
    the CLI's own "sluice ...: error" line (flag usage may follow it), else the last."""
    lines = [l.strip() for l in str(text).strip().splitlines() if l.strip()]
    if not lines:
        return "failed with no message"
    pick = [l for l in lines if l.startswith("panic:")] or [l for l in lines if l.startswith("sluice")] or lines
    return pick[-1][:limit]


def bench_sluice(args, kdir, batch, gpus=None, instances=None):
    """sluice bench on args.gpu, or on gpus (comma-separated) when given."""
    cmd = [args.sluice, "bench", "--json", "--pipeline", args.pipeline, "--batch", str(batch),
           "--duration", f"{args.seconds:g}s"]
    instances = instances or args.instances
    if gpus is None and args.gpu >= 0:
        gpus = str(args.gpu)
    if gpus:
        cmd += ["--gpu", gpus]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    if args.hw_share is not None:
        cmd += ["--hw-share", f"{args.hw_share:g}"]
    if instances > 1:
        cmd += ["--instances", str(instances)]
    cmd.append(str(kdir))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds + 120)
    except subprocess.TimeoutExpired as e:
        return {"error": f"timed out after {e.timeout:g}s", "command": shlex.join(cmd)}
    except OSError as e:
        return {"error": str(e), "command": shlex.join(cmd)}
    if p.returncode != 0:
        return {"error": short_error(p.stderr or p.stdout), "stderr": p.stderr[-4000:],
                "exit": p.returncode, "command": shlex.join(cmd)}
    try:
        r = json.loads(p.stdout)
    except ValueError:
        return {"error": "unreadable output: " + short_error(p.stdout), "command": shlex.join(cmd)}
    r["command"] = shlex.join(cmd)
    return r


class TorchVision:
    def __init__(self, gpu):
        import torch
        import torchvision
        from torchvision.io import ImageReadMode, decode_jpeg
        from torchvision.transforms.v2 import functional as F

        self.torch, self.F = torch, F
        self.decode, self.mode = decode_jpeg, ImageReadMode.RGB
        self.device = torch.device("cuda", gpu)
        torch.cuda.set_device(self.device)
        self.versions = {"torch": torch.__version__, "torchvision": torchvision.__version__}

    def tensors(self, datas):
        return [self.torch.frombuffer(bytearray(b), dtype=self.torch.uint8) for b in datas]

    def run(self, batch):
        F = self.F
        imgs = self.decode(batch, device=self.device, mode=self.mode)
        out = [F.center_crop(F.resize(im, [256], antialias=True), [224, 224]) for im in imgs]
        x = self.torch.stack(out).float() / 255
        x = F.normalize(x, MEAN, STD)
        self.torch.cuda.synchronize(self.device)
        return x


class NvImgCodec:
    """nvImageCodec (the decoder inside DALI 2.x). "full": decode with its default
    backends (hardware engines, CUDA, CPU) and every core, then the same torch
    resize/crop/normalize as the torchvision contender; "decode": the decode
    alone; "hw": the decode alone on the hardware engines only, the engines'
    ceiling on these files."""

    def __init__(self, gpu, mode):
        import torch
        from nvidia import nvimgcodec
        from torchvision.transforms.v2 import functional as F

        self.torch, self.F, self.mode = torch, F, mode
        self.device = torch.device("cuda", gpu)
        torch.cuda.set_device(self.device)
        kw = {"device_id": gpu, "max_num_cpu_threads": os.cpu_count()}
        if mode == "hw":
            kw["backends"] = [nvimgcodec.Backend(nvimgcodec.BackendKind.HW_GPU_ONLY, load_hint=1.0)]
        self.dec = nvimgcodec.Decoder(**kw)
        self.versions = {"nvimgcodec": getattr(nvimgcodec, "__version__", "?")}

    def tensors(self, datas):
        return list(datas)

    def run(self, batch):
        torch, F = self.torch, self.F
        imgs = self.dec.decode(batch)
        if any(im is None for im in imgs):
            raise RuntimeError(f"{sum(im is None for im in imgs)} of {len(imgs)} images not decoded")
        if self.mode != "full":
            torch.cuda.synchronize(self.device)
            return imgs
        out = [F.center_crop(F.resize(torch.as_tensor(im, device=self.device).permute(2, 0, 1), [256], antialias=True),
                             [224, 224]) for im in imgs]
        x = torch.stack(out).float() / 255
        x = F.normalize(x, MEAN, STD)
        torch.cuda.synchronize(self.device)
        return x


NVIMGCODEC_MODES = {"nvimgcodec": "full", "nvimgcodec-decode": "decode", "nvimgcodec-hw": "hw"}


class Dali:
    """DALI's pipeline (see the module's doc) at one hw_decoder_load; a pipeline
    per kind and batch size, built on first use and dropped with the kind."""

    def __init__(self, gpu, load):
        import numpy as np
        import torch
        from nvidia import dali

        self.np, self.torch, self.dali = np, torch, dali
        self.gpu, self.load = gpu, load
        self.versions = {"dali": dali.__version__}

    def pipeline(self, datas, batch):
        from nvidia.dali import fn, types

        np = self.np
        items = batches_of([np.frombuffer(d, np.uint8) for d in datas], batch)
        mean, std = [m * 255 for m in MEAN], [s * 255 for s in STD]

        @self.dali.pipeline_def(batch_size=batch, num_threads=os.cpu_count(), device_id=self.gpu,
                                prefetch_queue_depth=2)
        def imagenet():
            enc = fn.external_source(source=lambda: next(items), batch=True, dtype=types.UINT8)
            img = fn.decoders.image(enc, device="mixed", output_type=types.RGB, hw_decoder_load=self.load)
            img = fn.resize(img, resize_shorter=256, interp_type=types.INTERP_LINEAR, antialias=True)
            return fn.crop_mirror_normalize(img, crop=(224, 224), mean=mean, std=std, dtype=types.FLOAT,
                                            output_layout="CHW")

        p = imagenet()
        p.build()
        for _ in range(10):
            p.run()
        return p

    def timed(self, datas, batch, seconds):
        p = self.pipeline(datas, batch)
        r = timed(lambda _: p.run(), batches_of(datas, batch), seconds)
        self.torch.cuda.synchronize(self.gpu)
        del p
        return r


DALI_LOADS = {"dali-0.65": 0.65, "dali-0.9": 0.9}


class OpenCV:
    def __init__(self):
        import concurrent.futures

        import cv2

        sys.path.insert(0, str(ROOT / "scripts"))
        from bench_cpu import opencv_one

        cv2.setNumThreads(1)  # the pool's threads, not OpenCV's, use the cores
        self.one = opencv_one
        self.pool = concurrent.futures.ThreadPoolExecutor(os.cpu_count())
        self.versions = {"cv2": cv2.__version__}

    def run(self, batch):
        return list(self.pool.map(self.one, batch))


def measure(name, fn, *a):
    try:
        return fn(*a)
    except Exception as e:  # one contender's failure is a table cell, not a crash
        return {"error": f"{type(e).__name__}: {short_error(e)}"}


def gpu_info():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        line = out.stdout.strip().splitlines()
        return line[0] if out.returncode == 0 and line else f"nvidia-smi failed: {short_error(out.stderr)}"
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"nvidia-smi unavailable ({e})"


def versions(contenders):
    v = {}
    for mod in ["torch", "torchvision", "cv2", "nvidia.nvimgcodec", "nvidia.dali"]:
        if mod in ("torch", "torchvision") and not {"torchvision", *NVIMGCODEC_MODES, *DALI_LOADS} & set(contenders):
            v[mod] = "not loaded"
            continue
        try:
            import importlib

            v[mod] = getattr(importlib.import_module(mod), "__version__", "?")
        except Exception as e:
            v[mod] = f"absent ({type(e).__name__})"
    return v


def cell_md(r):
    """img/s, p50, p99 cells for one result."""
    if r is None:
        return ["–", "–", "–"]
    if "error" in r:
        return ["FAILED: " + r["error"].replace("|", "\\|").replace("\n", " "), "–", "–"]
    ips = f"{r['images_per_sec']:,.0f}"
    if r.get("failed"):
        ips += f" ({r['failed']} failed samples)"
    return [ips, f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}"]


def ratio(a, b):
    if not a or not b or "error" in a or "error" in b or not b["images_per_sec"]:
        return "n/a"
    return f"{a['images_per_sec'] / b['images_per_sec']:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sluice", default=str(ROOT / "build/sluice"))
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared/corpus"))
    ap.add_argument("--pipeline", default="model_repository/preprocess_imagenet/1/pipeline.pbtxt")
    ap.add_argument("--batches", default="16,64,256", help="comma-separated batch sizes")
    ap.add_argument("--seconds", type=float, default=4, help="measured seconds per kind, batch and contender")
    ap.add_argument("--gpu", type=int, default=0, help="device ordinal; -1: Sluice's CPU executor")
    ap.add_argument("--workers", type=int, default=0, help="sluice bench --workers (0: its default)")
    ap.add_argument("--instances", type=int, default=1,
                    help="sluice bench --instances: executors at once, as a Triton instance count")
    ap.add_argument("--hw-share", type=float, help="sluice bench --hw-share (default: Sluice's)")
    ap.add_argument("--only", default=",".join(CONTENDERS), help="comma-separated subset of " + ",".join(CONTENDERS))
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of: " + ", ".join(KINDS))
    ap.add_argument("--json-out")
    ap.add_argument("--md-out")
    args = ap.parse_args()

    only = [c.strip() for c in args.only.split(",") if c.strip()]
    if bad := set(only) - set(CONTENDERS):
        ap.error(f"--only: unknown {sorted(bad)}")
    batch_sizes = [int(b) for b in args.batches.split(",")]
    corpus = pathlib.Path(args.corpus)
    dirs = [corpus / "jpeg/derived", corpus / "jpeg/native"]
    files = sorted(p for d in dirs for p in d.glob("*.jp*g"))
    if not files:
        sys.exit(f"no JPEGs in {', '.join(map(str, dirs))}")
    kinds = {k: [] for k in KINDS}
    for p in files:
        kinds[classify(p)].append(p)
    kinds["whole mix"] = list(files)
    # Photos of 1,000 px a side and more (jpeg/large, jpeg/exif): where decode
    # dominates even more.
    kinds["larger photos"] = [p for d in ("jpeg/large", "jpeg/exif") for p in sorted((corpus / d).glob("*.jp*g"))
                              if max(size_of(p)) >= 1000]
    data = {p: p.read_bytes() for k in kinds.values() for p in k}

    command = shlex.join(["python3", *sys.argv])
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": gpu_info() if args.gpu >= 0 else "none (--gpu -1: Sluice CPU executor)",
        "cpus": os.cpu_count(),
        "command": command,
        "seconds": args.seconds,
        "kinds": {k: len(v) for k, v in kinds.items()},
    }

    setup_err = {}

    def setup(name, make):
        """The contender make() builds, or None with its error in setup_err:
        one contender's failure is its table cells, not the run's end."""
        if name not in only:
            return None
        r = measure(name, make)
        if isinstance(r, dict):
            setup_err[name] = r
            return None
        return r

    tv = setup("torchvision", lambda: TorchVision(args.gpu))
    gpu_peers = {n: p for n in NVIMGCODEC_MODES
                 if (p := setup(n, lambda n=n: NvImgCodec(args.gpu, NVIMGCODEC_MODES[n])))}
    dalis = {n: p for n in DALI_LOADS if (p := setup(n, lambda n=n: Dali(args.gpu, DALI_LOADS[n])))}
    ocv = setup("opencv", OpenCV)
    info["versions"] = versions(only)

    rows = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sluice-bench-") as tmp:
        for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
            kfiles = kinds[kind]
            if not kfiles:
                rows.append({"kind": kind, "files": 0, "batch": None, "skipped": "no files"})
                continue
            # sluice bench reads whole directories: one of links per kind.
            kdir = pathlib.Path(tmp) / kind.replace(" ", "_")
            kdir.mkdir()
            for p in kfiles:
                (kdir / f"{p.parent.name}_{p.name}").symlink_to(p.resolve())
            datas = [data[p] for p in kfiles]

            tv_items = None
            if tv:
                try:
                    tv_items = tv.tensors(datas)
                    # Warm-up once per kind: every batch size once (nvJPEG and the
                    # caching allocator size their buffers per batch).
                    for b in batch_sizes:
                        tv.run(next(batches_of(tv_items, b)))
                except Exception as e:  # e.g. a kind nvJPEG cannot decode: every row says so
                    tv_items = {"error": f"{type(e).__name__}: {short_error(e)}"}
            if ocv:
                ocv.run(datas)  # warm-up: every image once
            peer_items = {}
            for name, peer in gpu_peers.items():
                try:
                    for b in batch_sizes:
                        peer.run(next(batches_of(datas, b)))
                    peer_items[name] = datas
                except Exception as e:
                    peer_items[name] = {"error": f"{type(e).__name__}: {short_error(e)}"}

            for b in batch_sizes:
                row = {"kind": kind, "files": len(kfiles), "batch": b}
                if "sluice" in only:
                    row["sluice"] = measure("sluice", bench_sluice, args, kdir, b)
                if "sluice-x2" in only:
                    row["sluice-x2"] = measure("sluice-x2", bench_sluice, args, kdir, b, None, 2)
                for name in DALI_LOADS:
                    if name in only:
                        row[name] = (setup_err[name] if name not in dalis else
                                     measure(name, dalis[name].timed, datas, b, args.seconds))
                if "torchvision" in only:
                    if tv is None:
                        row["torchvision"] = setup_err["torchvision"]
                    elif isinstance(tv_items, dict):
                        row["torchvision"] = tv_items
                    else:
                        row["torchvision"] = measure("torchvision", timed, tv.run, batches_of(tv_items, b),
                                                     args.seconds)
                for name in NVIMGCODEC_MODES:
                    if name not in only:
                        continue
                    if name not in gpu_peers:
                        row[name] = setup_err[name]
                    elif isinstance(peer_items[name], dict):
                        row[name] = peer_items[name]
                    else:
                        row[name] = measure(name, timed, gpu_peers[name].run, batches_of(datas, b), args.seconds)
                if "opencv" in only:
                    row["opencv"] = (setup_err["opencv"] if ocv is None else
                                     measure("opencv", timed, ocv.run, batches_of(datas, b), args.seconds))
                rows.append(row)
                print(f"# {kind} batch {b}: " + "  ".join(
                    f"{c} {cell_md(row.get(c))[0]}" for c in CONTENDERS if c in row), file=sys.stderr, flush=True)
    info["wall_seconds"] = round(time.perf_counter() - t0, 1)

    v = info["versions"]
    shown = [c for c in CONTENDERS if c in only]
    md = [
        f"# Sluice GPU vs its peers: ImageNet preprocessing ({info['cpus']} CPU threads)",
        "",
        f"{info['date']}; GPU: {info['gpu']}; {info['cpus']} CPUs; torch {v['torch']}, "
        f"torchvision {v['torchvision']}, cv2 {v['cv2']}, nvImageCodec {v['nvidia.nvimgcodec']}, "
        f"DALI {v['nvidia.dali']}; "
        f"{args.seconds:g} s per cell; wall {info['wall_seconds']} s",
        "",
        "JPEGs from jpeg/derived + jpeg/native: " + ", ".join(f"{k} {n}" for k, n in info["kinds"].items()),
        "",
        "sluice-x2: two instances; dali-0.65 / dali-0.9: DALI's pipeline at that hw_decoder_load; "
        "nvimgcodec: decode (default backends, all cores) + the torchvision contender's torch resize/crop/normalize; "
        "nvimgcodec-decode: its decode alone; nvimgcodec-hw: decode alone on the hardware engines only.",
        "",
        f"Command: `{command}`",
        "",
        "| kind (files) | batch | " + " | ".join(f"{c} img/s | p50 ms | p99 ms" for c in shown)
        + " | best Sluice / best full-pipeline peer |",
        "|---|---|" + "---|---|---|" * len(shown) + "---|",
    ]
    for r in rows:
        label = f"{r['kind']} ({r['files']})"
        if r.get("skipped"):
            md.append(f"| {label} | – | " + " | ".join(["n/a", "", ""] * len(shown)) + " | n/a |")
            continue
        cells = [x for c in shown for x in cell_md(r.get(c))]
        ok = lambda names: [r[c] for c in names if r.get(c) and "error" not in r[c]]  # noqa: E731
        best = max(ok(FULL_PEERS), key=lambda x: x["images_per_sec"], default=None)
        ours = max(ok(["sluice", "sluice-x2"]), key=lambda x: x["images_per_sec"], default=None)
        md.append("| " + " | ".join([label, str(r["batch"]), *cells, ratio(ours, best)]) + " |")
    text = "\n".join(md) + "\n"
    print(text, end="", flush=True)
    if args.md_out:
        pathlib.Path(args.md_out).write_text(text)
    if args.json_out:
        info["files"] = {k: [f"{p.parent.name}/{p.name}" for p in v] for k, v in kinds.items()}
        info["rows"] = rows
        pathlib.Path(args.json_out).write_text(json.dumps(info, indent=1) + "\n")


if __name__ == "__main__":
    main()
