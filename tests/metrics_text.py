"""Prometheus' text format as tritonserver's /metrics writes it, parsed for
tests/triton (helpers.scrape) and tests/gpu_triton (triton_client.parse_metrics).
The standard library only: the GPU machine's Python has numpy and pytest but
not tritonclient.http, so nothing here may import what tests/triton's helpers
import."""

import re

# name{labels} value [timestamp]; the labels are optional, a timestamp is not the value.
SAMPLE = re.compile(r'^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)(?: \S+)?$')
# name="value", the value's escapes (\" \\ \n) kept as written.
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """(name, labels as a dict, value, line) of each sample line, in order;
    comments, blank lines and anything else (a value that is no number) skipped."""
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m:
            continue
        try:
            v = float(m.group(3))
        except ValueError:
            continue
        yield m.group(1), dict(LABEL.findall(m.group(2) or "")), v, line
