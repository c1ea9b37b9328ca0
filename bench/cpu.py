#!/usr/bin/env python3
"""Sluice's CPU ImageNet pipeline side by side with OpenCV, on the same photos
in one run, at 1 thread and at all cores. Prints a Markdown table.

    python scripts/bench_cpu.py --sluice build/sluice --corpus ../shared/corpus

OpenCV does what a Python service typically does: cv2.imdecode, BGR→RGB,
resize shorter side to 256 (INTER_LINEAR), center crop 224, then NumPy
scale/normalize/transpose to CHW float32, with a thread pool (OpenCV and
NumPy release the GIL) and cv2.setNumThreads(1) so threads do not nest.
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import platform
import subprocess
import time

import cv2
import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
ROOT = pathlib.Path(__file__).resolve().parent.parent


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


def bench_opencv(images, threads, seconds):
    cv2.setNumThreads(1)
    n = 0
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(opencv_one, images))  # warm-up
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            list(pool.map(opencv_one, images))
            n += len(images)
        elapsed = time.perf_counter() - start
    return n / elapsed


def bench_sluice(binary, pipeline, dirs, threads, batch, seconds):
    out = subprocess.run(
        [binary, "bench", "--json", "--pipeline", str(pipeline), "--workers", str(threads),
         "--batch", str(batch), "--duration", f"{seconds}s", *map(str, dirs)],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sluice", default=str(ROOT / "build/sluice"))
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared/corpus"))
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}", help="comma-separated thread counts")
    args = ap.parse_args()

    corpus = pathlib.Path(args.corpus)
    dirs = [corpus / "jpeg/derived", corpus / "jpeg/native"]
    files = sorted(p for d in dirs for p in d.glob("*.jp*g"))
    images = [p.read_bytes() for p in files]
    pipeline = ROOT / "model_repository/preprocess_imagenet/1/pipeline.pbtxt"

    print(f"# {len(images)} JPEGs ({sum(map(len, images)) // len(images) // 1000} kB mean) from "
          f"{', '.join(d.relative_to(corpus).as_posix() for d in dirs)}; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores; OpenCV {cv2.__version__}")
    print("| threads | Sluice CPU img/s | Sluice p50 / p99 batch ms | OpenCV img/s | Sluice / OpenCV |")
    print("|---|---|---|---|---|")
    for t in map(int, args.threads.split(",")):
        s = bench_sluice(args.sluice, pipeline, dirs, t, args.batch, args.seconds)
        o = bench_opencv(images, t, args.seconds)
        print(f"| {t} | {s['images_per_sec']:,.0f} | {s['p50_ms']:.1f} / {s['p99_ms']:.1f} | {o:,.0f} | "
              f"{s['images_per_sec'] / o:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
