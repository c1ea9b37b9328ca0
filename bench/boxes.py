#!/usr/bin/env python3
"""Box crops on the CPU: Sluice's crop_boxes pipeline side by side with
Pillow and torchvision's roi_align, on the same photos and the same boxes in
one run, at 1 thread and at all cores. Prints a Markdown table.

    python3 -m bench.boxes --sluice build/sluice --corpus ../shared/corpus

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


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.boxes", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sluice", default=str(common.SLUICE))
    ap.add_argument("--corpus", default=str(common.CORPUS))
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}", help="comma-separated thread counts")
    ap.add_argument("--no-torch", action="store_true", help="leave torchvision out (no torch installed)")
    args = ap.parse_args()

    corpus = pathlib.Path(args.corpus)
    dirs = [corpus / d for d in common.MIX_DIRS]
    paths = common.mix_files(corpus)
    if not paths:
        sys.exit(f"bench.boxes: no JPEGs in {', '.join(map(str, dirs))}")
    peers = {"Pillow": PillowPool(paths)}
    if not args.no_torch:
        peers["torchvision roi_align"] = TorchvisionRoIAlign(paths)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(BOXES, f)
        boxes_file = f.name
    versions = ", ".join(f"{k} {v}" for p in peers.values() for k, v in p.versions.items())
    print(f"# {len(paths)} JPEGs from {', '.join(common.MIX_DIRS)}, {len(BOXES)} boxes each, crops {SIZE}x{SIZE} FP32 CHW; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; {versions}; {common.utc_now()}")
    print(common.md_row(["threads", "Sluice img/s (crops/s)", "Sluice p50 / p99 batch ms",
                         *(f"{n} img/s" for n in peers), "Sluice / best peer"]))
    print(common.md_rule(4 + len(peers)))
    try:
        for t in map(int, args.threads.split(",")):
            s = common.sluice_bench(args.sluice, common.ROOT / PIPELINE, dirs, args.batch, args.seconds,
                                    workers=t, boxes=boxes_file)
            if "error" in s:
                sys.exit(f"bench.boxes: {s['command']}: {s['error']}")
            rates = [p.measure(t, args.seconds) for p in peers.values()]
            ips = s["images_per_sec"]
            print(common.md_row([str(t), f"{ips:,.0f} ({ips * len(BOXES):,.0f})", f"{s['p50_ms']:.1f} / {s['p99_ms']:.1f}",
                                 *(f"{r:,.0f}" for r in rates), f"{ips / max(rates):.2f}x"]), flush=True)
    finally:
        os.unlink(boxes_file)


if __name__ == "__main__":
    main()
