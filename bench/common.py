"""What the benchmarks share: the repository's paths and the photo corpus,
the corpus's file sets, the timing loop and its percentiles, `sluice bench`
run as a subprocess, and the Markdown cells of the tables.

Standard library only (Pillow is imported where a JPEG is classified), so
that soak and fairness run in .venv-triton and everything on the GPU
machine's python3.
"""

import datetime
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SLUICE = ROOT / "build" / "sluice"
# The corpus of every benchmark, as the Makefile and the tests name it.
CORPUS = pathlib.Path(os.environ.get("SLUICE_CORPUS", ROOT.parent / "shared" / "corpus"))
IMAGENET_PIPELINE = "model_repository/preprocess_imagenet/1/pipeline.pbtxt"  # from the repo root
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]

# The ImageNet-size photos, the benchmarks' "whole mix"; and the folders of
# the larger photos, of which those of 1,000 px a side and more are taken.
MIX_DIRS = ("jpeg/derived", "jpeg/native")
LARGE_DIRS = ("jpeg/large", "jpeg/exif")


def add_inputs(ap):
    """The arguments every benchmark of the corpus takes: the sluice CLI and the corpus."""
    ap.add_argument("--sluice", default=str(SLUICE), help="the sluice CLI (default: %(default)s)")
    ap.add_argument("--corpus", default=str(CORPUS), help="the photo corpus (default: %(default)s)")


def mix_files(corpus):
    return sorted(p for d in MIX_DIRS for p in (pathlib.Path(corpus) / d).glob("*.jp*g"))


def larger_photos(corpus):
    """Photos of 1,000 px a side and more: where decode dominates even more."""
    return [p for d in LARGE_DIRS for p in sorted((pathlib.Path(corpus) / d).glob("*.jp*g")) if max(size_of(p)) >= 1000]


def classify(path):
    """The kind of a JPEG: "grayscale", "progressive" or "baseline colour"."""
    from PIL import Image

    with Image.open(path) as im:
        if im.mode == "L":
            return "grayscale"
        # Pillow sets 'progressive' (and the older 'progression') for SOF2 files.
        if im.info.get("progressive") or im.info.get("progression"):
            return "progressive"
        return "baseline colour"


def size_of(path):
    """(width, height) in pixels."""
    from PIL import Image

    with Image.open(path) as im:
        return im.size


def link_dir(parent, name, files):
    """A folder parent/name of links to files (sluice bench reads whole
    folders), each named <its folder>_<its name> so that none collide."""
    d = pathlib.Path(parent) / name.replace(" ", "_")
    d.mkdir()
    for p in files:
        (d / f"{p.parent.name}_{p.name}").symlink_to(p.resolve())
    return d


def fast_upsampling_pipeline(pipeline, parent):
    """A copy of the pipeline file in folder parent whose decode replicates
    JPEG chroma (jpeg_fancy_upsampling false, DALI's default on the GPU)."""
    text = pathlib.Path(pipeline).read_text()
    new, n = re.subn(r'(op:\s*"decode")', r'\1 arg { name: "jpeg_fancy_upsampling" bool: false }', text)
    if n != 1:
        raise ValueError(f"{pipeline}: {n} decode nodes, want 1")
    out = pathlib.Path(parent) / ("fast_" + pathlib.Path(pipeline).name)
    out.write_text(new)
    return out


# ------------------------------------------------------------------ timing


def percentiles(lat):
    """p50 and p99 in ms of latencies in seconds, as sluice bench picks them
    from the sorted latencies."""
    lat = sorted(lat)
    return lat[len(lat) // 2] * 1e3, lat[min(len(lat) - 1, len(lat) * 99 // 100)] * 1e3


def batches_of(items, size):
    """Endless batches cycling through items, as sluice bench fills its batch."""
    i = 0
    while True:
        yield [items[(i + k) % len(items)] for k in range(size)]
        i += size


def timed(run_batch, batches, seconds):
    """run_batch over batches for about seconds: images/s and per-batch
    latency, in the keys sluice bench --json writes."""
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


def timed_together(runners, seconds):
    """timed for several runners at once, each (run_batch, batches) in a
    thread of its own, as N pipelines of one process run side by side: the
    images/s of all together, the latency of every batch of any of them."""
    import threading

    lats = [[] for _ in runners]
    counts = [0] * len(runners)
    start = time.perf_counter()
    failure = []

    def loop(i, run_batch, batches):
        try:
            while time.perf_counter() - start < seconds:
                b = next(batches)
                t = time.perf_counter()
                run_batch(b)
                lats[i].append(time.perf_counter() - t)
                counts[i] += len(b)
        except Exception as e:  # reported by the caller's thread
            failure.append(e)

    threads = [threading.Thread(target=loop, args=(i, *r)) for i, r in enumerate(runners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failure:
        raise failure[0]
    elapsed = time.perf_counter() - start
    lat = [x for per in lats for x in per]
    p50, p99 = percentiles(lat)
    return {"images_per_sec": sum(counts) / elapsed, "p50_ms": p50, "p99_ms": p99, "batches": len(lat),
            "seconds": elapsed}


# ------------------------------------------------------------------ subprocesses


def short_error(text, limit=300):
    """The line of a failure's output that says what went wrong: a Go panic, else
    the CLI's own "sluice ...: error" line (flag usage may follow it), else the last."""
    lines = [l.strip() for l in str(text).strip().splitlines() if l.strip()]
    if not lines:
        return "failed with no message"
    pick = [l for l in lines if l.startswith("panic:")] or [l for l in lines if l.startswith("sluice")] or lines
    return pick[-1][:limit]


def error_of(e):
    """An exception as a result: one contender's failure is a table cell, not a crash."""
    return {"error": f"{type(e).__name__}: {short_error(e)}"}


def sluice_bench(binary, pipeline, dirs, batch, seconds, gpus="", workers=0, instances=1, hw_share=None, boxes=None,
                 trace=None, env=None):
    """`sluice bench --json` over the images of dirs: its result, with the
    command; or {"error": ...} (and what else is known) when it failed.
    gpus: device ordinals, comma-separated ("": the CPU executor);
    workers 0 and hw_share None: sluice bench's defaults; boxes: the
    --boxes file of a pipeline with a boxes input; trace: where the GPU
    executor's timeline goes (bench/timeline.py reads it); env: variables
    set for the process beside this one's (the GPU route's settings)."""
    cmd = [str(binary), "bench", "--json", "--pipeline", str(pipeline), "--batch", str(batch),
           "--duration", f"{seconds:g}s"]
    if gpus:
        cmd += ["--gpu", gpus]
    if workers:
        cmd += ["--workers", str(workers)]
    if hw_share is not None:
        cmd += ["--hw-share", f"{hw_share:g}"]
    if instances > 1:
        cmd += ["--instances", str(instances)]
    if boxes is not None:
        cmd += ["--boxes", str(boxes)]
    if trace is not None:
        cmd += ["--trace", str(trace)]
    cmd += [str(d) for d in dirs]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120,
                           env={**os.environ, **env} if env else None)
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


def gpu_info():
    """The first GPU's name and driver, as nvidia-smi says them."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        line = out.stdout.strip().splitlines()
        return line[0] if out.returncode == 0 and line else f"nvidia-smi failed: {short_error(out.stderr)}"
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"nvidia-smi unavailable ({e})"


def rss_mb(pid):
    """A process's resident memory in MiB; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


# ------------------------------------------------------------------ reports


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def command_line():
    """This run's command as one would type it again from the repo root."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    head = ["-m", spec.name] if spec else [sys.argv[0]]
    return shlex.join(["python3", *head, *sys.argv[1:]])


def md_row(cells):
    return "| " + " | ".join(cells) + " |"


def md_rule(columns):
    return "|" + "---|" * columns


def md_failed(error):
    """A failure as a table cell: one line, its pipes escaped."""
    return "FAILED: " + error.replace("|", "\\|").replace("\n", " ")
