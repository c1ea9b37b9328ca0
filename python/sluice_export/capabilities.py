"""What a sluice binary's operators accept, from `sluice ops`: lets callers
(and the tests) tell whether an argument or value exists in that build."""

import re
import subprocess


def sluice_capabilities(binary):
    """{op: {arg: set of allowed string values (empty when not an enum)}}."""
    out = subprocess.run([binary, "ops"], capture_output=True, text=True, check=True).stdout
    ops, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^(\w+) \(", line)
        if m:
            cur = ops.setdefault(m.group(1), {})
            continue
        m = re.match(r"^    (\w+)\s+(int|float|string|bool|ints|floats)\b(?:\s+\{([^}]*)\})?", line)
        if m and cur is not None:
            cur[m.group(1)] = set(m.group(3).split("|")) if m.group(3) else set()
    return ops


def missing_features(binary, pipeline_text):
    """The op arguments / values a pipeline uses that the binary lacks, as
    'op.arg' or 'op.arg=value' strings."""
    caps = sluice_capabilities(binary)
    missing = []
    for node in re.finditer(r'node \{\s*(?:name: "[^"]*"\s*)?op: "(\w+)"(.*?)\n\}', pipeline_text, re.S):
        op, body = node.group(1), node.group(2)
        args = caps.get(op)
        if args is None:
            missing.append(op)
            continue
        for m in re.finditer(r'arg \{ name: "(\w+)" (\w+)(?:: ?"([^"]*)")?', body):
            arg, val = m.group(1), m.group(3)
            if arg not in args:
                missing.append(f"{op}.{arg}")
            elif val is not None and args[arg] and val not in args[arg]:
                missing.append(f"{op}.{arg}={val}")
    return missing
