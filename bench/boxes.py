#!/usr/bin/env python3
"""Box crops: Sluice's crop_boxes pipeline side by side with its peers, on the
same photos and the same boxes in one run. Prints a Markdown table.

    python3 -m bench.boxes --sluice build/sluice --corpus ../shared/corpus
    python3 -m bench.boxes --gpu 0 --batches 16,64 ...   (on a GPU machine)

On the CPU (the default), at 1 thread and at all cores, against Pillow and
torchvision's roi_align; with --gpu, per batch size, against torchvision's
roi_align on the GPU and DALI 2.4 (see GPU peers below).

Every contender decodes each JPEG, takes the same four boxes out of it
(fractions of its size, one reaching past the edge, clipped), resizes each
to 224x224 and normalizes it to ImageNet FP32 CHW:
- Sluice: model_repository/preprocess_crops (crop_boxes, linear,
  antialias) through `sluice bench --boxes`, one worker per thread.
- Pillow: Image.open, convert("RGB"), resize((224, 224), BILINEAR,
  box=...) per box (the same arithmetic as Sluice's, exact), NumPy
  normalize, over a pool of threads (Pillow releases the GIL).
- torchvision: decode_jpeg, then roi_align(output_size=224, aligned=True,
  sampling_ratio=2) on the image's boxes (an average of bilinear samples
  per output pixel: not the same pixels, about the same work), normalize;
  torch's intra-op threads set to the thread count.

GPU peers (--gpu N; Sluice: `sluice bench --gpu N --boxes`, one instance):
- torchvision: decode_jpeg on the batch with device='cuda', then per image
  roi_align on its boxes (the images differ in size), normalize, stack;
  synchronized per batch.
- DALI: fn.external_source -> fn.decoders.image(device="mixed",
  hw_decoder_load 0.65, its default) -> per box fn.resize(size 224x224,
  roi_start/roi_end relative, the box clipped to the image, linear,
  antialias) -> fn.crop_mirror_normalize(FLOAT, CHW); num_threads
  os.cpu_count(), prefetch_queue_depth 2, 10 warm-up iterations.
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import platform
import sys
import tempfile
import time

import numpy as np
from PIL import Image

from bench import common

PIPELINE = "model_repository/preprocess_crops/1/pipeline.pbtxt"
SIZE = 224
# x1, y1, x2, y2 as fractions of the width and height; the last reaches
# past the right and bottom edges.
BOXES = [[0.1, 0.1, 0.6, 0.5], [0.3, 0.2, 0.9, 0.8], [0.0, 0.0, 0.4, 0.4], [0.5, 0.6, 1.1, 1.05]]
MEAN = np.array(common.MEAN, np.float32).reshape(3, 1, 1)
STD = np.array(common.STD, np.float32).reshape(3, 1, 1)


def pixel_boxes(w, h):
    return [(max(0.0, x1 * w), max(0.0, y1 * h), min(float(w), x2 * w), min(float(h), y2 * h))
            for x1, y1, x2, y2 in BOXES]


def pillow_one(path):
    with Image.open(path) as im:
        im = im.convert("RGB")
        out = np.empty((len(BOXES), 3, SIZE, SIZE), np.float32)
        for k, box in enumerate(pixel_boxes(*im.size)):
            crop = np.asarray(im.resize((SIZE, SIZE), Image.BILINEAR, box=box), np.float32)
            out[k] = (crop.transpose(2, 0, 1) / 255.0 - MEAN) / STD
        return out


class PillowPool:
    def __init__(self, paths):
        self.paths = paths
        self.versions = {"Pillow": Image.__version__}

    def measure(self, threads, seconds):
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(pillow_one, self.paths))
            n, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                list(pool.map(pillow_one, self.paths))
                n += len(self.paths)
            return n / (time.perf_counter() - start)


class TorchvisionRoIAlign:
    def __init__(self, paths):
        import torch
        import torchvision
        from torchvision.io import ImageReadMode, decode_jpeg
        from torchvision.ops import roi_align

        self.torch, self.decode, self.roi_align, self.rgb = torch, decode_jpeg, roi_align, ImageReadMode.RGB
        self.data = [torch.frombuffer(bytearray(p.read_bytes()), dtype=torch.uint8) for p in paths]
        self.versions = {"torch": torch.__version__, "torchvision": torchvision.__version__}
        self.mean = torch.tensor(common.MEAN).view(1, 3, 1, 1)
        self.std = torch.tensor(common.STD).view(1, 3, 1, 1)

    def one(self, data):
        torch = self.torch
        img = self.decode(data, mode=self.rgb)
        h, w = img.shape[1:]
        boxes = torch.tensor([[0.0, *b] for b in pixel_boxes(w, h)])
        crops = self.roi_align(img[None].float(), boxes, output_size=SIZE, aligned=True, sampling_ratio=2)
        return (crops / 255.0 - self.mean) / self.std

    def measure(self, threads, seconds):
        self.torch.set_num_threads(threads)
        for d in self.data:
            self.one(d)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for d in self.data:
                self.one(d)
            n += len(self.data)
        return n / (time.perf_counter() - start)


class TorchvisionGPU:
    def __init__(self, paths, gpu):
        import torch
        import torchvision
        from torchvision.io import ImageReadMode, decode_jpeg
        from torchvision.ops import roi_align

        self.torch, self.decode, self.roi_align, self.rgb = torch, decode_jpeg, roi_align, ImageReadMode.RGB
        self.device = torch.device("cuda", gpu)
        torch.cuda.set_device(self.device)
        self.items = [torch.frombuffer(bytearray(p.read_bytes()), dtype=torch.uint8) for p in paths]
        self.versions = {"torch": torch.__version__, "torchvision": torchvision.__version__}
        self.mean = torch.tensor(common.MEAN, device=self.device).view(1, 3, 1, 1)
        self.std = torch.tensor(common.STD, device=self.device).view(1, 3, 1, 1)

    def run(self, batch):
        torch = self.torch
        out = []
        for img in self.decode(batch, device=self.device, mode=self.rgb):
            h, w = img.shape[1:]
            boxes = torch.tensor([[0.0, *b] for b in pixel_boxes(w, h)], device=self.device)
            crops = self.roi_align(img[None].float(), boxes, output_size=SIZE, aligned=True, sampling_ratio=2)
            out.append((crops / 255.0 - self.mean) / self.std)
        x = torch.stack(out)
        torch.cuda.synchronize(self.device)
        return x

    def measure(self, batch, seconds):
        batches = common.batches_of(self.items, batch)
        self.run(next(batches))
        return common.timed(self.run, batches, seconds)


class DaliGPU:
    def __init__(self, paths, gpu):
        from nvidia import dali

        self.dali, self.gpu = dali, gpu
        self.datas = [np.frombuffer(p.read_bytes(), np.uint8) for p in paths]
        self.versions = {"dali": dali.__version__}

    def pipeline(self, batch):
        from nvidia.dali import fn, types

        items = common.batches_of(self.datas, batch)
        mean, std = [m * 255 for m in common.MEAN], [s * 255 for s in common.STD]
        # Relative (y, x) corners, clipped to the image as Sluice clips.
        rois = [((max(y1, 0.0), max(x1, 0.0)), (min(y2, 1.0), min(x2, 1.0))) for x1, y1, x2, y2 in BOXES]

        @self.dali.pipeline_def(batch_size=batch, num_threads=os.cpu_count(), device_id=self.gpu, prefetch_queue_depth=2)
        def crops():
            enc = fn.external_source(source=lambda: next(items), batch=True, dtype=types.UINT8)
            img = fn.decoders.image(enc, device="mixed", output_type=types.RGB, hw_decoder_load=0.65)
            return tuple(fn.crop_mirror_normalize(
                fn.resize(img, size=(SIZE, SIZE), roi_start=start, roi_end=end, roi_relative=True,
                          interp_type=types.INTERP_LINEAR, antialias=True),
                mean=mean, std=std, dtype=types.FLOAT, output_layout="CHW") for start, end in rois)

        p = crops()
        p.build()
        for _ in range(10):
            p.run()
        return p

    def measure(self, batch, seconds):
        import torch

        p = self.pipeline(batch)
        r = common.timed(lambda _: p.run(), common.batches_of(self.datas, batch), seconds)
        torch.cuda.synchronize(self.gpu)
        del p
        return r


def main_gpu(args, paths, dirs, boxes_file):
    peers = {}
    for name, make in [("torchvision roi_align", TorchvisionGPU), ("DALI", DaliGPU)]:
        try:
            peers[name] = make(paths, args.gpu)
        except Exception as e:  # a peer that cannot run here is named, not fatal
            print(f"# {name}: not measured: {e}")
    print_head(paths, f"GPU {args.gpu}: {common.gpu_info()}", peers, "batch", "img/s (p99 ms)")
    for b in map(int, args.batches.split(",")):
        s = run_sluice(args, dirs, b, boxes_file, gpus=str(args.gpu))
        rates = []
        for name, p in peers.items():
            try:
                rates.append(p.measure(b, args.seconds))
            except Exception as e:  # named in the table, the other peers still measured
                print(f"# {name}, batch {b}: failed: {e}")
                rates.append({"images_per_sec": 0, "p99_ms": 0})
        print_row(str(b), s, [f"{r['images_per_sec']:,.0f} ({r['p99_ms']:.1f})" for r in rates],
                  max((r["images_per_sec"] for r in rates), default=0))


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.boxes", description=__doc__.split("\n\n")[0])
    common.add_inputs(ap)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}", help="comma-separated thread counts")
    ap.add_argument("--no-torch", action="store_true", help="leave torchvision out (no torch installed)")
    ap.add_argument("--gpu", type=int, default=-1, help="GPU ordinal: Sluice's GPU executor against the GPU peers")
    ap.add_argument("--batches", default="16,64", help="with --gpu: comma-separated batch sizes")
    args = ap.parse_args()

    corpus = pathlib.Path(args.corpus)
    dirs = [corpus / d for d in common.MIX_DIRS]
    paths = common.mix_files(corpus)
    if not paths:
        sys.exit(f"bench.boxes: no JPEGs in {', '.join(map(str, dirs))}")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(BOXES, f)
        boxes_file = f.name
    try:
        if args.gpu >= 0:
            main_gpu(args, paths, dirs, boxes_file)
        else:
            main_cpu(args, paths, dirs, boxes_file)
    finally:
        os.unlink(boxes_file)


def main_cpu(args, paths, dirs, boxes_file):
    peers = {"Pillow": PillowPool(paths)}
    if not args.no_torch:
        peers["torchvision roi_align"] = TorchvisionRoIAlign(paths)
    print_head(paths, platform.processor() or platform.machine(), peers, "threads", "img/s")
    for t in map(int, args.threads.split(",")):
        s = run_sluice(args, dirs, args.batch, boxes_file, workers=t)
        rates = [p.measure(t, args.seconds) for p in peers.values()]
        print_row(str(t), s, [f"{r:,.0f}" for r in rates], max(rates))


def print_head(paths, machine, peers, first, peer_unit):
    """The run's line (photos, machine, versions, time) and the table's head."""
    versions = ", ".join(f"{k} {v}" for p in peers.values() for k, v in p.versions.items())
    print(f"# {len(paths)} JPEGs from {', '.join(common.MIX_DIRS)}, {len(BOXES)} boxes each, crops {SIZE}x{SIZE} FP32 CHW; "
          f"{machine}, {os.cpu_count()} cores; {versions}; {common.utc_now()}")
    print(common.md_row([first, "Sluice img/s (crops/s)", "Sluice p50 / p99 batch ms",
                         *(f"{n} {peer_unit}" for n in peers), "Sluice / best peer"]))
    print(common.md_rule(4 + len(peers)))


def run_sluice(args, dirs, batch, boxes_file, **kw):
    """sluice bench on the boxes pipeline; a failure ends the run, naming the command."""
    s = common.sluice_bench(args.sluice, common.ROOT / PIPELINE, dirs, batch, args.seconds, boxes=boxes_file, **kw)
    if "error" in s:
        sys.exit(f"bench.boxes: {s['command']}: {s['error']}")
    return s


def print_row(first, s, peer_cells, best):
    """One row: Sluice's rate and latency (s, sluice bench's result), the peers' cells, the ratio to the best."""
    ips = s["images_per_sec"]
    print(common.md_row([first, f"{ips:,.0f} ({ips * len(BOXES):,.0f})", f"{s['p50_ms']:.1f} / {s['p99_ms']:.1f}",
                         *peer_cells, f"{ips / best:.2f}x" if best else "-"]), flush=True)


if __name__ == "__main__":
    main()
