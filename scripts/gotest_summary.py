#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints what plain `go test` would
(each package's result, a failed test's output, build errors), then one
line per reason tests were skipped, so that skipped GPU tests show:

  go test skipped 17 tests: 15 no CUDA driver: ... (backend, executor/gpu, kernels/cuda); 2 ...

Used by `make gotest`; the exit status stays go test's (the Makefile's)."""

import json
import re
import sys

MODULE = "github.com/sluice-dev/sluice/"
# The prefix of a t.Skip line: indentation, then "file_test.go:12: ".
WHERE = re.compile(r"^\s*\S+_test\.go:\d+: ")


def main():
    output = {}  # (package, test) -> its output lines
    skipped = {}  # reason -> [packages]
    for line in sys.stdin:
        try:
            ev = json.loads(line)
        except ValueError:
            sys.stdout.write(line)  # not an event: go itself speaking
            continue
        action, test = ev.get("Action"), ev.get("Test")
        if action == "build-output":
            sys.stdout.write(ev.get("Output", ""))
        elif action == "output" and not test:
            if ev["Output"] not in ("PASS\n", "FAIL\n"):
                sys.stdout.write(ev["Output"])
        elif action == "output":
            output.setdefault((ev["Package"], test), []).append(ev["Output"])
        elif action == "fail" and test:
            sys.stdout.write("".join(l for l in output.get((ev["Package"], test), []) if not l.startswith("=== ")))
        elif action == "skip" and test:
            lines = [l for l in output.get((ev["Package"], test), [])
                     if not l.startswith("=== ") and not l.lstrip().startswith("--- ")]
            reason = WHERE.sub("", lines[-1]).strip() if lines else "no reason given"
            skipped.setdefault(reason, []).append(ev["Package"].removeprefix(MODULE))
        if action in ("pass", "fail", "skip") and test:
            output.pop((ev.get("Package"), test), None)
        sys.stdout.flush()
    if skipped:
        total = sum(len(p) for p in skipped.values())
        parts = [f"{len(p)} {r} ({', '.join(sorted(set(p)))})"
                 for r, p in sorted(skipped.items(), key=lambda kv: -len(kv[1]))]
        print(f"go test skipped {total} tests: " + "; ".join(parts))


if __name__ == "__main__":
    main()
