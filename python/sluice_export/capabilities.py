"""What a sluice binary's operators accept, from `sluice ops --json`: lets
callers (and the tests) tell whether an argument or value exists in that
build."""

import json
import re
import subprocess


def sluice_capabilities(binary):
    """{op: {arg: set of allowed string values (empty when not an enum)}}."""
    out = subprocess.run([binary, "ops", "--json"], capture_output=True, text=True, check=True).stdout
    return {op["name"]: {a["name"]: set(a.get("enum") or ()) for a in op["args"]} for op in json.loads(out)}


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
