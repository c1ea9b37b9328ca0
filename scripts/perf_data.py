#!/usr/bin/env python3
"""Input data for perf_analyzer from the photo corpus: one entry per encoded
image, its bytes base64-encoded, its shape its length.

    python scripts/perf_data.py -o build/perf/jpegs.json
    perf_analyzer -m preprocess_imagenet --input-data build/perf/jpegs.json ...

perf_analyzer sends the entries in turn, one image per request ([1, N] with
-b 1), so a run covers every photo. The default set is the ImageNet-size
photos of corpus/jpeg/derived and corpus/jpeg/native (docs/perf.md's CPU
numbers use the same files). Standard library only.

With -b B > 1 perf_analyzer makes a [B, N] tensor of B consecutive entries
(entries i..i+B-1 for every i, so repeating entries does not help), which
must all have the same shape ("can not batch tensors with different shapes
together"): --pad zero-pads every image to the largest one's size, which
Sluice's decoders ignore (tests/triton: test_uint8_zero_padded_client_batch).
It sends more bytes than the images hold; the note says how many.

--bytes writes the entries for a TYPE_STRING [1] input instead (one BYTES
element per image, serialized as perf_analyzer sends it: a 4-byte
little-endian length, then the bytes). Every entry then has shape [1], so
perf_analyzer batches images of any sizes without padding.

`sluice perf-data --corpus DIR -o FILE.json [SUBDIR...]` (cmd/sluice) writes
the same format from Go, walking folders recursively and leaving out images
Sluice cannot decode; this script stays for scripts/perf_triton.sh.
"""

import argparse
import base64
import json
import os
import pathlib
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True, help="JSON file to write")
    ap.add_argument(
        "--corpus",
        default=os.environ.get("SLUICE_CORPUS", str(ROOT.parent / "shared" / "corpus")),
        help="photo corpus ($SLUICE_CORPUS, default ../shared/corpus)",
    )
    ap.add_argument(
        "--dirs",
        nargs="+",
        default=["jpeg/derived", "jpeg/native"],
        help="folders of the corpus to take images from (default: jpeg/derived jpeg/native)",
    )
    ap.add_argument("--ext", nargs="+", default=[".jpg", ".jpeg"], help="file name endings (default: .jpg .jpeg)")
    ap.add_argument("--input", default="IMAGE", help="the model's input name (default IMAGE)")
    ap.add_argument(
        "--limit", type=int, default=0, help="at most this many images, spread evenly over the sorted list (0: all)"
    )
    form = ap.add_mutually_exclusive_group()
    form.add_argument(
        "--pad", action="store_true", help="zero-pad every image to the largest's size (for perf_analyzer -b > 1)"
    )
    form.add_argument("--bytes", action="store_true", help="entries for a TYPE_STRING [1] input (BYTES elements)")
    a = ap.parse_args()

    corpus = pathlib.Path(a.corpus)
    files = []
    for d in a.dirs:
        folder = corpus / d
        if not folder.is_dir():
            sys.exit(f"perf_data.py: no folder {folder} (set --corpus or SLUICE_CORPUS)")
        files += sorted(p for p in folder.iterdir() if p.suffix.lower() in a.ext and p.is_file())
    if 0 < a.limit < len(files):
        # Evenly spread, so that every folder and file size keeps its share.
        files = [files[i * len(files) // a.limit] for i in range(a.limit)]
    if not files:
        sys.exit(f"perf_data.py: no {'/'.join(a.ext)} files in {', '.join(a.dirs)} under {corpus}")

    blobs = [p.read_bytes() for p in files]
    total = sum(len(b) for b in blobs)
    width = max(len(b) for b in blobs)
    data = []
    for b in blobs:
        if a.pad:
            b += bytes(width - len(b))
        if a.bytes:
            b, shape = struct.pack("<I", len(b)) + b, [1]
        else:
            shape = [len(b)]  # UINT8 [-1] input: shape without the batch dimension
        data.append({a.input: {"content": {"b64": base64.b64encode(b).decode("ascii")}, "shape": shape}})
    out = pathlib.Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"data": data}))
    print(
        f"perf_data.py: {len(files)} images, mean {total / len(files) / 1000:.1f} kB, from {', '.join(a.dirs)}"
        + (f", zero-padded to {width / 1000:.1f} kB" if a.pad else "")
        + (", as BYTES elements" if a.bytes else "")
        + f" -> {out}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
