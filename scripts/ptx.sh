#!/bin/sh
# Builds kernels/sluice.ptx and kernels/sluice_sm90.cubin from kernels/*.cu
# (make ptx). The PTX's first line, and kernels/sluice_sm90.cubin.sha256 for
# the cubin, record a hash of the sources, so that a test can tell when the
# committed files are stale without needing nvcc:
#   sha256 over the kernels/*.cu and *.cuh files, sorted by name (C locale),
#   each contributing: its base name, a NUL, its size in bytes in decimal,
#   a NUL, its bytes.
# kernels/ptx_test.go computes the same hash.
set -eu
NVCC=${NVCC:-nvcc}
cd "$(dirname "$0")/.."

hash=$(
	export LC_ALL=C
	for f in $(ls kernels/*.cu kernels/*.cuh 2>/dev/null | sort); do
		printf '%s\0%s\0' "$(basename "$f")" "$(wc -c <"$f" | tr -d ' ')"
		cat "$f"
	done | sha256sum | cut -d' ' -f1
)

tmp=kernels/sluice.ptx.tmp
cubin=kernels/sluice_sm90.cubin.tmp
trap 'rm -f "$tmp" "$cubin"' EXIT
# compute_70: the PTX JIT-compiles on Volta and every later GPU.
"$NVCC" -ptx -arch=compute_70 -O3 -o "$tmp" kernels/fused.cu
{
	printf '// sluice-source-sha256: %s\n' "$hash"
	cat "$tmp"
} >kernels/sluice.ptx
# sm_90 machine code for the H100 and H200, loaded there instead of the PTX.
"$NVCC" -cubin -arch=sm_90 -O3 -o "$cubin" kernels/fused.cu
mv "$cubin" kernels/sluice_sm90.cubin
printf 'sluice-source-sha256: %s\ncubin-sha256: %s\n' "$hash" \
	"$(sha256sum kernels/sluice_sm90.cubin | cut -d' ' -f1)" >kernels/sluice_sm90.cubin.sha256
echo "kernels/sluice.ptx, kernels/sluice_sm90.cubin: sources $hash"
