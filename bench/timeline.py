"""Where a GPU batch's time goes: a `sluice bench --trace` file (or
bench.gpu --trace-dir's) summarised over one steady-state window.

For each engine lane, hybrid lane, the SMs' route, CPU worker and executor
(a Triton instance): the share of the window it was busy (the union of its
spans), split by step where it has several, the images it handled, and a strip of
the window, one character a slice: '#' busy for 90% of it or more, '+' half,
'-' some, '.' idle. An executor's "wait" is its time waiting for the lanes
after its CPU workers' share was done; "decode" the whole decode phase of
its parts, "kernel" the fused kernel and delivery. Standard library only.

    python3 -m bench.timeline TRACE.json [--window 1] [--start S] [--slices 50]
"""

import argparse
import json
import sys

ORDER = {"engines": 0, "hybrid": 1, "sms": 2, "worker": 3, "executor": 4}


def union(intervals):
    """Total length of the union of [a, b) intervals."""
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def clip(spans, lo, hi):
    return [(max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi]


def summarise(trace, window=1.0, start=None, slices=50):
    """Markdown lines: the table of actors over [start, start+window) s
    (default: the window centred in the measured part)."""
    seconds = trace["seconds"]
    if start is None:
        start = max(0.0, (seconds - window) / 2)
    lo, hi = start * 1e6, (start + window) * 1e6
    actors = {}
    for s in trace["spans"]:
        actors.setdefault((s["actor"], s["index"]), []).append(s)
    width = (hi - lo) / slices
    lines = [f"Window {start:.2f}-{start + window:.2f} s of {seconds:.2f} s measured; "
             f"a strip character is {width / 1e3:.0f} ms.", "",
             "| actor | busy | by step | images | strip |", "|---|---|---|---|---|"]
    busy_by_kind = {}
    for (actor, index), spans in sorted(actors.items(), key=lambda kv: (ORDER.get(kv[0][0], 9), kv[0][1])):
        iv = clip([(s["start_us"], s["end_us"]) for s in spans], lo, hi)
        busy = union(iv) / (hi - lo)
        busy_by_kind.setdefault(actor, []).append(busy)
        steps = {}
        for s in spans:
            steps.setdefault(s["step"], []).append((s["start_us"], s["end_us"]))
        by_step = ", ".join(f"{k} {union(clip(v, lo, hi)) / (hi - lo):.0%}" for k, v in sorted(steps.items())
                            if len(steps) > 1)
        images = sum(s["n"] for s in spans if lo <= s["start_us"] < hi and s["step"] in ("call", "image", "decode"))
        strip = ""
        for k in range(slices):
            a = lo + k * width
            f = union(clip(iv, a, a + width)) / width
            strip += "#" if f >= 0.9 else "+" if f >= 0.5 else "-" if f > 0 else "."
        lines.append(f"| {actor} {index} | {busy:.0%} | {by_step} | {images} | `{strip}` |")
    lines.append("")
    lines.append("Mean busy share: " + ", ".join(f"{k} {sum(v) / len(v):.0%} ({len(v)})"
                                                 for k, v in sorted(busy_by_kind.items(), key=lambda kv: ORDER.get(kv[0], 9))))
    return lines


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.timeline", description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--window", type=float, default=1.0, help="seconds (default: %(default)s)")
    ap.add_argument("--start", type=float, help="the window's start in seconds (default: centred)")
    ap.add_argument("--slices", type=int, default=50)
    a = ap.parse_args()
    with open(a.trace) as f:
        trace = json.load(f)
    if not trace.get("spans"):
        sys.exit(f"{a.trace}: no spans (was it a GPU run?)")
    print("\n".join(summarise(trace, a.window, a.start, a.slices)))


if __name__ == "__main__":
    main()
