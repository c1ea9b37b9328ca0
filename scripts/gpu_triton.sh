#!/usr/bin/env bash
# The real tritonserver 2.51.0 with Sluice's backend on a GPU machine that has
# no Go and no network: pack here, carry one folder, run there.
#
#   scripts/gpu_triton.sh build [DIR]   here (DIR: .bench/triton). Packs what the GPU
#       machine lacks: tritonserver and the libraries it needs (from the nvidia-pytriton
#       wheel in .venv-triton; the 29 MB ICU data library is replaced by an empty one,
#       as Triton converts no text through ICU), the python backend and its 3.12 stub,
#       the tritonclient package, build/backends/sluice/libtriton_sluice.so (make backend
#       first; BUILD_BACKEND=1 runs it), the derived corpus JPEGs, corpus/broken (with
#       MANIFEST.tsv, for bench.soak), and for GT_PERF the tritonclient wheel's
#       perf_analyzer, the sluice CLI (its perf-data writes perf_analyzer's input there) and
#       the baseline colour JPEGs of jpeg/derived and jpeg/native (picked
#       with Pillow from .venv, PILLOW_PYTHON). Prints every size.
#   scripts/gpu_triton.sh run [DIR]     there, from the repo root, DIR carried. Unpacks to
#       /tmp/gt (GT_TMP), writes a model repository (preprocess_gpu, preprocess_cpu,
#       consumer_gpu, consumer_cpu, ensemble_gpu, ensemble_cpu, and preprocess_* and
#       ensemble_* with a TYPE_STRING input, named *_bytes; from the shipped
#       model_repository/preprocess_imagenet and the templates in tests/gpu_triton/models;
#       crops_* and decoded_* from model_repository/preprocess_crops and
#       preprocess_imagenet_decoded, frames_gpu and ensemble_frames from the templates),
#       starts tritonserver (ports GT_PORT, +1, +2: 18000), runs the checks (python3 -m
#       pytest tests/gpu_triton; python3 needs pytest), then with GT_PERF=1 the
#       perf_analyzer sweep, and stops the server. Results: $OUT/gpu_triton.json,
#       $OUT/gpu_triton.md, $OUT/gpu_perf.md (the perf_analyzer table), $OUT/perf/ (its
#       CSVs, logs, Triton's statistics around each run), $OUT/tritonserver.log,
#       $OUT/gpu_triton_run.log (DIR/out when OUT is unset; the run log then goes to /tmp).
#       Environment: GT_SECONDS (load seconds per row, 15), GT_STUB (another stub
#       binary, for a local test with another Python), GT_MODELS_ONLY=1 (write the
#       repository and stop), GT_CHECK=0 (skip the checks), GT_MAX_BATCH
#       (max_batch_size of every model, 256), GT_INSTANCES (KIND_GPU preprocess instances
#       per GPU, 2: the README's recommendation), GT_CONSUMERS (consumer instances per GPU, 1), GT_GPUS (the GPUs of the
#       KIND_GPU instance groups, comma-separated: 0; 0,1 puts every KIND_GPU model on
#       both), GT_CUDA_POOL (bytes per GPU, 8 GiB), GT_FAST_UPSAMPLING=1 (the ImageNet
#       models' decode replicates JPEG chroma: jpeg_fancy_upsampling false, compiled
#       there with the carried sluice CLI; needs GT_PERF's build), GT_WORKERS (the KIND_GPU
#       ImageNet models' workers parameter; unset: the default, the cores shared among
#       the instances with a batch in flight). Models load with explicit model
#       control (all at start), so that the checks can unload and reload them.
#       GT_PERF=1: perf_analyzer over gRPC with system shared memory for inputs and
#       outputs, against preprocess_<kind> and ensemble_<kind> (GT_PERF_MODELS,
#       "preprocess ensemble"), kind GT_KIND (GPU; CPU for a machine without one), inputs
#       GT_PERF_INPUT ("bytes": the *_bytes models, BYTES elements of any size; "uint8":
#       the UINT8 [-1] models, each request's images zero-padded to the largest file, as
#       perf_analyzer batches only tensors of one shape), client batch sizes GT_PERF_BATCH
#       ("64 256"; also the models' preferred batch sizes), concurrency GT_PERF_CONC
#       ("2 4 8"), files GT_PERF_FILES (baseline: the baseline colour JPEGs; mix: every
#       JPEG of the whole mix), windows GT_PERF_WINDOW_MS (2000), GT_PERF_STABILITY (15 %),
#       GT_PERF_TRIALS (5), GT_STANDALONE ("64=17000 256=20000": adds a column, the share
#       of `sluice bench --gpu 0` images/s at each batch size). GT_SOAK_MINUTES: after
#       the perf sweep, run bench.soak on preprocess_gpu that long (RSS and GPU memory,
#       wrong answers; results in $OUT/soak.json; GT_SOAK_CONCURRENCY, 64).
#       GT_RESNET=1: also resnet50_<kind> (torchvision's ResNet-50, random weights
#       from a fixed seed written there by python3 with torch, FP16 and CUDA graphs
#       in the python backend; tests/gpu_triton/models/resnet50) and
#       ensemble_resnet50_<kind>_bytes (preprocess_<kind>_bytes, then it), kind
#       GT_KIND; runs tests/gpu_triton/test_resnet.py (the logits against torchvision's
#       preprocessing and the same network, $OUT/resnet_<kind>.json; with the checks
#       when GT_CHECK is not 0) and tests/gpu_triton/resnet_e2e.py's perf_analyzer
#       sweep of the pair, Sluice alone and the network alone (GT_PERF_BATCH,
#       GT_RESNET_CONC "4 8", the GT_PERF windows; GT_RESNET_BUDGET, 240 s: no run
#       starts later) into $OUT/resnet_perf.md and $OUT/resnet/; GT_PERF=1 beside it
#       adds the sweep above. GT_RESNET_INSTANCES (network instances per GPU, 1).
#       GT_START_S: seconds the server may take to load every model (240).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
. "$ROOT/scripts/lib.sh"

build() {
	local dir=${1:-.bench/triton} venv=${TRITON_VENV:-$ROOT/.venv-triton} sp stage
	mkdir -p "$dir" && dir=$(cd "$dir" && pwd) || return 1
	case $dir in "$ROOT" | / | "$HOME") echo "refusing to build into $dir" >&2; return 1 ;; esac
	rm -rf "$dir/tritonserver.tar.xz" "$dir/tritonclient.tar.xz" "$dir/libtriton_sluice.so.xz" "$dir/corpus" "$dir/broken" "$dir/MANIFEST.tsv" "$dir/manifest.txt" "$dir/out" \
		"$dir/perf_analyzer.xz" "$dir/sluice.xz" "$dir/perf_jpegs" "$dir/perf_mix"
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

	local corpus
	corpus=$(corpus_dir)
	mkdir -p "$dir/corpus" && cp "$corpus"/jpeg/derived/*.jpg "$dir/corpus/" || return 1
	cp -r "$corpus/broken" "$corpus/MANIFEST.tsv" "$dir/" || return 1
	# Every other format, as tests/triton/test_formats.py makes them from a
	# corpus photo (with the Triton venv's Pillow): GPU instances decode
	# them on their CPU workers.
	"${TRITON_VENV:-$ROOT/.venv-triton}/bin/python" -m tests.triton.write_formats "$corpus" "$dir/corpus" || return 1
	echo "corpus: $(ls "$dir/corpus" | wc -l) files ($(ls "$dir/corpus" | grep -c '\.jpg$') JPEGs, the rest other formats), $(mb "$(size "$dir/corpus")")"
	build_perf "$dir" "$sp" "$corpus" "$stage" || return 1
	{
		echo "built $(date -u +%FT%TZ) from $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
		(cd "$dir" && ls -l tritonserver.tar.xz tritonclient.tar.xz libtriton_sluice.so.xz perf_analyzer.xz sluice.xz) | awk '{ print $5, $9 }'
	} >"$dir/manifest.txt"
	echo "TOTAL $dir: $(mb "$(size "$dir")")"
}

# perf_analyzer (the tritonclient wheel's, stripped), the sluice CLI that writes
# its input data there (static like gpu.sh's: the GPU machine has no Go), and
# its images. It needs
# libb64.so.0d and libcudart.so.12, which no stock system has: the run links
# them from the pytriton wheel's libraries in tritonserver.tar.xz (and libssl,
# libcrypto, should the system lack them). The images are the baseline colour
# JPEGs of jpeg/derived and jpeg/native, split by Pillow as the GPU benchmark
# (bench.gpu) splits them: the photos `sluice bench --gpu` is measured on
# (perf_jpegs), and all of them, the benchmark's whole mix (perf_mix).
build_perf() {
	local dir=$1 sp=$2 corpus=$3 stage=$4 venv=${TRITON_VENV:-$ROOT/.venv-triton}
	local pa=$stage/perf_analyzer palibs=$stage/palibs libs=$sp/nvidia_pytriton.libs
	cp "$venv/bin/perf_analyzer" "$pa" && strip --strip-unneeded "$pa" || return 1
	mkdir -p "$palibs" &&
		ln -s "$(ls "$libs"/libb64-*.so.0d | head -1)" "$palibs/libb64.so.0d" &&
		ln -s "$(ls "$libs"/libcudart-*.so.12* | head -1)" "$palibs/libcudart.so.12" || return 1
	local v; v=$(LD_LIBRARY_PATH=$palibs "$pa" --version 2>&1)
	case $v in *"Perf Analyzer Version"*) ;; *) echo "the packed perf_analyzer does not start: ${v:0:300}" >&2; return 1 ;; esac
	echo "perf_analyzer: $v; from the system: $(LD_LIBRARY_PATH=$palibs ldd "$pa" | awk '$3 ~ /^\// && $3 !~ /palibs/ { printf "%s ", $1 }')"
	xz -9 -T0 -c "$pa" >"$dir/perf_analyzer.xz" || return 1
	echo "perf_analyzer: $(mb "$(size "$venv/bin/perf_analyzer")"), stripped $(mb "$(size "$pa")"), xz $(mb "$(size "$dir/perf_analyzer.xz")")"
	CGO_ENABLED=1 go build -ldflags='-s -w' -o "$stage/sluice" ./cmd/sluice && xz -9 -T0 -c "$stage/sluice" >"$dir/sluice.xz" || return 1
	echo "sluice: $(mb "$(size "$stage/sluice")"), xz $(mb "$(size "$dir/sluice.xz")")"

	local py=${PILLOW_PYTHON:-$ROOT/.venv/bin/python}
	mkdir -p "$dir/perf_jpegs" || return 1
	"$py" -m tests.gpu_triton.perf jpegs "$corpus" "$dir/perf_jpegs" ||
		{ echo "could not pick the baseline colour JPEGs (Pillow: $py, PILLOW_PYTHON)" >&2; return 1; }
	echo "perf_jpegs: $(ls "$dir/perf_jpegs" | wc -l) baseline colour JPEGs, $(mb "$(size "$dir/perf_jpegs")")"
	mkdir -p "$dir/perf_mix" && cp "$corpus"/jpeg/derived/*.jp*g "$corpus"/jpeg/native/*.jp*g "$dir/perf_mix/" || return 1
	echo "perf_mix: $(ls "$dir/perf_mix" | wc -l) JPEGs, $(mb "$(size "$dir/perf_mix")")"
}

# ---------------------------------------------------------------- run (GPU machine)
# The model repository: preprocess_* from the shipped model
# (model_repository/preprocess_imagenet) with the variables below set;
# consumer_* and ensemble_* from the templates in tests/gpu_triton/models,
# their @NAME@ fields filled in.
MODELS=$ROOT/tests/gpu_triton/models

# fill TEMPLATE KEY=VALUE...: the template with each @KEY@ replaced; fails
# on a field left unfilled.
fill() {
	local text kv
	text=$(<"$1") || return 1
	shift
	for kv in "$@"; do text=${text//@${kv%%=*}@/${kv#*=}}; done
	if [[ $text =~ @[A-Z_]+@ ]]; then echo "fill: ${BASH_REMATCH[0]} left unfilled" >&2; return 1; fi
	printf '%s\n' "$text"
}

# write_models DIR MODEL: the repository in DIR, the ImageNet models
# serving the compiled pipeline MODEL.
write_models() {
	local m=$1 model=$2 pre=$ROOT/model_repository/preprocess_imagenet mb=${GT_MAX_BATCH:-256}
	rm -rf "$m" && mkdir -p "$m" || return 1
	# Preferred batch sizes: the client batch sizes perf_analyzer sends, and the largest.
	local pref="" b
	for b in ${GT_PERF_BATCH:-64 256} "$mb"; do
		[[ $b =~ ^[1-9][0-9]*$ ]] && [ "$b" -le "$mb" ] || continue
		[[ " $pref " == *" $b,"* ]] || pref="$pref $b,"
	done
	pref=${pref%,}
	local batching="dynamic_batching { preferred_batch_size: [$pref ] max_queue_delay_microseconds: 2000 }"
	local kind k name form sfx
	local gpus=${GT_GPUS:-0}
	gpus=${gpus//,/, }
	# An instance group of count $2; KIND_GPU ones on every GPU of GT_GPUS.
	group() {
		if [ "$1" = GPU ]; then echo "{ kind: KIND_GPU, count: $2, gpus: [ $gpus ] }"; else echo "{ kind: KIND_CPU, count: $2 }"; fi
	}
	for kind in GPU CPU; do
		k=${kind,,}
		local ig="instance_group [ $(group $kind "$([ $kind = GPU ] && echo "${GT_INSTANCES:-2}" || echo 1)") ]"
		# Two input forms: UINT8 [-1] (the shipped model's; a batch of a request is zero-padded
		# to one length) and TYPE_STRING [1] (BYTES elements, any sizes, no padding).
		for form in uint8 bytes; do
			sfx=""
			[ $form = bytes ] && sfx=_bytes
			name=preprocess_$k$sfx
			mkdir -p "$m/$name/1" && cp "$model" "$m/$name/1/model.sluice" || return 1
			local edit=(-e "s/^name: .*/name: \"$name\"/" -e "s/^instance_group.*/$ig/"
				-e "s/^max_batch_size: .*/max_batch_size: $mb/" -e "/^dynamic_batching {/,/^}/c\\$batching")
			[ $form = bytes ] && edit+=(-e 's/data_type: TYPE_UINT8/data_type: TYPE_STRING/'
				-e 's/dims: \[ -1 \].*/dims: [ 1 ]/' -e '/allow_ragged_batch/d')
			sed "${edit[@]}" "$pre/config.pbtxt" >"$m/$name/config.pbtxt"
			if [ $kind = GPU ] && [ -n "${GT_WORKERS:-}" ]; then
				echo "parameters { key: \"workers\" value { string_value: \"$GT_WORKERS\" } }" >>"$m/$name/config.pbtxt"
			fi
			local want
			for want in "kind: KIND_$kind" "max_batch_size: $mb" "preferred_batch_size" \
				"data_type: $([ $form = bytes ] && echo TYPE_STRING || echo TYPE_UINT8)"; do
				grep -q "$want" "$m/$name/config.pbtxt" || { echo "could not set '$want' in $name" >&2; return 1; }
			done

			mkdir -p "$m/ensemble_$k$sfx/1"
			fill "$MODELS/ensemble/config.pbtxt" NAME="ensemble_$k$sfx" MAX_BATCH="$mb" \
				IMAGE_TYPE="$([ $form = bytes ] && echo TYPE_STRING || echo TYPE_UINT8)" \
				IMAGE_DIMS="$([ $form = bytes ] && echo 1 || echo -1)" \
				PREPROCESS="$name" CONSUMER="consumer_$k" >"$m/ensemble_$k$sfx/config.pbtxt" || return 1
		done

		name=consumer_$k
		mkdir -p "$m/$name/1" && cp "$MODELS/consumer/1/model.py" "$m/$name/1/" || return 1
		fill "$MODELS/consumer/config.pbtxt" NAME="$name" MAX_BATCH="$mb" \
			INSTANCE_GROUP="$(group $kind "${GT_CONSUMERS:-1}")" >"$m/$name/config.pbtxt" || return 1

		# Two-stage models (test_two_stage.py): box crops, and decoded images.
		local src
		for src in preprocess_crops:crops preprocess_imagenet_decoded:decoded; do
			name=${src#*:}_$k
			mkdir -p "$m/$name/1" && cp "$ROOT/model_repository/${src%%:*}/1/model.sluice" "$m/$name/1/" || return 1
			sed -e "s/^name: .*/name: \"$name\"/" -e "s/^instance_group.*/instance_group [ $(group $kind 1) ]/" \
				"$ROOT/model_repository/${src%%:*}/config.pbtxt" >"$m/$name/config.pbtxt" || return 1
			grep -q "kind: KIND_$kind" "$m/$name/config.pbtxt" || { echo "could not set KIND_$kind in $name" >&2; return 1; }
		done
	done
	# An upstream model that leaves decoded images in GPU memory, and the
	# ensemble that feeds them to decoded_gpu.
	mkdir -p "$m/frames_gpu/1" "$m/ensemble_frames/1" && cp "$MODELS/frames/1/model.py" "$m/frames_gpu/1/" || return 1
	fill "$MODELS/frames/config.pbtxt" NAME=frames_gpu INSTANCE_GROUP="$(group GPU 1)" >"$m/frames_gpu/config.pbtxt" || return 1
	fill "$MODELS/ensemble_frames/config.pbtxt" NAME=ensemble_frames FRAMES=frames_gpu DECODED=decoded_gpu \
		>"$m/ensemble_frames/config.pbtxt" || return 1
	[ "${GT_RESNET:-0}" = 1 ] || return 0
	# The ResNet-50 behind preprocess_<k>_bytes, k from GT_KIND: its weights are
	# made here (python3 with torch), beside model.py and the resnet50.py it imports.
	# A CUDA graph for each batch size a batch of the dynamic batcher is padded to.
	kind=${GT_KIND:-GPU}
	k=${kind,,}
	name=resnet50_$k
	local w wfile wseed wdigest graphs=""
	for b in 1 8 16 32 64 128 192 256 "$mb"; do
		[ "$b" -le "$mb" ] && [[ " $graphs " != *" $b "* ]] && graphs="$graphs $b"
	done
	mkdir -p "$m/$name/1" && cp "$MODELS/resnet50/1/model.py" "$ROOT/tests/gpu_triton/resnet50.py" "$m/$name/1/" || return 1
	w=$("${PYTHON:-python3}" "$ROOT/tests/gpu_triton/resnet_e2e.py" weights "$m/$name/1") || return 1
	read -r wfile wseed wdigest <<<"$w"
	fill "$MODELS/resnet50/config.pbtxt" NAME="$name" MAX_BATCH="$mb" BATCHING="$batching" \
		INSTANCE_GROUP="$(group "$kind" "${GT_RESNET_INSTANCES:-1}")" WEIGHTS="$wfile" SEED="$wseed" DIGEST="$wdigest" \
		GRAPHS="${graphs# }" >"$m/$name/config.pbtxt" || return 1
	mkdir -p "$m/ensemble_resnet50_${k}_bytes/1"
	fill "$MODELS/ensemble_resnet50/config.pbtxt" NAME="ensemble_resnet50_${k}_bytes" MAX_BATCH="$mb" \
		PREPROCESS="preprocess_${k}_bytes" NETWORK="$name" >"$m/ensemble_resnet50_${k}_bytes/config.pbtxt" || return 1
}

run() {
	local dir=${1:-.bench/triton} t0=$SECONDS
	dir=$(cd "$dir" && pwd) || { echo "no $1" >&2; return 1; }
	local out=${OUT:-$dir/out} gt=${GT_TMP:-/tmp/gt}
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

	local model=$ROOT/model_repository/preprocess_imagenet/1/model.sluice
	if [ "${GT_FAST_UPSAMPLING:-0}" = 1 ]; then
		# The shipped pipeline with decode's jpeg_fancy_upsampling false (JPEG
		# chroma replicated, DALI's default), compiled by the carried CLI.
		[ -f "$dir/sluice.xz" ] || { echo "GT_FAST_UPSAMPLING needs sluice.xz in $dir (GT_PERF's build)"; return 1; }
		xz -dc "$dir/sluice.xz" >"$gt/sluice" && chmod +x "$gt/sluice" || return 1
		local fast
		fast=$("$py" -c 'import sys; from bench import common; print(common.fast_upsampling_pipeline(*sys.argv[1:]))' \
			"$ROOT/model_repository/preprocess_imagenet/1/pipeline.pbtxt" "$gt") || return 1
		"$gt/sluice" compile "$fast" -o "$gt/fast_upsampling.sluice" || return 1
		model=$gt/fast_upsampling.sluice
	fi
	write_models "$gt/models" "$model" || return 1
	if [ "${GT_MODELS_ONLY:-0}" = 1 ]; then find "$gt/models" -type f; return 0; fi
	if [ "${GT_CHECK:-1}" != 0 ] || [ "${GT_PERF:-0}" = 1 ] || [ "${GT_RESNET:-0}" = 1 ]; then
		"$py" -c 'import pytest' 2>/dev/null || { echo "FAIL: $py has no pytest (the checks are tests/gpu_triton's tests)"; return 1; }
	fi

	local hp=${GT_PORT:-18000} log=$out/tritonserver.log
	local gp=$((hp + 1)) mp=$((hp + 2)) pools=() g
	local gl=${GT_GPUS:-0}
	for g in ${gl//,/ }; do pools+=(--cuda-memory-pool-byte-size="$g:${GT_CUDA_POOL:-8589934592}"); done
	echo "== tritonserver"
	(
		export LD_LIBRARY_PATH="$libs${ldextra:+:$ldextra}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		export PYTHONPATH="$pysite${PYTHONPATH:+:$PYTHONPATH}"
		PATH="$(dirname "$(command -v "$py")"):$PATH"
		export PATH
		exec setsid "$ts/bin/tritonserver" --model-repository="$gt/models" --backend-directory="$gt/backends" \
			--http-port=$hp --grpc-port=$gp --metrics-port=$mp --allow-gpu-metrics=false \
			"${pools[@]}" --model-control-mode=explicit --load-model='*' \
			--strict-readiness=false --exit-on-error=false --exit-timeout-secs=10 \
			--backend-config=python,shm-default-byte-size=16777216 --backend-config=python,shm-growth-byte-size=16777216 \
			--log-verbose=0 </dev/null >"$log" 2>&1
	) &
	local pid=$!
	local ok=0
	# Every model loads before the server is live: the python models import torch first.
	local deadline=$((SECONDS + ${GT_START_S:-240}))
	while [ $SECONDS -lt $deadline ]; do
		if ! kill -0 $pid 2>/dev/null; then echo "tritonserver exited"; break; fi
		if "$py" -c 'import sys,urllib.request as u; sys.exit(0 if u.urlopen("http://127.0.0.1:'$hp'/v2/health/live", timeout=2).status==200 else 1)' 2>/dev/null; then
			# live: the repository has been polled once; every model is loaded or failed.
			ok=1; break
		fi
		sleep 0.2
	done
	if [ $ok = 0 ]; then
		echo "FAIL: tritonserver did not come up in ${GT_START_S:-240} s; the end of its log:"
		tail -60 "$log"
		kill -TERM $pid 2>/dev/null
		return 1
	fi
	echo "tritonserver live after $((SECONDS - t0)) s (pid $pid); model states:"
	grep -E '^\| [a-z_]+ +\| [0-9]+ +\|' "$log" || tail -30 "$log"
	grep -i -E 'error|fail|unable' "$log" | grep -v 'ensemble step' | head -20

	local rc=0
	# The corpus: DIR/corpus, else the one scripts/gpu.sh carries.
	local corpus=$dir/corpus
	[ -d "$corpus" ] || corpus=$ROOT/.bench/gpu/corpus/jpeg/derived
	if [ "${GT_CHECK:-1}" != 0 ]; then
		echo "== checks (corpus $corpus)"
		PYTHONPATH="$gt/site${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest -p no:cacheprovider -s -v tests/gpu_triton \
			--http 127.0.0.1:$hp --grpc 127.0.0.1:$gp --metrics 127.0.0.1:$mp --corpus "$corpus" \
			--out "$out" --seconds "${GT_SECONDS:-15}" --gpus "${GT_GPUS:-0}"
		rc=$?
	elif [ "${GT_RESNET:-0}" = 1 ]; then
		echo "== the ResNet-50 ensemble against torchvision (corpus $corpus)"
		PYTHONPATH="$gt/site${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest -p no:cacheprovider -s -v tests/gpu_triton/test_resnet.py \
			--http 127.0.0.1:$hp --grpc 127.0.0.1:$gp --metrics 127.0.0.1:$mp --corpus "$corpus" --out "$out"
		rc=$?
	fi
	if [ "${GT_PERF:-0}" = 1 ] || [ "${GT_RESNET:-0}" = 1 ]; then
		perf "$dir" "$gt" "$libs" "$out" "$py" $hp $gp || rc=1
	fi
	if [ -n "${GT_SOAK_MINUTES:-}" ]; then
		echo "== soak (corpus $corpus, broken $dir/broken)"
		PYTHONPATH="$gt/site${PYTHONPATH:+:$PYTHONPATH}" "$py" -m bench.soak --url 127.0.0.1:$gp \
			--model preprocess_gpu --pid $pid --gpu --good "$corpus" --broken "$dir/broken" \
			--minutes "$GT_SOAK_MINUTES" --concurrency "${GT_SOAK_CONCURRENCY:-64}" --json "$out/soak.json" || rc=1
	fi

	kill -TERM $pid 2>/dev/null
	for _ in $(seq 1 150); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	kill -KILL $pid 2>/dev/null
	echo "== server log: errors and warnings"
	grep -E '^[EW][0-9]{4}' "$log" | head -30
	echo "done in $((SECONDS - t0)) s, rc=$rc, results in $out"
	return $rc
}

# ---------------------------------------------------------------- perf (GPU machine, GT_PERF=1)
# perf_analyzer against the running server: preprocess_<kind> alone and
# ensemble_<kind>, gRPC with inputs and outputs in system shared memory (no
# payload copies through gRPC), the baseline colour JPEGs of DIR/perf_jpegs, or
# with GT_PERF_FILES=mix every JPEG of DIR/perf_mix.
perf() {
	local dir=$1 gt=$2 libs=$3 out=$4 py=$5 hp=$6 gp=$7
	local kind=${GT_KIND:-GPU} models=${GT_PERF_MODELS:-preprocess ensemble} forms=${GT_PERF_INPUT:-bytes}
	local batches=${GT_PERF_BATCH:-64 256} concs=${GT_PERF_CONC:-2 4 8}
	local win=${GT_PERF_WINDOW_MS:-2000} stab=${GT_PERF_STABILITY:-15} trials=${GT_PERF_TRIALS:-5}
	local set=perf_jpegs
	case ${GT_PERF_FILES:-baseline} in baseline) ;; mix) set=perf_mix ;; *) echo "GT_PERF_FILES is baseline or mix"; return 1 ;; esac
	local k=${kind,,} pa=$gt/perf_analyzer palibs=$gt/palibs jpegs=$dir/$set data=$gt/perf_data sluice=$gt/sluice
	local helper=$ROOT/tests/gpu_triton/perf.py form b
	echo "== perf_analyzer: KIND_$kind models, inputs ${forms// /, }, batch ${batches// /, }, concurrency ${concs// /, }"
	case $kind in GPU | CPU) ;; *) echo "GT_KIND is GPU or CPU, not $kind"; return 1 ;; esac
	for form in $forms; do
		case $form in bytes | uint8) ;; *) echo "GT_PERF_INPUT takes bytes and uint8, not $form"; return 1 ;; esac
	done
	[ -f "$dir/perf_analyzer.xz" ] && [ -f "$dir/sluice.xz" ] && [ -d "$jpegs" ] || { echo "no perf_analyzer.xz, sluice.xz or $set in $dir: build again"; return 1; }

	# perf_analyzer needs libb64.so.0d and libcudart.so.12: links to the copies in the
	# pytriton wheel's libraries; libssl.so.3 and libcrypto.so.3 the same where the system lacks them.
	xz -dc "$dir/perf_analyzer.xz" >"$pa" && chmod +x "$pa" || return 1
	xz -dc "$dir/sluice.xz" >"$sluice" && chmod +x "$sluice" || return 1
	rm -rf "$palibs" && mkdir -p "$palibs" || return 1
	ln -s "$(ls "$libs"/libb64-*.so.0d | head -1)" "$palibs/libb64.so.0d"
	ln -s "$(ls "$libs"/libcudart-*.so.12* | head -1)" "$palibs/libcudart.so.12"
	local lib ldp=$palibs:$libs
	for lib in libssl.so.3 libcrypto.so.3; do
		if LD_LIBRARY_PATH=$palibs ldd "$pa" | grep -q "$lib => not found"; then
			ln -s "$(ls "$libs/${lib%%.*}"-*.so.3 | head -1)" "$palibs/$lib" && echo "$lib: the system has none, the wheel's copy"
		fi
	done
	local missing; missing=$(LD_LIBRARY_PATH=$ldp ldd "$pa" | grep 'not found')
	[ -z "$missing" ] || { echo "FAIL: perf_analyzer cannot start, missing: $missing"; return 1; }
	LD_LIBRARY_PATH=$ldp "$pa" --version || return 1

	# Input data, one file per form. perf_analyzer writes each entry's batch (that entry and
	# the next B-1) into a shared memory region of its own: entries x B x entry size in all.
	# Fewer entries, evenly spread, when that would fill more than half of /dev/shm.
	local bmax=0 avail n sum width
	for b in $batches; do
		[[ $b =~ ^[1-9][0-9]*$ ]] && [ "$b" -le "${GT_MAX_BATCH:-256}" ] || { echo "bad batch size $b (1..${GT_MAX_BATCH:-256})"; return 1; }
		[ "$b" -gt $bmax ] && bmax=$b
	done
	avail=$(df -B1 --output=avail /dev/shm | tail -1)
	read -r n sum width < <(stat -c %s "$jpegs"/* | awk '{ s += $1; if ($1 > w) w = $1 } END { print NR, s, w }')
	echo "/dev/shm: $((avail >> 20)) MiB free; $n JPEGs, mean $((sum / n)) bytes, largest $width"
	rm -rf "$data" && mkdir -p "$data" || return 1
	local notes=()
	for form in $forms; do
		local per=$width flag=--pad limit=$n
		[ $form = bytes ] && per=$((sum / n + 4)) flag=--bytes
		if [ $((n * bmax * per)) -gt $((avail / 2)) ]; then
			limit=$((avail / 2 / (bmax * per)))
			[ $limit -ge 1 ] || { echo "FAIL: /dev/shm cannot hold one batch of $bmax ($form)"; return 1; }
			echo "$form: $n entries would need $(((n * bmax * per) >> 20)) MiB of shared memory: taking $limit"
		fi
		"$sluice" perf-data -o "$data/$form.json" --corpus "$dir" --ext .jpg,.jpeg --max $limit $flag "$set" \
			>"$data/$form.log" 2>&1 || { cat "$data/$form.log"; return 1; }
		notes+=("$form: $(grep ' -> ' "$data/$form.log" | sed 's/ -> .*//')")
		echo "${notes[-1]}"
	done

	# Does the server read what perf_analyzer sends as the images themselves?
	local pres="" checked
	for form in $forms; do pres+=,preprocess_$k$([ $form = bytes ] && echo _bytes); done
	local ran
	ran=$("$py" -m pytest -p no:cacheprovider -s -q tests/gpu_triton/test_perf.py \
		--http 127.0.0.1:$hp --perf-models "${pres#,}" --corpus "$jpegs" 2>&1)
	local crc=$?
	echo "$ran"
	# Its verdicts, for the table's head; all it said where it gave none.
	checked=$(grep -E '^(PASS|FAIL) ' <<<"$ran") || checked=$ran

	local raw=$out/perf runs=$out/perf/runs.tsv i=0 model c rc=$crc
	if [ "${GT_RESNET:-0}" = 1 ]; then
		[[ " $forms " == *" bytes "* ]] || { echo "GT_RESNET's sweep sends BYTES elements: GT_PERF_INPUT needs bytes"; return 1; }
		echo "== perf_analyzer: the ResNet-50 pair, Sluice alone, the network alone"
		"$py" "$ROOT/tests/gpu_triton/resnet_e2e.py" perf --perf-analyzer "$pa" --ld-library-path "$ldp" \
			--grpc 127.0.0.1:$gp --http 127.0.0.1:$hp --data "$data/bytes.json" --kind "$k" --batches "$batches" \
			--concurrency "${GT_RESNET_CONC:-4 8}" --window-ms "$win" --stability "$stab" --trials "$trials" \
			--budget-s "${GT_RESNET_BUDGET:-240}" --note "${notes[*]}" --raw "$out/resnet" --md "$out/resnet_perf.md" || rc=1
	fi
	[ "${GT_PERF:-0}" = 1 ] || return $rc
	rm -rf "$raw" && mkdir -p "$raw" && : >"$runs" || return 1
	"$py" "$helper" stats --http 127.0.0.1:$hp -o "$raw/stats_0.json" || return 1
	for model in $models; do
		case $model in preprocess | ensemble) ;; *) echo "GT_PERF_MODELS takes preprocess and ensemble, not $model"; return 1 ;; esac
		for form in $forms; do
			local sfx=""
			[ $form = bytes ] && sfx=_bytes
			local name=${model}_$k$sfx consumer=""
			[ $model = ensemble ] && consumer=consumer_$k
			for b in $batches; do
				for c in $concs; do
					local tag=$name.b$b.c$c note=""
					local csv=$raw/$tag.csv log=$raw/$tag.log
					local args=(-m "$name" -i grpc -u 127.0.0.1:$gp -b "$b" --concurrency-range "$c"
						--input-data "$data/$form.json" --shared-memory system --measurement-interval "$win" -f "$csv")
					LD_LIBRARY_PATH=$ldp timeout 150 "$pa" "${args[@]}" -s "$stab" --max-trials "$trials" >"$log" 2>&1
					if [ ! -s "$csv" ] && grep -qi 'stable' "$log"; then
						# Measure again and take what comes: the table says so.
						note="not stable within $stab% in $trials windows: 3 more, as they came"
						LD_LIBRARY_PATH=$ldp timeout 150 "$pa" "${args[@]}" -s 1000 --max-trials 3 >>"$log" 2>&1
					fi
					[ -s "$csv" ] || rc=1
					i=$((i + 1))
					"$py" "$helper" stats --http 127.0.0.1:$hp -o "$raw/stats_$i.json"
					printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$form" "$b" "$c" "preprocess_$k$sfx" "$consumer" \
						"$csv" "$raw/stats_$((i - 1)).json" "$raw/stats_$i.json" "$log" "$note" >>"$runs"
					echo "$tag: $(grep -m1 -E 'Throughput|rror' "$log" | sed 's/^ *//')${note:+ ($note)}"
				done
			done
		done
	done

	local gpu; gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
	{
		echo "perf_analyzer 2.51.0 (the tritonclient wheel's), gRPC, \`--shared-memory system\` (inputs and outputs),"
		echo "against tritonserver 2.51.0 on ${gpu:-no GPU}, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')."
		echo "Models: \`preprocess_$k*\` (the ImageNet pipeline$([ "${GT_FAST_UPSAMPLING:-0}" = 1 ] && echo ' with jpeg_fancy_upsampling false'), \`KIND_$kind\`$([ $kind = GPU ] && [ -n "${GT_WORKERS:-}" ] && echo ", workers $GT_WORKERS"), count $([ $kind = GPU ] && echo "${GT_INSTANCES:-2} on each of GPUs ${GT_GPUS:-0}" || echo 1),"
		echo "max_batch_size ${GT_MAX_BATCH:-256}, $(grep -h -o 'preferred_batch_size: \[[^]]*\]' "$gt/models/preprocess_$k/config.pbtxt"));"
		echo "\`ensemble_$k*\` = it + \`consumer_$k\` (python backend, count ${GT_CONSUMERS:-1}: each image's mean of PIXELS, with torch"
		echo "through DLPack where PIXELS is, else numpy); CUDA memory pool $(( ${GT_CUDA_POOL:-8589934592} >> 20 )) MiB."
		echo "Inputs: $(printf '%s; ' "${notes[@]}" | sed 's/; $//')."
		echo "Windows of $win ms, stable within $stab%. requests/s x batch = images/s (perf_analyzer's infer/s); p50/p99 per"
		echo "request. Server batch: inferences per execution of the preprocess model; ms/batch: compute per execution"
		echo "(Triton's statistics over the whole run)."
		echo
		echo "$checked" | sed 's/^/    /'
		echo
		"$py" "$helper" table --runs "$runs" --standalone "${GT_STANDALONE:-}"
	} >"$out/gpu_perf.md"
	echo
	cat "$out/gpu_perf.md"
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
