#!/usr/bin/env python3
"""Sluice's CPU ImageNet pipeline side by side with OpenCV, on the same photos
in one run, at 1 thread and at all cores. Prints a Markdown table.

    python3 -m bench.cpu --sluice build/sluice --corpus ../shared/corpus

OpenCV does what a Python service typically does: cv2.imdecode, BGR→RGB,
resize shorter side to 256 (INTER_LINEAR), center crop 224, then NumPy
scale/normalize/transpose to CHW float32, with a thread pool (OpenCV and
NumPy release the GIL) and cv2.setNumThreads(1) so threads do not nest.
"""

import argparse
import concurrent.futures
import os
import pathlib
import platform
import sys
import time

import cv2
import numpy as np

from bench import common

MEAN = np.array(common.MEAN, np.float32)
STD = np.array(common.STD, np.float32)


def opencv_one(buf):
    img = cv2.imdecode(np.frombuffer(buf, np.uint8), cv2.IMREAD_COLOR)
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    h, w = img.shape[:2]
    if w <= h:
        nw, nh = 256, int(256 * h / w)
    else:
        nh, nw = 256, int(256 * w / h)
    img = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
    top, left = int(round((nh - 224) / 2.0)), int(round((nw - 224) / 2.0))
    img = img[top:top + 224, left:left + 224]
    x = (img.astype(np.float32) * (1 / 255.0) - MEAN) / STD
    return np.ascontiguousarray(x.transpose(2, 0, 1))


class OpenCV:
    """opencv_one over a pool of threads, a batch at a time (bench.gpu's
    opencv contender too)."""

    def __init__(self, threads):
        cv2.setNumThreads(1)  # the pool's threads, not OpenCV's, use the cores
        self.pool = concurrent.futures.ThreadPoolExecutor(threads)
        self.versions = {"cv2": cv2.__version__}

    def run(self, batch):
        return list(self.pool.map(opencv_one, batch))

    def close(self):
        self.pool.shutdown()


# The two contenders: measure(threads, seconds) -> images_per_sec (and, for
# Sluice, its batch latency).


class SluiceCPU:
    """sluice bench with the CPU executor, one worker per thread."""

    def __init__(self, binary, pipeline, dirs, batch):
        self.binary, self.pipeline, self.dirs, self.batch = binary, pipeline, dirs, batch

    def measure(self, threads, seconds):
        r = common.sluice_bench(self.binary, self.pipeline, self.dirs, self.batch, seconds, workers=threads)
        if "error" in r:
            sys.exit(f"bench.cpu: {r['command']}: {r['error']}")
        return r


class OpenCVPool:
    """OpenCV over every image in turn, after one warm-up pass."""

    def __init__(self, images):
        self.images = images

    def measure(self, threads, seconds):
        ocv = OpenCV(threads)
        try:
            ocv.run(self.images)
            n = 0
            start = time.perf_counter()
            while time.perf_counter() - start < seconds:
                ocv.run(self.images)
                n += len(self.images)
            return {"images_per_sec": n / (time.perf_counter() - start)}
        finally:
            ocv.close()


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.cpu", description=__doc__.split("\n\n")[0])
    common.add_inputs(ap)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}", help="comma-separated thread counts")
    args = ap.parse_args()

    corpus = pathlib.Path(args.corpus)
    dirs = [corpus / d for d in common.MIX_DIRS]
    images = [p.read_bytes() for p in common.mix_files(corpus)]
    if not images:
        sys.exit(f"bench.cpu: no JPEGs in {', '.join(map(str, dirs))}")
    sluice = SluiceCPU(args.sluice, common.ROOT / common.IMAGENET_PIPELINE, dirs, args.batch)
    opencv = OpenCVPool(images)

    print(f"# {len(images)} JPEGs ({sum(map(len, images)) // len(images) // 1000} kB mean) from "
          f"{', '.join(common.MIX_DIRS)}; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores; OpenCV {cv2.__version__}")
    print(common.md_row(["threads", "Sluice CPU img/s", "Sluice p50 / p99 batch ms", "OpenCV img/s", "Sluice / OpenCV"]))
    print(common.md_rule(5))
    for t in map(int, args.threads.split(",")):
        s = sluice.measure(t, args.seconds)
        o = opencv.measure(t, args.seconds)["images_per_sec"]
        print(common.md_row([str(t), f"{s['images_per_sec']:,.0f}", f"{s['p50_ms']:.1f} / {s['p99_ms']:.1f}",
                             f"{o:,.0f}", f"{s['images_per_sec'] / o:.2f}x"]), flush=True)


if __name__ == "__main__":
    main()
