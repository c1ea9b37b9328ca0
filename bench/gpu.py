#!/usr/bin/env python3
"""Sluice's GPU ImageNet pipeline side by side with torchvision on the GPU and
OpenCV on all cores, on the same photos in one run, per kind of JPEG and batch
size. Prints a Markdown table and writes it (--md-out) and JSON (--json-out).

    python3 -m bench.gpu --sluice .bench/gpu/sluice --corpus .bench/gpu/corpus \\
        --batches 16,64,256 --seconds 3 --gpu 0 --json-out bench.json --md-out bench.md

The photos are corpus/jpeg/derived and corpus/jpeg/native, split by Pillow into
baseline colour, grayscale and progressive JPEGs, plus all of them together, and
the photos of jpeg/large and jpeg/exif with a side of 1,000 px or more.

- Sluice: `sluice bench --gpu N`, one process per kind and batch size (its own
  warm-up pass over every image first).
- torchvision, as a user would write it: torchvision.io.decode_jpeg on a list of
  encoded tensors with device='cuda', then per image resize(256, antialias) and
  center_crop(224) on the uint8 tensor, stack, /255, normalize; synchronized per batch.
- sluice-xN (N 2 to 4): the same with --instances N (N executors sharing the
  GPU's decoders, as a Triton instance count of N).
- sluice-fast, sluice-fast-xN: the same with decode's jpeg_fancy_upsampling
  false (JPEG chroma replicated, DALI's default; the JPEG engines then write
  RGB themselves).
- sluice-sm, sluice-sm-xN: Sluice's default with its third route on
  (SLUICE_GPU_SLUICE_HUFFMAN=1: the baseline JPEGs the engines leave are
  entropy-decoded on the SMs; SLUICE_GPU_SM_SHARE from the environment).
- DALI 2.4, as its docs write an inference pipeline: fn.external_source (the
  encoded bytes in host memory, cycled as sluice bench fills its batches) ->
  fn.decoders.image(device="mixed", output_type=RGB, hw_decoder_load=0.65 (its
  default) or 0.9, jpeg_fancy_upsampling False (its default: chroma
  replicated on the GPU, up to 83 levels from Pillow on the corpus) or True
  (dali-fancy-*: libjpeg's upsampling, as Pillow and Sluice's default)) ->
  fn.resize(resize_shorter=256, linear, antialias) ->
  fn.crop_mirror_normalize(crop 224, ImageNet mean/std x255, FLOAT, CHW);
  num_threads os.cpu_count(), prefetch_queue_depth 2, 10 warm-up iterations,
  the device synchronised after the measured iterations. dali-*-xN: N such
  pipelines, the threads split evenly between them, each run from its own
  Python thread, measured together: what a DALI backend model with instance
  count N runs.
- OpenCV: bench.cpu's opencv_one over a thread pool of os.cpu_count() threads,
  one batch at a time.

--rounds N measures every cell N times, each contender once a round before the
next round, so that the machine's drift (10-15% between minutes on an H200's
cores) touches every contender alike: a cell is then the median round (its range
beside it), a ratio the median of the rounds' ratios, each round's taken within
that round.

The ratio columns compare like with like, each the best Sluice configuration
measured over the best peer's, both named: Sluice's default against DALI's
default (the two products as they ship), then Sluice's default and the peers
that upsample JPEG chroma as libjpeg and Pillow do (DALI with
jpeg_fancy_upsampling, nvImageCodec's default), then sluice-fast and the peers
that replicate it (DALI's default). torchvision and OpenCV are in none.

Latency is per batch (p50/p99, the same percentile definition as sluice bench).
torch is imported only when torchvision runs, so --only sluice,opencv works
without it; --gpu -1 runs Sluice's CPU executor (for dry runs on a machine
with no GPU).
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

from bench import common
from bench.common import batches_of, timed

KINDS = ["baseline colour", "grayscale", "progressive", "whole mix", "larger photos"]


class Contender:
    """One column group of the table. setup() once: heavy imports, the device
    (a failure fills every cell of the contender); prepare(kdir, datas,
    batch_sizes) once per kind of files: warm-up (a failure fills that kind's
    cells); measure(batch) per batch size: a result in sluice bench --json's
    keys, or {"error": ...}."""

    full_pipeline = False  # a peer Sluice's ratio is taken against (the best of them)
    ours = False  # a Sluice run, the ratio's other side
    uses_torch = False
    # JPEG chroma: True upsampled as libjpeg and Pillow do, False replicated,
    # None not known (in no ratio).
    fancy = None

    def __init__(self, name):
        self.name = name

    def setup(self):
        pass

    def prepare(self, kdir, datas, batch_sizes):
        pass

    def measure(self, batch):
        raise NotImplementedError


class Sluice(Contender):
    """`sluice bench` in a process of its own (its own warm-up pass over every image first)."""

    ours = True

    def __init__(self, name, args, instances, fancy=True, env=None):
        super().__init__(name)
        self.args, self.instances, self.fancy, self.env = args, instances, fancy, env
        # As it ships: in the defaults' ratio too.
        self.default = fancy and not env

    def prepare(self, kdir, datas, batch_sizes):
        self.kdir = kdir
        self.pipeline = self.args.pipeline
        if not self.fancy:
            self.pipeline = common.fast_upsampling_pipeline(self.args.pipeline, kdir.parent)

    def measure(self, batch):
        a = self.args
        trace = None
        if a.trace_dir:
            trace = pathlib.Path(a.trace_dir) / f"{self.name}-{self.kdir.name}-{batch}.json"
        return common.sluice_bench(a.sluice, self.pipeline, [self.kdir], batch, a.seconds,
                                   gpus=str(a.gpu) if a.gpu >= 0 else "", workers=a.workers,
                                   instances=self.instances, hw_share=a.hw_share, trace=trace, env=self.env)


class InProcess(Contender):
    """A contender timed here, batch by batch: run(batch) on items of the
    kind's encoded images; warm-up once per kind, every batch size once
    (nvJPEG and the caching allocator size their buffers per batch)."""

    def __init__(self, name, seconds):
        super().__init__(name)
        self.seconds = seconds

    def items(self, datas):
        return list(datas)

    def prepare(self, kdir, datas, batch_sizes):
        self.kind_items = self.items(datas)
        for b in batch_sizes:
            self.run(next(batches_of(self.kind_items, b)))

    def run(self, batch):
        raise NotImplementedError

    def measure(self, batch):
        return timed(self.run, batches_of(self.kind_items, batch), self.seconds)


class TorchVision(InProcess):
    full_pipeline = True
    uses_torch = True

    def __init__(self, name, gpu, seconds):
        super().__init__(name, seconds)
        self.gpu = gpu

    def setup(self):
        import torch
        import torchvision
        from torchvision.io import ImageReadMode, decode_jpeg
        from torchvision.transforms.v2 import functional as F

        self.torch, self.F = torch, F
        self.decode, self.mode = decode_jpeg, ImageReadMode.RGB
        self.device = torch.device("cuda", self.gpu)
        torch.cuda.set_device(self.device)
        self.versions = {"torch": torch.__version__, "torchvision": torchvision.__version__}

    def items(self, datas):
        return [self.torch.frombuffer(bytearray(b), dtype=self.torch.uint8) for b in datas]

    def run(self, batch):
        F = self.F
        imgs = self.decode(batch, device=self.device, mode=self.mode)
        out = [F.center_crop(F.resize(im, [256], antialias=True), [224, 224]) for im in imgs]
        x = self.torch.stack(out).float() / 255
        x = F.normalize(x, common.MEAN, common.STD)
        self.torch.cuda.synchronize(self.device)
        return x


class NvImgCodec(InProcess):
    """nvImageCodec (the decoder inside DALI 2.x). "full": decode with its default
    backends (hardware engines, CUDA, CPU) and every core, then the same torch
    resize/crop/normalize as the torchvision contender; "decode": the decode
    alone; "hw": the decode alone on the hardware engines only, the engines'
    ceiling on these files."""

    fancy = True  # its default: within 1 level of Pillow on the corpus (docs/perf.md)

    uses_torch = True

    def __init__(self, name, gpu, mode, seconds):
        super().__init__(name, seconds)
        self.gpu, self.mode = gpu, mode
        self.full_pipeline = mode == "full"

    def setup(self):
        import torch
        from nvidia import nvimgcodec
        from torchvision.transforms.v2 import functional as F

        self.torch, self.F = torch, F
        self.device = torch.device("cuda", self.gpu)
        torch.cuda.set_device(self.device)
        kw = {"device_id": self.gpu, "max_num_cpu_threads": os.cpu_count()}
        if self.mode == "hw":
            kw["backends"] = [nvimgcodec.Backend(nvimgcodec.BackendKind.HW_GPU_ONLY, load_hint=1.0)]
        self.dec = nvimgcodec.Decoder(**kw)
        self.versions = {"nvimgcodec": getattr(nvimgcodec, "__version__", "?")}

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
        x = F.normalize(x, common.MEAN, common.STD)
        torch.cuda.synchronize(self.device)
        return x


class Dali(Contender):
    """DALI's pipeline (see the module's doc) at one hw_decoder_load and
    jpeg_fancy_upsampling, as `pipelines` pipelines side by side; built per
    kind and batch size when measured and dropped after."""

    full_pipeline = True
    uses_torch = True

    def __init__(self, name, gpu, load, seconds, fancy=False, pipelines=1):
        super().__init__(name)
        self.gpu, self.load, self.seconds, self.fancy, self.pipelines = gpu, load, seconds, fancy, pipelines

    def setup(self):
        import numpy as np
        import torch
        from nvidia import dali

        self.np, self.torch, self.dali = np, torch, dali
        self.versions = {"dali": dali.__version__}

    def prepare(self, kdir, datas, batch_sizes):
        self.datas = datas

    def pipeline(self, batch, threads):
        from nvidia.dali import fn, types

        np = self.np
        items = batches_of([np.frombuffer(d, np.uint8) for d in self.datas], batch)
        mean, std = [m * 255 for m in common.MEAN], [s * 255 for s in common.STD]

        @self.dali.pipeline_def(batch_size=batch, num_threads=threads, device_id=self.gpu, prefetch_queue_depth=2)
        def imagenet():
            enc = fn.external_source(source=lambda: next(items), batch=True, dtype=types.UINT8)
            img = fn.decoders.image(enc, device="mixed", output_type=types.RGB, hw_decoder_load=self.load,
                                    jpeg_fancy_upsampling=self.fancy)
            img = fn.resize(img, resize_shorter=256, interp_type=types.INTERP_LINEAR, antialias=True)
            return fn.crop_mirror_normalize(img, crop=(224, 224), mean=mean, std=std, dtype=types.FLOAT,
                                            output_layout="CHW")

        p = imagenet()
        p.build()
        for _ in range(10):
            p.run()
        return p

    def measure(self, batch):
        threads = max(1, (os.cpu_count() or 1) // self.pipelines)
        ps = [self.pipeline(batch, threads) for _ in range(self.pipelines)]
        r = common.timed_together([(lambda _, p=p: p.run(), batches_of(self.datas, batch)) for p in ps],
                                  self.seconds)
        self.torch.cuda.synchronize(self.gpu)
        r["pipelines"], r["threads_each"] = self.pipelines, threads
        del ps
        return r


class OpenCV(InProcess):
    """bench.cpu's OpenCV pipeline on a pool of os.cpu_count() threads, a batch at a time."""

    full_pipeline = True

    def setup(self):
        from bench import cpu

        self.pool = cpu.OpenCV(os.cpu_count())
        self.versions = self.pool.versions

    def prepare(self, kdir, datas, batch_sizes):
        self.kind_items = list(datas)
        self.run(datas)  # warm-up: every image once

    def run(self, batch):
        return self.pool.run(batch)


# Instance (Sluice) and pipeline (DALI) counts the contenders come in: a
# Triton model's instance count, each side at its best.
COUNTS = range(1, 5)


def _counted(base, count):
    """A contender's name at a count: base for 1, base-xN otherwise."""
    return base if count == 1 else f"{base}-x{count}"


def _contenders():
    c = {}
    # "sluice", "sluice-fast" and "sluice-sm" run --instances executors (default 1).
    for base, kw in (("sluice", {}), ("sluice-fast", {"fancy": False}),
                     ("sluice-sm", {"env": {"SLUICE_GPU_SLUICE_HUFFMAN": "1"}})):
        for n in COUNTS:
            c[_counted(base, n)] = lambda name, a, n=n, kw=kw: Sluice(name, a, a.instances if n == 1 else n, **kw)
    for fancy in (False, True):
        for load in (0.65, 0.9):
            for n in COUNTS:
                base = f"dali-{'fancy-' if fancy else ''}{load}"
                c[_counted(base, n)] = lambda name, a, load=load, fancy=fancy, n=n: Dali(
                    name, a.gpu, load, a.seconds, fancy=fancy, pipelines=n)
    c.update({
        "torchvision": lambda n, a: TorchVision(n, a.gpu, a.seconds),
        "nvimgcodec": lambda n, a: NvImgCodec(n, a.gpu, "full", a.seconds),
        "nvimgcodec-decode": lambda n, a: NvImgCodec(n, a.gpu, "decode", a.seconds),
        "nvimgcodec-hw": lambda n, a: NvImgCodec(n, a.gpu, "hw", a.seconds),
        "opencv": lambda n, a: OpenCV(n, a.seconds),
    })
    return c


# The contenders by name, in the order of the table's columns.
CONTENDERS = _contenders()
# The order they are set up in, as the script always did: the torch users,
# then DALI, then OpenCV.
SETUP_ORDER = (["torchvision", "nvimgcodec", "nvimgcodec-decode", "nvimgcodec-hw"]
               + [n for n in CONTENDERS if n.startswith("dali-")] + ["opencv"])
# What runs without --only: Sluice as it ships and DALI at every count,
# with both chroma rules, and the other peers once.
DEFAULT_ONLY = [n for n in CONTENDERS if not n.startswith(("nvimgcodec-", "sluice-sm"))]


def guard(fn, *a):
    """fn's result; an exception as an error result."""
    try:
        return fn(*a)
    except Exception as e:  # one contender's failure is a table cell, not a crash
        return common.error_of(e)


def versions(contenders):
    v = {}
    for mod in ["torch", "torchvision", "cv2", "nvidia.nvimgcodec", "nvidia.dali"]:
        if mod in ("torch", "torchvision") and not any(c.uses_torch for c in contenders):
            v[mod] = "not loaded"
            continue
        try:
            import importlib

            v[mod] = getattr(importlib.import_module(mod), "__version__", "?")
        except Exception as e:
            v[mod] = f"absent ({type(e).__name__})"
    return v


def lower_median(xs, key=None):
    """The median of xs, the lower middle one of an even count: always one of them."""
    return sorted(xs, key=key)[(len(xs) - 1) // 2]


def median_round(runs):
    """Of one cell's rounds, the first error, else the round of the median
    images/s."""
    for r in runs:
        if "error" in r:
            return r
    return lower_median(runs, key=lambda r: r["images_per_sec"])


def cell_md(runs):
    """img/s, p50, p99 cells for one cell's rounds: the median round's, with
    the range of images/s over the rounds when there are several."""
    if not runs:
        return ["–", "–", "–"]
    r = median_round(runs)
    if "error" in r:
        return [common.md_failed(r["error"]), "–", "–"]
    ips = f"{r['images_per_sec']:,.0f}"
    if len(runs) > 1:
        rates = [x["images_per_sec"] for x in runs]
        ips += f" ({min(rates):,.0f}–{max(rates):,.0f})"
    if failed := sum(x.get("failed", 0) for x in runs):
        ips += f" ({failed} failed samples)"
    return [ips, f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}"]


def ratio_md(runs, mine, peers):
    """Best of mine over best of peers, taken within each round (the same
    minute's cells): the median of the rounds' ratios, their range beside
    it when there are several, and the two configurations of the median
    round; n/a without a result on both sides."""

    def best(names, i):
        ok = [(runs[c][i]["images_per_sec"], c) for c in names if c in runs and "error" not in runs[c][i]]
        return max(ok, default=None)

    rounds = min((len(runs[c]) for c in mine + peers if c in runs), default=0)
    ratios = []
    for i in range(rounds):
        a, b = best(mine, i), best(peers, i)
        if a is not None and b is not None and b[0]:
            ratios.append((a[0] / b[0], a[1], b[1]))
    if not ratios:
        return "n/a"
    r, a, b = lower_median(ratios, key=lambda x: x[0])
    text = f"{r:.2f}x"
    if len(ratios) > 1:
        text += f" ({min(x[0] for x in ratios):.2f}–{max(x[0] for x in ratios):.2f}x)"
    return f"{text} {a} / {b}"


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.gpu", description=__doc__.split("\n\n")[0])
    common.add_inputs(ap)
    ap.add_argument("--pipeline", default=common.IMAGENET_PIPELINE)
    ap.add_argument("--batches", default="16,64,256", help="comma-separated batch sizes")
    ap.add_argument("--seconds", type=float, default=4, help="measured seconds per kind, batch and contender")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every cell this many times, each contender once a round (default: %(default)s)")
    ap.add_argument("--gpu", type=int, default=0, help="device ordinal; -1: Sluice's CPU executor")
    ap.add_argument("--workers", type=int, default=0, help="sluice bench --workers (0: its default)")
    ap.add_argument("--instances", type=int, default=1,
                    help="sluice bench --instances: executors at once, as a Triton instance count")
    ap.add_argument("--hw-share", type=float, help="sluice bench --hw-share (default: Sluice's)")
    ap.add_argument("--only", default=",".join(DEFAULT_ONLY),
                    help="comma-separated subset of " + ",".join(CONTENDERS) + " (default: all but nvimgcodec-*)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of: " + ", ".join(KINDS))
    ap.add_argument("--trace-dir", help="write each Sluice cell's GPU timeline here (bench/timeline.py reads them)")
    ap.add_argument("--json-out")
    ap.add_argument("--md-out")
    args = ap.parse_args()
    if args.trace_dir:
        pathlib.Path(args.trace_dir).mkdir(parents=True, exist_ok=True)

    only = [c.strip() for c in args.only.split(",") if c.strip()]
    if bad := set(only) - set(CONTENDERS):
        ap.error(f"--only: unknown {sorted(bad)}")
    if args.rounds < 1:
        ap.error("--rounds: at least 1")
    batch_sizes = [int(b) for b in args.batches.split(",")]
    corpus = pathlib.Path(args.corpus)
    files = common.mix_files(corpus)
    if not files:
        sys.exit(f"no JPEGs in {', '.join(str(corpus / d) for d in common.MIX_DIRS)}")
    kinds = {k: [] for k in KINDS}
    for p in files:
        kinds[common.classify(p)].append(p)
    kinds["whole mix"] = list(files)
    kinds["larger photos"] = common.larger_photos(corpus)
    data = {p: p.read_bytes() for k in kinds.values() for p in k}

    command = common.command_line()
    info = {
        "date": common.utc_now(),
        "gpu": common.gpu_info() if args.gpu >= 0 else "none (--gpu -1: Sluice CPU executor)",
        "cpus": os.cpu_count(),
        "command": command,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "kinds": {k: len(v) for k, v in kinds.items()},
    }

    contenders = [make(name, args) for name, make in CONTENDERS.items() if name in only]
    setup_err = {}  # name: the error that fills its every cell
    for c in sorted(contenders, key=lambda c: SETUP_ORDER.index(c.name) if c.name in SETUP_ORDER else -1):
        if err := guard(c.setup):
            setup_err[c.name] = err
    info["versions"] = versions(contenders)

    rows = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sluice-bench-") as tmp:
        for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
            kfiles = kinds[kind]
            if not kfiles:
                rows.append({"kind": kind, "files": 0, "batch": None, "skipped": "no files"})
                continue
            kdir = common.link_dir(tmp, kind, kfiles)
            datas = [data[p] for p in kfiles]
            # e.g. a kind nvJPEG cannot decode: every row of the kind says so
            kind_err = dict(setup_err)
            for c in contenders:
                if c.name not in kind_err and (err := guard(c.prepare, kdir, datas, batch_sizes)):
                    kind_err[c.name] = err
            krows = [{"kind": kind, "files": len(kfiles), "batch": b, "rounds": {c.name: [] for c in contenders}}
                     for b in batch_sizes]
            for rnd in range(args.rounds):
                for row in krows:
                    for c in contenders:
                        row["rounds"][c.name].append(kind_err.get(c.name) or guard(c.measure, row["batch"]))
                    print(f"# {kind} batch {row['batch']}" + (f" round {rnd + 1}" if args.rounds > 1 else "") + ": "
                          + "  ".join(f"{c.name} {cell_md(row['rounds'][c.name][-1:])[0]}" for c in contenders),
                          file=sys.stderr, flush=True)
            for row in krows:  # each contender's median round in its own key, as with one round
                row.update({c: median_round(runs) for c, runs in row["rounds"].items()})
            rows.extend(krows)
    info["wall_seconds"] = round(time.perf_counter() - t0, 1)

    v = info["versions"]
    shown = [c.name for c in contenders]
    # The ratio columns: each product's default against the other's (Sluice
    # upsamples chroma as Pillow does, DALI replicates it), then per kind of
    # chroma upsampling, Sluice's runs and the full-pipeline peers that
    # upsample the same way.
    sides = [([c.name for c in contenders if c.ours and c.default],
              [c.name for c in contenders if isinstance(c, Dali) and not c.fancy])]
    sides += [([c.name for c in contenders if c.ours and c.fancy is fancy],
               [c.name for c in contenders if c.full_pipeline and not c.ours and c.fancy is fancy])
              for fancy in (True, False)]
    md = [
        f"# Sluice GPU vs its peers: ImageNet preprocessing ({info['cpus']} CPU threads)",
        "",
        f"{info['date']}; GPU: {info['gpu']}; {info['cpus']} CPUs; torch {v['torch']}, "
        f"torchvision {v['torchvision']}, cv2 {v['cv2']}, nvImageCodec {v['nvidia.nvimgcodec']}, "
        f"DALI {v['nvidia.dali']}; "
        f"{args.seconds:g} s per cell; "
        + (f"{args.rounds} rounds, each cell the median round (range), each ratio the median of the rounds' "
           f"(range); " if args.rounds > 1 else "")
        + f"wall {info['wall_seconds']} s",
        "",
        "JPEGs from jpeg/derived + jpeg/native: " + ", ".join(f"{k} {n}" for k, n in info["kinds"].items()),
        "",
        "sluice-xN: N instances; sluice-fast: jpeg_fancy_upsampling false; "
        "dali-0.65 / dali-0.9: DALI's pipeline at that hw_decoder_load (dali-fancy-: with jpeg_fancy_upsampling; "
        "-xN: N pipelines, the threads split between them); "
        "nvimgcodec: decode (default backends, all cores) + the torchvision contender's torch resize/crop/normalize; "
        "nvimgcodec-decode: its decode alone; nvimgcodec-hw: decode alone on the hardware engines only.",
        "",
        f"Command: `{command}`",
        "",
        common.md_row(["kind (files)", "batch", *(f"{c} img/s | p50 ms | p99 ms" for c in shown),
                       "defaults: best Sluice / best DALI",
                       "Pillow's upsampling: best Sluice / best peer",
                       "replicated chroma: best sluice-fast / best peer"]),
        common.md_rule(2 + 3 * len(shown) + len(sides)),
    ]
    for r in rows:
        label = f"{r['kind']} ({r['files']})"
        if r.get("skipped"):
            md.append(common.md_row([label, "–", *["n/a", "", ""] * len(shown), *["n/a"] * len(sides)]))
            continue
        cells = [x for c in shown for x in cell_md(r["rounds"].get(c))]
        ratios = [ratio_md(r["rounds"], mine, peers) for mine, peers in sides]
        md.append(common.md_row([label, str(r["batch"]), *cells, *ratios]))
    text = "\n".join(md) + "\n"
    print(text, end="", flush=True)
    if args.md_out:
        pathlib.Path(args.md_out).write_text(text)
    if args.json_out:
        info["files"] = {k: [f"{p.parent.name}/{p.name}" for p in v] for k, v in kinds.items()}
        # One round's "rounds" would repeat each cell.
        info["rows"] = rows if args.rounds > 1 else [{k: v for k, v in r.items() if k != "rounds"} for r in rows]
        pathlib.Path(args.json_out).write_text(json.dumps(info, indent=1) + "\n")


if __name__ == "__main__":
    main()
