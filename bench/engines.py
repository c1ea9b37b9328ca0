#!/usr/bin/env python3
"""How busy the GPU's JPEG engines, its SMs and the host's cores are while
one contender of bench.gpu runs: `nvidia-smi dmon -s u` (the `jpg` and `sm`
utilisation, once a second) and /proc/stat, sampled for the whole run of
each contender on one kind of JPEG at one batch size. The table gives the
medians over the seconds the engines were busy, beside the run's images/s.
What a second of engine time decodes is then the rate, times the engines'
share of the images, over the fraction of time they were busy.

    python3 -m bench.engines --sluice .bench/gpu/sluice --corpus .bench/gpu/corpus \\
        --kind 'baseline colour' --batch 256 --seconds 4 \\
        --runs 'sluice; sluice-x2; sluice-x2 --hw-share 0.75; dali-0.65; dali-0.9'

Each run is `python3 -m bench.gpu --only CONTENDER [ARGS]` in a process of
its own (DALI on PYTHONPATH for its contenders), so warm-up seconds are
sampled too: give --seconds 4 or more, so that the measured ones dominate.
"""

import argparse
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
import threading

from bench import common

# A second counts as the engines' when their utilisation is over this (%).
BUSY = 10


def parse_dmon(lines):
    """`nvidia-smi dmon` lines as one dict a sample, keyed by the header's
    column names ("gpu", "sm", "jpg", ...), "-" (not supported) read as 0;
    a generator, so that a sampler gets each sample as its line comes."""
    cols = None
    for line in lines:
        if line.startswith("#"):
            if cols is None:
                cols = line[1:].split()
            continue
        if cols is None or not line.split():
            continue
        yield {c: _num(v) for c, v in zip(cols, line.split())}


def _num(v):
    try:
        return float(v)
    except ValueError:
        return 0.0


def cpu_times(stat_text):
    """(all jiffies, idle + iowait jiffies) from /proc/stat's "cpu" line."""
    v = [int(x) for x in stat_text.splitlines()[0].split()[1:]]
    return sum(v), v[3] + v[4]


def busy_cores(before, after, ncpu):
    """Cores busy on average between two cpu_times readings."""
    total = after[0] - before[0]
    if total <= 0:
        return 0.0
    return ncpu * (total - (after[1] - before[1])) / total


def summarise(samples):
    """Medians of (jpg %, sm %, busy cores) over the samples whose engines
    were busy, and how many those were; None when none was."""
    busy = [s for s in samples if s["jpg"] > BUSY]
    if not busy:
        return None
    med = lambda key: sorted(s[key] for s in busy)[len(busy) // 2]  # noqa: E731
    return med("jpg"), med("sm"), med("cores"), len(busy)


class Sampler:
    """nvidia-smi dmon on a thread of its own, each line paired with the
    host's busy cores over the same second, until stop(). Without
    nvidia-smi it samples nothing and says why in error."""

    def __init__(self, gpu):
        self.samples, self.error, self._thread = [], None, None
        try:
            self._dmon = subprocess.Popen(["nvidia-smi", "dmon", "-s", "u", "-d", "1", "-i", str(gpu)],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            self.error = f"nvidia-smi unavailable ({e})"
            return
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        last = cpu_times(pathlib.Path("/proc/stat").read_text())
        for s in parse_dmon(self._dmon.stdout):
            now = cpu_times(pathlib.Path("/proc/stat").read_text())
            s["cores"] = busy_cores(last, now, os.cpu_count())
            self.samples.append(s)
            last = now

    def stop(self):
        if self._thread is None:
            return self.samples
        self._dmon.terminate()
        _, err = self._dmon.communicate()
        self._thread.join()
        if not self.samples and err:
            self.error = common.short_error(err)
        return self.samples


def run(args, spec):
    """One run of bench.gpu for the contender spec ("NAME [ARGS]"), sampled:
    a Markdown row."""
    name, *extra = shlex.split(spec)
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "bench.json"
        sampler = Sampler(args.gpu)
        p = subprocess.run([sys.executable, "-m", "bench.gpu", "--sluice", args.sluice, "--corpus", args.corpus,
                            "--gpu", str(args.gpu), "--kinds", args.kind, "--batches", str(args.batch),
                            "--seconds", str(args.seconds), "--only", name, "--json-out", str(out), *extra],
                           capture_output=True, text=True, cwd=common.ROOT)
        samples = sampler.stop()
        rate = common.md_failed(common.short_error(p.stderr or p.stdout))
        if out.exists():
            rows = json.loads(out.read_text())["rows"]
            cell = (rows[0].get(name) if rows else None) or {}
            if "images_per_sec" in cell:
                rate = f"{cell['images_per_sec']:,.0f}"
            elif "error" in cell:
                rate = common.md_failed(cell["error"])
    s = summarise(samples)
    if s is None:
        why = common.md_failed(sampler.error) if sampler.error else f"engines idle in all {len(samples)}"
        return common.md_row([spec, str(args.batch), rate, "–", "–", "–", why])
    jpg, sm, cores, n = s
    return common.md_row([spec, str(args.batch), rate, f"{jpg:.0f}%", f"{sm:.0f}%", f"{cores:.1f}", str(n)])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_inputs(ap)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--kind", default="baseline colour", help="one of bench.gpu's kinds")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=4, help="bench.gpu's measured seconds per run")
    ap.add_argument("--runs", default="sluice; sluice-x2; dali-0.65; dali-0.9",
                    help="';'-separated contenders of bench.gpu, each with its extra arguments")
    args = ap.parse_args()
    # Each run starts in the repo root (bench.gpu's pipeline path is relative to it).
    args.sluice, args.corpus = (str(pathlib.Path(x).resolve()) for x in (args.sluice, args.corpus))
    print(f"{args.kind}, batch {args.batch}; {common.utc_now()}; {common.gpu_info()}; "
          f"medians over the seconds the engines were over {BUSY}% busy\n\nCommand: `{common.command_line()}`\n")
    print(common.md_row(["run", "batch", "img/s", "engines busy", "SMs busy", "CPU cores busy", "busy seconds"]))
    print(common.md_rule(7), flush=True)
    for spec in (r.strip() for r in args.runs.split(";")):
        if spec:
            print(run(args, spec), flush=True)


if __name__ == "__main__":
    main()
