"""Writes every other image format, as test_formats.py makes them from a
corpus photo, into one folder: the files scripts/gpu_triton.sh build carries
to the GPU machine, where GPU instances decode them on their CPU workers.

  .venv-triton/bin/python -m tests.triton.write_formats CORPUS OUT   (from the repo root)
"""
import pathlib
import sys
import tempfile

from tests.triton import test_formats


def main(corpus, out):
    for fmt, make in test_formats.MAKERS.items():
        with tempfile.TemporaryDirectory() as d:
            for p, _ in make(corpus, pathlib.Path(d)):
                (out / f"{fmt}_{p.name}").write_bytes(p.read_bytes())


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))
