#!/usr/bin/env bash
# The real tritonserver 2.51.0 with Sluice's backend on a GPU machine that has
# no Go and no network: pack here, carry one folder, run there.
#
#   scripts/gpu_triton.sh build [DIR]   here (DIR: .bench/triton). Packs what the GPU
#       machine lacks: tritonserver and the libraries it needs (from the nvidia-pytriton
#       wheel in .venv-triton; the 29 MB ICU data library is replaced by an empty one,
#       as Triton converts no text through ICU), the python backend and its 3.12 stub,
#       the tritonclient package, build/backends/sluice/libtriton_sluice.so (make backend
#       first; BUILD_BACKEND=1 runs it), the derived corpus JPEGs and corpus/broken (with
#       MANIFEST.tsv, for scripts/soak.py). Prints every size.
#   scripts/gpu_triton.sh run [DIR]     there, from the repo root, DIR carried. Unpacks to
#       /tmp/gt, writes a model repository (preprocess_gpu, preprocess_cpu, consumer_gpu,
#       consumer_cpu, ensemble_gpu, ensemble_cpu), starts tritonserver, runs
#       scripts/gpu_triton_check.py, stops the server. Results: $OUT/gpu_triton.json,
#       $OUT/gpu_triton.md, $OUT/tritonserver.log, $OUT/gpu_triton_run.log (DIR/out when
#       OUT is unset; the run log then goes to /tmp).
#       Environment: GT_SECONDS (load seconds per row, 15), GT_STUB (another stub
#       binary, for a local test with another Python), GT_MODELS_ONLY=1 (write the
#       repository and stop), GT_SOAK_MINUTES (run scripts/soak.py on preprocess_gpu
#       that long instead of the checks: RSS and GPU memory, wrong answers; results in
#       $OUT/soak.json; GT_SOAK_CONCURRENCY, 64).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
mb() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
size() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

build() {
	local dir=${1:-.bench/triton} venv=${TRITON_VENV:-$ROOT/.venv-triton} sp stage
	mkdir -p "$dir" && dir=$(cd "$dir" && pwd) || return 1
	case $dir in "$ROOT" | / | "$HOME") echo "refusing to build into $dir" >&2; return 1 ;; esac
	rm -rf "$dir/tritonserver.tar.xz" "$dir/tritonclient.tar.xz" "$dir/libtriton_sluice.so.xz" "$dir/corpus" "$dir/broken" "$dir/MANIFEST.tsv" "$dir/manifest.txt" "$dir/out"
	sp=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || return 1
	[ -x "$sp/pytriton/tritonserver/bin/tritonserver" ] || { echo "no tritonserver in $sp (scripts/triton.sh --install-only)" >&2; return 1; }

	if [ "${BUILD_BACKEND:-0}" = 1 ]; then make backend || return 1; fi
	local so=$ROOT/build/backends/sluice/libtriton_sluice.so
	[ -f "$so" ] || { echo "no $so: make backend" >&2; return 1; }
	if ! grep -q -a nvjpeg "$so"; then echo "WARNING: $so has no GPU code (nvjpeg): rebuild with make backend" >&2; fi

	stage=$(mktemp -d) || return 1
	trap 'rm -rf "$stage"' RETURN
	# The wheel's layout, so that the binaries' RPATHs ($ORIGIN/../..) still hold.
	local ts=$stage/pytriton/tritonserver libs=$stage/nvidia_pytriton.libs
	mkdir -p "$ts/bin" "$ts/backends/python" "$ts/python_backend_stubs/3.12" "$libs"
	cp "$sp/pytriton/tritonserver/bin/tritonserver" "$ts/bin/"
	cp "$sp/pytriton/tritonserver/backends/python/"{libtriton_python.so,triton_python_backend_utils.py} "$ts/backends/python/"
	cp "$sp/pytriton/tritonserver/python_backend_stubs/3.12/triton_python_backend_stub" "$ts/python_backend_stubs/3.12/"
	local f
	for f in "$sp/nvidia_pytriton.libs/"*; do
		case ${f##*/} in
		libpython3*) ;; # pytriton's own embedded Python; the server does not load it
		libicudata-*) ;;
		*) cp "$f" "$libs/" ;;
		esac
	done
	# libicuuc needs the symbol icudt70_dat; an empty data blob (valid header, no
	# entries) satisfies the loader, and nothing in Triton asks ICU for data.
	local icu; icu=$(basename "$(ls "$sp/nvidia_pytriton.libs/"libicudata-*)")
	cat >"$stage/icu.c" <<'EOF'
struct icu_common_data {
	unsigned short header_size; unsigned char magic1, magic2;
	unsigned short info_size, info_reserved;
	unsigned char big_endian, charset_family, uchar_size, reserved;
	unsigned char format[4], format_version[4], data_version[4];
	unsigned char pad[8];
	unsigned int count, reserved2, toc[4];
};
__attribute__((visibility("default"))) const struct icu_common_data icudt70_dat = {
	32, 0xda, 0x27, 20, 0, 0, 0, 2, 0, {'T', 'o', 'C', 'P'}, {1, 0, 0, 0}, {0}, {0}, 0, 0, {0}};
EOF
	gcc -shared -fPIC -O2 -Wl,-soname,"$icu" -o "$libs/$icu" "$stage/icu.c" || return 1
	rm -f "$stage/icu.c"
	# Debug symbols only: the wheel leaves these four unstripped.
	strip --strip-unneeded "$ts/bin/tritonserver" "$libs"/libtritonserver-*.so \
		"$ts/backends/python/libtriton_python.so" "$ts/python_backend_stubs/3.12/triton_python_backend_stub" || return 1
	# --help exits 1; that it prints its usage shows every library resolved.
	local usage; usage=$(LD_LIBRARY_PATH=$libs "$ts/bin/tritonserver" --help 2>&1)
	case $usage in *"Usage: tritonserver"*) ;; *) echo "the packed tritonserver does not start: ${usage:0:300}" >&2; return 1 ;; esac
	echo "packed tree: $(mb "$(size "$stage")")"
	local t0=$SECONDS
	tar -C "$stage" -cf - pytriton nvidia_pytriton.libs | xz -9 -T0 >"$dir/tritonserver.tar.xz" || return 1
	echo "tritonserver.tar.xz: $(mb "$(size "$dir/tritonserver.tar.xz")") (xz -9, $((SECONDS - t0)) s)"

	# tritonclient's gRPC client and utils (pure Python; http needs gevent).
	tar -C "$sp" --exclude=__pycache__ --exclude=tritonclient/http -cf - tritonclient | xz -9 >"$dir/tritonclient.tar.xz" || return 1
	echo "tritonclient.tar.xz: $(mb "$(size "$dir/tritonclient.tar.xz")")"

	cp "$so" "$stage/libtriton_sluice.so" && strip --strip-unneeded "$stage/libtriton_sluice.so" &&
		xz -9 -T0 -c "$stage/libtriton_sluice.so" >"$dir/libtriton_sluice.so.xz" || return 1
	echo "libtriton_sluice.so: $(mb "$(size "$so")"), stripped $(mb "$(size "$stage/libtriton_sluice.so")"), xz $(mb "$(size "$dir/libtriton_sluice.so.xz")")"

	local corpus=${SLUICE_CORPUS:-$ROOT/../shared/corpus}
	mkdir -p "$dir/corpus" && cp "$corpus"/jpeg/derived/*.jpg "$dir/corpus/" || return 1
	cp -r "$corpus/broken" "$corpus/MANIFEST.tsv" "$dir/" || return 1
	echo "corpus: $(ls "$dir/corpus" | wc -l) JPEGs, $(mb "$(size "$dir/corpus")")"
	{
		echo "built $(date -u +%FT%TZ) from $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
		(cd "$dir" && ls -l tritonserver.tar.xz tritonclient.tar.xz libtriton_sluice.so.xz) | awk '{ print $5, $9 }'
	} >"$dir/manifest.txt"
	echo "TOTAL $dir: $(mb "$(size "$dir")")"
}

# ---------------------------------------------------------------- run (GPU machine)
write_models() {
	local m=$1 pre=$ROOT/model_repository/preprocess_imagenet
	rm -rf "$m" && mkdir -p "$m" || return 1
	local kind name
	for kind in GPU CPU; do
		name=preprocess_${kind,,}
		mkdir -p "$m/$name/1" && cp "$pre/1/model.sluice" "$m/$name/1/" || return 1
		local ig="instance_group [ { kind: KIND_CPU, count: 1 } ]"
		[ $kind = GPU ] && ig="instance_group [ { kind: KIND_GPU, count: 1, gpus: [ 0 ] } ]"
		sed -e "s/^name: .*/name: \"$name\"/" -e "s/^instance_group.*/$ig/" "$pre/config.pbtxt" >"$m/$name/config.pbtxt"
		grep -q "kind: KIND_$kind" "$m/$name/config.pbtxt" || { echo "could not set instance_group in $name" >&2; return 1; }

		name=consumer_${kind,,}
		mkdir -p "$m/$name/1"
		cat >"$m/$name/config.pbtxt" <<EOF
name: "$name"
backend: "python"
max_batch_size: 64
input [ { name: "PIXELS", data_type: TYPE_FP32, dims: [ 3, 224, 224 ] } ]
output [
  { name: "MEAN", data_type: TYPE_FP32, dims: [ 1 ] },
  { name: "ON_GPU", data_type: TYPE_INT32, dims: [ 1 ] }
]
instance_group [ { kind: KIND_$kind, count: 1$([ $kind = GPU ] && echo ", gpus: [ 0 ]") } ]
parameters: { key: "FORCE_CPU_ONLY_INPUT_TENSORS", value: { string_value: "no" } }
EOF
		cat >"$m/$name/1/model.py" <<'EOF'
# Reads PIXELS where Triton left it (GPU tensors through DLPack when it can)
# and returns each image's mean, and whether the tensor arrived on the GPU.
import numpy as np
import triton_python_backend_utils as pb_utils

try:
    import torch
    import torch.utils.dlpack
except ImportError:  # a local CPU test without torch
    torch = None


class TritonPythonModel:
    def initialize(self, args):
        pb_utils.Logger.log_info(f"consumer: torch {getattr(torch, '__version__', None)}, "
                                 f"kind {args.get('model_instance_kind')}, device {args.get('model_instance_device_id')}")

    def execute(self, requests):
        out = []
        for r in requests:
            t = pb_utils.get_input_tensor_by_name(r, "PIXELS")
            on_gpu = not t.is_cpu()
            if torch is not None:
                x = torch.utils.dlpack.from_dlpack(t.to_dlpack())
                mean = x.reshape(x.shape[0], -1).double().mean(dim=1, keepdim=True).float().cpu().numpy()
            else:
                x = t.as_numpy()
                mean = x.reshape(x.shape[0], -1).astype(np.float64).mean(axis=1, keepdims=True).astype(np.float32)
            flag = np.full((mean.shape[0], 1), int(on_gpu), np.int32)
            if torch is not None:
                # Through DLPack: the stub's numpy path returned empty
                # tensors under the machine's numpy 2 (seen on the H200).
                outs = [pb_utils.Tensor.from_dlpack("MEAN", torch.utils.dlpack.to_dlpack(torch.from_numpy(mean))),
                        pb_utils.Tensor.from_dlpack("ON_GPU", torch.utils.dlpack.to_dlpack(torch.from_numpy(flag)))]
            else:
                outs = [pb_utils.Tensor("MEAN", mean), pb_utils.Tensor("ON_GPU", flag)]
            out.append(pb_utils.InferenceResponse(outs))
        return out
EOF

		name=ensemble_${kind,,}
		mkdir -p "$m/$name/1"
		cat >"$m/$name/config.pbtxt" <<EOF
name: "$name"
platform: "ensemble"
max_batch_size: 64
input [ { name: "IMAGE", data_type: TYPE_UINT8, dims: [ -1 ] } ]
output [
  { name: "MEAN", data_type: TYPE_FP32, dims: [ 1 ] },
  { name: "ON_GPU", data_type: TYPE_INT32, dims: [ 1 ] }
]
ensemble_scheduling {
  step [
    {
      model_name: "preprocess_${kind,,}", model_version: -1
      input_map { key: "IMAGE", value: "IMAGE" }
      output_map { key: "PIXELS", value: "pixels" }
    },
    {
      model_name: "consumer_${kind,,}", model_version: -1
      input_map { key: "PIXELS", value: "pixels" }
      output_map { key: "MEAN", value: "MEAN" }
      output_map { key: "ON_GPU", value: "ON_GPU" }
    }
  ]
}
EOF
	done
}

run() {
	local dir=${1:-.bench/triton} t0=$SECONDS
	dir=$(cd "$dir" && pwd) || { echo "no $1" >&2; return 1; }
	local out=${OUT:-$dir/out} gt=/tmp/gt
	mkdir -p "$out" "$gt"
	local py=${PYTHON:-python3}
	echo "== machine"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
	"$py" -c 'import sys, numpy; print("python", sys.version.split()[0], sys.executable, "numpy", numpy.__version__)
try:
    import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())
except Exception as e: print("torch: not importable:", e)'

	echo "== unpack"
	rm -rf "$gt/root" "$gt/site" && mkdir -p "$gt/root" "$gt/site" "$gt/backends/sluice" "$gt/backends/python" || return 1
	xz -dc "$dir/tritonserver.tar.xz" | tar -C "$gt/root" -xf - || return 1
	xz -dc "$dir/tritonclient.tar.xz" | tar -C "$gt/site" -xf - || return 1
	xz -dc "$dir/libtriton_sluice.so.xz" >"$gt/backends/sluice/libtriton_sluice.so" || return 1
	# tritonclient.grpc imports rapidjson for JSON conversions only: the standard json serves.
	printf 'from json import *  # noqa: F401,F403 (stands in for python-rapidjson)\n' >"$gt/site/rapidjson.py"
	local ts=$gt/root/pytriton/tritonserver libs=$gt/root/nvidia_pytriton.libs
	ln -sf "$ts/backends/python/libtriton_python.so" "$ts/backends/python/triton_python_backend_utils.py" "$gt/backends/python/"
	ln -sf "${GT_STUB:-$ts/python_backend_stubs/3.12/triton_python_backend_stub}" "$gt/backends/python/triton_python_backend_stub"
	echo "unpacked in $((SECONDS - t0)) s"

	# The stub embeds libpython3.X.so.1.0 of the Python that runs the models.
	local pyver libdir ldextra=""
	read -r pyver libdir < <("$py" -c 'import sys, sysconfig; print("%d.%d" % sys.version_info[:2], sysconfig.get_config_var("LIBDIR"))')
	local want=libpython$pyver.so.1.0 found=""
	for d in "$libdir" /usr/lib/x86_64-linux-gnu /usr/local/lib "$(dirname "$(readlink -f "$(command -v "$py")")")/../lib"; do
		if [ -e "$d/$want" ]; then found=$d; break; fi
	done
	if [ -z "$found" ] && ldconfig -p 2>/dev/null | grep -q "$want"; then found=system; fi
	if [ -z "$found" ]; then
		found=$(timeout 20 find /usr /opt /root -name "$want" 2>/dev/null | head -1)
		[ -n "$found" ] && found=$(dirname "$found")
	fi
	if [ -z "$found" ]; then
		echo "WARNING: no $want on this machine: the python backend stub cannot start; consumer_* and ensemble_* will not load"
	else
		echo "$want: $found"
		[ "$found" = system ] || ldextra=$found
	fi
	[ -n "${GT_STUB:-}" ] || [ "$pyver" = 3.12 ] || echo "WARNING: python3 is $pyver but the carried stub is for 3.12"
	local pysite; pysite=$("$py" -c 'import site; print(":".join(site.getsitepackages()))')

	write_models "$gt/models" || return 1
	if [ "${GT_MODELS_ONLY:-0}" = 1 ]; then find "$gt/models" -type f; return 0; fi

	local hp=18000 gp=18001 mp=18002 log=$out/tritonserver.log
	echo "== tritonserver"
	(
		export LD_LIBRARY_PATH="$libs${ldextra:+:$ldextra}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		export PYTHONPATH="$pysite${PYTHONPATH:+:$PYTHONPATH}"
		PATH="$(dirname "$(command -v "$py")"):$PATH"
		export PATH
		exec setsid "$ts/bin/tritonserver" --model-repository="$gt/models" --backend-directory="$gt/backends" \
			--http-port=$hp --grpc-port=$gp --metrics-port=$mp --allow-gpu-metrics=false \
			--cuda-memory-pool-byte-size=0:2147483648 \
			--strict-readiness=false --exit-on-error=false --exit-timeout-secs=10 \
			--backend-config=python,shm-default-byte-size=16777216 --backend-config=python,shm-growth-byte-size=16777216 \
			--log-verbose=0 </dev/null >"$log" 2>&1
	) &
	local pid=$!
	local ok=0
	local deadline=$((SECONDS + 120))
	while [ $SECONDS -lt $deadline ]; do
		if ! kill -0 $pid 2>/dev/null; then echo "tritonserver exited"; break; fi
		if "$py" -c 'import sys,urllib.request as u; sys.exit(0 if u.urlopen("http://127.0.0.1:'$hp'/v2/health/live", timeout=2).status==200 else 1)' 2>/dev/null; then
			# live: the repository has been polled once; every model is loaded or failed.
			ok=1; break
		fi
		sleep 0.2
	done
	if [ $ok = 0 ]; then
		echo "FAIL: tritonserver did not come up in 120 s; the end of its log:"
		tail -60 "$log"
		kill -TERM $pid 2>/dev/null
		return 1
	fi
	echo "tritonserver live after $((SECONDS - t0)) s (pid $pid); model states:"
	grep -E '^\| [a-z_]+ +\| [0-9]+ +\|' "$log" || tail -30 "$log"
	grep -i -E 'error|fail|unable' "$log" | grep -v 'ensemble step' | head -20

	# The corpus: DIR/corpus, else the one scripts/gpu.sh carries.
	local corpus=$dir/corpus
	[ -d "$corpus" ] || corpus=$ROOT/.bench/gpu/corpus/jpeg/derived
	if [ -n "${GT_SOAK_MINUTES:-}" ]; then
		echo "== soak (corpus $corpus, broken $dir/broken)"
		PYTHONPATH="$gt/site${PYTHONPATH:+:$PYTHONPATH}" "$py" "$ROOT/scripts/soak.py" --url 127.0.0.1:$gp \
			--model preprocess_gpu --pid $pid --gpu --good "$corpus" --broken "$dir/broken" \
			--minutes "$GT_SOAK_MINUTES" --concurrency "${GT_SOAK_CONCURRENCY:-64}" --json "$out/soak.json"
	else
		echo "== checks (corpus $corpus)"
		PYTHONPATH="$gt/site${PYTHONPATH:+:$PYTHONPATH}" "$py" "$ROOT/scripts/gpu_triton_check.py" \
			--http 127.0.0.1:$hp --grpc 127.0.0.1:$gp --metrics 127.0.0.1:$mp --corpus "$corpus" \
			--out "$out" --seconds "${GT_SECONDS:-15}"
	fi
	local rc=$?

	kill -TERM $pid 2>/dev/null
	for _ in $(seq 1 150); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	kill -KILL $pid 2>/dev/null
	echo "== server log: errors and warnings"
	grep -E '^[EW][0-9]{4}' "$log" | head -30
	echo "done in $((SECONDS - t0)) s, check rc=$rc, results in $out"
	return $rc
}

case ${1:-} in
build) shift; build "$@" ;;
run)
	shift
	mkdir -p "${OUT:-/tmp}"
	run "$@" 2>&1 | tee "${OUT:-/tmp}/gpu_triton_run.log"
	exit "${PIPESTATUS[0]}"
	;;
*) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
