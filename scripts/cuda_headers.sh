#!/usr/bin/env bash
# cuda.h and nvjpeg.h of CUDA 12 and CUDA 13, for the tests that check the
# bindings of kernels/cuda and kernels/nvjpeg against them (no GPU needed).
# They come from NVIDIA's runtime wheels on the Python package index; only
# the two headers are kept.
#
#   scripts/cuda_headers.sh DIR [PYTHON]   writes DIR/12/{cuda,nvjpeg}.h and
#                                          DIR/13/{cuda,nvjpeg}.h; quick when
#                                          they are there. PYTHON has pip
#                                          (default python3).
set -euo pipefail
dir=${1:?usage: scripts/cuda_headers.sh DIR [PYTHON]}
py=${2:-python3}

# CUDA major: the runtime wheel (cuda.h) and the nvJPEG wheel (nvjpeg.h).
wheels=(
	"12 nvidia-cuda-runtime-cu12==12.9.79 nvidia-nvjpeg-cu12==12.4.0.76"
	"13 nvidia-cuda-runtime==13.5.37 nvidia-nvjpeg==13.2.3.58"
)

for w in "${wheels[@]}"; do
	set -- $w
	major=$1
	shift
	out=$dir/$major
	[ -s "$out/cuda.h" ] && [ -s "$out/nvjpeg.h" ] && grep -qx "$*" "$out/wheels" 2>/dev/null && continue
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# Headers are the same on every platform; the x86-64 wheels are
	# named so that the download does not depend on this machine.
	"$py" -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 -d "$tmp" "$@"
	mkdir -p "$out"
	"$py" - "$tmp" "$out" <<'EOF'
import pathlib, sys, zipfile
tmp, out = map(pathlib.Path, sys.argv[1:])
found = set()
for whl in tmp.glob("*.whl"):
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            base = name.rsplit("/", 1)[-1]
            if base in ("cuda.h", "nvjpeg.h") and "/include/" in name:
                (out / base).write_bytes(z.read(name))
                found.add(base)
missing = {"cuda.h", "nvjpeg.h"} - found
if missing:
    sys.exit(f"cuda_headers.sh: {', '.join(sorted(missing))} not in {[w.name for w in tmp.glob('*.whl')]}")
EOF
	echo "$*" >"$out/wheels"
	rm -rf "$tmp"
	trap - EXIT
	echo "CUDA $major headers: $out ($*)"
done
