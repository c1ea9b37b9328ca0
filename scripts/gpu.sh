#!/usr/bin/env bash
# GPU checks for Sluice on a machine that has a GPU but no Go: build everything
# here, carry one folder there, run the tests, compute-sanitizer and the benchmark.
#
#   scripts/gpu.sh build [DIR]   here, from anywhere in the repo (DIR: .bench/gpu)
#       the sluice CLI and the GPU packages' test binaries (cgo, static, xz-compressed:
#       run unpacks them)
#       libturbojpeg), the whole photo corpus, DIR/manifest.txt.
#       Exit 1: the CLI did not build or needs a shared library it must not,
#       or a part of the corpus is missing or did not fit (named);
#       exit 2: only some test package did not build (the rest is usable).
#   scripts/gpu.sh run [DIR]     there, from the repo root (the repo's working tree
#       with DIR beside it). With the device tool: carry [".bench/gpu"], command
#       `scripts/gpu.sh run`. Writes tests.log, sanitizer.log, bench.md and
#       bench.json to $OUT (DIR/out when OUT is unset); prints a PASS/FAIL
#       summary last; exits non-zero when a test or sanitizer step failed.
#       Environment: GPUSAN_RUN (-test.run regex under compute-sanitizer; default:
#       every kernels test, the executor's quick ones),
#       SKIP_BENCH=1, BENCH_SECONDS (3), BENCH_BATCHES (16,64,256), GPU (0),
#       BENCH_INSTANCES (1), SWEEP ("1:1 4:0.5": instances:hw-share settings of
#       Sluice alone on the whole mix before the bench; SWEEP_BATCH 64),
#       RUN_BUDGET (seconds for the whole run, 530), PYTHON (python3), RACE_RUN (the
#       tests executor_gpu_race.test, built with -race, runs: those that share an
#       executor or a service between goroutines).
#       Build: GPU_PKGS (the packages to build tests of, space-separated),
#       SLUICE_CORPUS (the corpus, ../shared/corpus), CARRY_LIMIT_MB (60).
#
# To rerun everything: `scripts/gpu.sh build` here, then `scripts/gpu.sh run`
# on the GPU machine (device tool: carry .bench/gpu).

set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

# The packages whose tests need a GPU, and the test binary each becomes.
# GPU_PKGS (space-separated) replaces the list.
read -r -a PKGS <<<"${GPU_PKGS:-./kernels ./kernels/cuda ./kernels/nvjpeg ./executor/gpu ./backend}"
binname() { local p=${1#./}; echo "${p//\//_}.test"; }

# What travels beside the working tree must leave room for it under the
# device tool's 64 MiB (README: the tree, shared/ and carried paths together).
CARRY_LIMIT_MB=${CARRY_LIMIT_MB:-60}

. "$ROOT/scripts/lib.sh"

build() {
	local dir=${1:-.bench/gpu} status=0 notes=() tests=()
	mkdir -p "$dir" || return 1
	dir=$(cd "$dir" && pwd)
	case $dir in "$ROOT" | / | "$HOME") echo "refusing to build into $dir" >&2; return 1 ;; esac
	# Only what this script writes, so a DIR holding other files keeps them.
	rm -rf "$dir/sluice" "$dir"/*.test "$dir"/*.xz "$dir/corpus" "$dir/manifest.txt" "$dir/build.log" "$dir/out"

	make -s test-deps pic-libs || { echo "make test-deps pic-libs failed (the image libraries, libjpeg-dev)" >&2; return 1; }
	# -s -w: no symbol table or DWARF, about half the size; Go's own
	# tracebacks still work (they use the pclntab).
	local ldflags='-s -w'
	echo "== go build ./cmd/sluice"
	if ! CGO_ENABLED=1 go build -ldflags="$ldflags" -o "$dir/sluice" ./cmd/sluice 2>&1 | tee -a "$dir/build.log"; then
		echo "FAIL: the sluice CLI did not build" >&2
		status=1
	fi

	for pkg in "${PKGS[@]}"; do
		local name
		name=$(binname "$pkg")
		if [ ! -d "$pkg" ] || ! ls "$pkg"/*.go >/dev/null 2>&1; then
			notes+=("skip $pkg: no such package yet")
			continue
		fi
		if ! ls "$pkg"/*_test.go >/dev/null 2>&1; then
			notes+=("skip $pkg: no test files")
			continue
		fi
		echo "== go test -c $pkg"
		if CGO_ENABLED=1 go test -c -ldflags="$ldflags" -o "$dir/$name" "$pkg" 2>&1 | tee -a "$dir/build.log" && [ -x "$dir/$name" ]; then
			tests+=("test $name $pkg")
		else
			notes+=("FAIL $pkg: did not compile (see $dir/build.log)")
			[ $status -eq 0 ] && status=2
		fi
	done
	# The GPU executor's tests once more under the race detector: run takes
	# only RACE_RUN's tests from it (the whole suite would take ten times as
	# long), those with goroutines sharing an executor or a service.
	if [ -d executor/gpu ]; then
		echo "== go test -race -c ./executor/gpu"
		if CGO_ENABLED=1 go test -race -c -ldflags="$ldflags" -o "$dir/executor_gpu_race.test" ./executor/gpu 2>&1 | tee -a "$dir/build.log" &&
			[ -x "$dir/executor_gpu_race.test" ]; then
			tests+=("test executor_gpu_race.test ./executor/gpu")
		else
			notes+=("FAIL ./executor/gpu: did not compile with -race (see $dir/build.log)")
			[ $status -eq 0 ] && status=2
		fi
	fi

	# The binaries travel xz-compressed (a fifth of their size: with the
	# whole corpus they would not fit the carry limit); run unpacks them.
	local f
	for f in "$dir/sluice" "$dir"/*.test; do
		[ -f "$f" ] && { xz -T0 -6 -f "$f" || { notes+=("FAIL xz $f"); status=1; }; }
	done

	# The corpus: MANIFEST.tsv (the tests look for it) and the bench photos
	# first, then the other parts while the total fits. The tests need all
	# of it (broken/ for the per-sample errors, png/, edge/ and the odd
	# JPEGs for the CPU route): a part left out fails the build, named.
	local src
	src=$(corpus_dir)
	local req=(MANIFEST.tsv README.md jpeg/derived jpeg/native)
	local opt=(broken png edge jpeg/tiny jpeg/exif jpeg/large)
	mkdir -p "$dir/corpus"
	for p in "${req[@]}"; do
		if [ -e "$src/$p" ]; then
			mkdir -p "$dir/corpus/$(dirname "$p")"
			cp -r "$src/$p" "$dir/corpus/$p"
		else
			notes+=("FAIL corpus: $src/$p missing")
			status=1
		fi
	done
	# The working tree travels too, DIR aside (counted below, once, when
	# it lies inside the tree without being ignored).
	local tree limit rel=${dir#"$ROOT"/} except=()
	[ "$rel" != "$dir" ] && except=(":(exclude)$rel")
	tree=$(git ls-files -co --exclude-standard -z -- . "${except[@]}" | du --files0-from=- -cb 2>/dev/null | tail -1 | cut -f1)
	limit=$((CARRY_LIMIT_MB * 1048576 - tree))
	for p in "${opt[@]}"; do
		[ -e "$src/$p" ] || { notes+=("FAIL corpus: no $p in $src"); status=1; continue; }
		local have add
		have=$(size "$dir")
		add=$(size "$src/$p")
		if [ $((have + add)) -le $limit ]; then
			mkdir -p "$dir/corpus/$(dirname "$p")"
			cp -r "$src/$p" "$dir/corpus/$p"
		else
			notes+=("FAIL corpus: left out $p ($(mb "$add")): over the ${CARRY_LIMIT_MB} MiB carry limit")
			status=1
		fi
	done

	# The CLI links libturbojpeg statically: the GPU machine has none.
	local ldd_bad="" ldd_all=""
	if [ -f "$dir/sluice.xz" ]; then
		local tmpcli
		tmpcli=$(mktemp)
		xz -dc "$dir/sluice.xz" >"$tmpcli" && chmod +x "$tmpcli"
		ldd_all=$(ldd "$tmpcli" 2>&1 | awk '{print $1}' | tr '\n' ' ')
		ldd_bad=$(ldd "$tmpcli" | grep -Ev 'linux-vdso|ld-linux|/ld64|lib(c|m|pthread|dl|resolv|rt)\.so' || true)
		rm -f "$tmpcli"
		if [ -n "$ldd_bad" ]; then
			notes+=("FAIL ldd: sluice needs more than libc/libm/libpthread/libdl: $(echo "$ldd_bad" | awk '{print $1}' | tr '\n' ' ')")
			status=1
		fi
	fi

	{
		echo "# scripts/gpu.sh build, $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname)"
		echo "commit $(git rev-parse HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
		echo "$(go version); $(ldd --version | head -1)"
		echo "ldd sluice: ${ldd_all:-not built}"
		echo "tree $(mb "$tree") + carried $(mb "$(size "$dir")") (limit ${CARRY_LIMIT_MB} MiB together)"
		[ -f "$dir/sluice.xz" ] && echo "cli sluice $(mb "$(size "$dir/sluice.xz")") (xz)"
		for t in "${tests[@]}"; do
			set -- $t
			echo "$t $(mb "$(size "$dir/$2.xz")") (xz)"
		done
		for p in "${req[@]}" "${opt[@]}"; do
			[ -e "$dir/corpus/$p" ] && echo "corpus $p $(mb "$(size "$dir/corpus/$p")")"
		done
		for n in "${notes[@]}"; do echo "note $n"; done
	} >"$dir/manifest.txt"
	echo
	cat "$dir/manifest.txt"
	case $status in
	0) echo "OK: ${dir#"$ROOT"/} ready; on the GPU machine: scripts/gpu.sh run" ;;
	2) echo "PARTIAL: some test packages did not compile (above); the rest is ready" ;;
	*) echo "FAIL: see above" ;;
	esac
	return $status
}

run() {
	local dir=${1:-.bench/gpu}
	dir=$(cd "$dir" 2>/dev/null && pwd) || { echo "no $1: run scripts/gpu.sh build first (and carry it)" >&2; return 1; }
	local out=${OUT:-$dir/out}
	local f
	for f in "$dir"/*.xz; do
		[ -e "$f" ] && xz -d -f "$f"
	done
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	export SLUICE_CORPUS=$dir/corpus SLUICE_REQUIRE_CORPUS=1 PYTHONUNBUFFERED=1
	local budget=${RUN_BUDGET:-530} start=$SECONDS failed=0 summary=()
	local bench_reserve=0
	[ "${SKIP_BENCH:-0}" = 1 ] || bench_reserve=200
	# A step's limit: its own, cut so that what follows still has its reserve.
	limit() {
		local want=$1 reserve=$2 left=$((budget - (SECONDS - start)))
		local t=$((left - reserve))
		[ $t -gt "$want" ] && t=$want
		[ $t -lt 15 ] && t=15
		echo $t
	}
	# Package directory of a test binary, from the manifest (tests read
	# testdata relative to it, as under go test).
	pkgdir() { awk -v n="$1" '$1 == "test" && $2 == n { print $3 }' "$dir/manifest.txt"; }
	# One binary's part of a log: from its "===== NAME " line to the next such line.
	section() { awk -v n="===== $1 " 'index($0, n) == 1 { on = !on } on' "$2"; }

	echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(hostname)"
	nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used --format=csv,noheader 2>&1 || echo "nvidia-smi failed"
	head -3 "$dir/manifest.txt" 2>/dev/null

	: >"$out/tests.log"
	local t name pkg rc t0
	for t in "$dir"/*.test; do
		[ -e "$t" ] || { summary+=("FAIL tests: no test binaries in $dir"); failed=1; break; }
		name=$(basename "$t")
		pkg=$(pkgdir "$name")
		local secs
		secs=$(limit 200 "$bench_reserve")
		t0=$SECONDS
		{
			echo "===== $name (${pkg:-?}) timeout ${secs}s"
			local only=()
			case $name in *_race.test) only=(-test.run "${RACE_RUN:-GPUConcurrentRuns|GPUSharedService|GPUIdleSweep}") ;; esac
			(cd "${pkg:-.}" && timeout -k 10 "$secs" "$t" -test.v -test.count=1 -test.timeout=$((secs - 5))s "${only[@]}")
		} >>"$out/tests.log" 2>&1
		rc=$?
		echo "===== $name exit $rc" >>"$out/tests.log"
		local part counts
		part=$(section "$name" "$out/tests.log")
		counts="$(grep -c -- '^--- PASS' <<<"$part") pass, $(grep -c -- '^--- SKIP' <<<"$part") skip, $(grep -c -- '^--- FAIL' <<<"$part") fail"
		if [ $rc -eq 0 ]; then
			summary+=("PASS tests $name ($counts, $((SECONDS - t0))s)")
		else
			failed=1
			[ $rc -eq 124 ] && counts+=", TIMED OUT"
			summary+=("FAIL tests $name (exit $rc; $counts, $((SECONDS - t0))s)")
			echo "---- $name failures:"
			grep -E -- '^\s*--- FAIL|^panic:|^fatal error|^SIGSEGV|^FAIL|_test\.go:[0-9]+:' <<<"$part" | head -40 ||
				tail -8 <<<"$part"
		fi
	done

	: >"$out/sanitizer.log"
	local re sb
	if ! command -v compute-sanitizer >/dev/null; then
		summary+=("SKIP sanitizer: compute-sanitizer not on PATH")
	else
		for sb in kernels.test executor_gpu.test; do
			t=$dir/$sb
			[ -x "$t" ] || { summary+=("SKIP sanitizer $sb: not built"); continue; }
			pkg=$(pkgdir "$sb")
			local secs
			secs=$(limit 150 "$bench_reserve")
			t0=$SECONDS
			# Every kernel test; of the executor's, the quick ones (the
			# corpus comparison is minutes under the tool).
			re=${GPUSAN_RUN:-.}
			[ "$sb" = executor_gpu.test ] && re=${GPUSAN_RUN:-'GPUDestinations|GPUMemoryCap|GPUDecodedInput'}
			{
				echo "===== $sb -test.run '$re' timeout ${secs}s"
				(cd "${pkg:-.}" && timeout -k 10 "$secs" compute-sanitizer --tool memcheck --error-exitcode 9 \
					"$t" -test.run "$re" -test.count=1 -test.v -test.timeout=$((secs - 5))s)
			} >>"$out/sanitizer.log" 2>&1
			rc=$?
			echo "===== $sb exit $rc" >>"$out/sanitizer.log"
			local part errs
			part=$(section "$sb" "$out/sanitizer.log")
			errs=$(grep -Eo 'ERROR SUMMARY: [0-9]+ error' <<<"$part" | tail -1)
			if [ $rc -eq 0 ]; then
				summary+=("PASS sanitizer $sb (${errs:-no summary}, $((SECONDS - t0))s)")
			elif grep -q 'Device not supported' <<<"$part"; then
				# gVisor machines: the tool refuses the device (device README).
				summary+=("UNSUPPORTED sanitizer $sb: compute-sanitizer refused the device (gVisor runtime?)")
			else
				failed=1
				summary+=("FAIL sanitizer $sb (exit $rc$([ $rc -eq 9 ] && echo ': memcheck errors'); ${errs:-no summary})")
				echo "---- $sb sanitizer:"
				grep -E '^========= (Invalid|Program hit|ERROR|  at )|--- FAIL|^panic:' <<<"$part" | head -30 ||
					tail -6 <<<"$part"
			fi
		done
	fi

	if [ "${SKIP_BENCH:-0}" = 1 ]; then
		summary+=("SKIP bench: SKIP_BENCH=1")
	else
		local secs blog
		if [ -n "${SWEEP:-}" ]; then
			# Sluice alone over settings (SWEEP="instances:share ..."), whole
			# corpus mix, batch 64: which instance count and hardware share.
			local kd cfg
			kd=$(mktemp -d)
			ln -s "$(realpath "$dir/corpus/jpeg/derived")"/*.jpg "$(realpath "$dir/corpus/jpeg/native")"/*.jpg "$kd"/ 2>/dev/null
			for cfg in $SWEEP; do
				echo "== sweep instances ${cfg%%:*} hw-share ${cfg##*:}"
				timeout 60 "$dir/sluice" bench --json --gpu "${GPU:-0}" --batch "${SWEEP_BATCH:-64}" --duration 2s \
					--pipeline model_repository/preprocess_imagenet/1/pipeline.pbtxt \
					--instances "${cfg%%:*}" --hw-share "${cfg##*:}" "$kd"
			done 2>&1 | tee "$out/sweep.log"
		fi
		secs=$(limit 300 0)
		blog=$(mktemp)
		t0=$SECONDS
		echo "== bench (timeout ${secs}s)"
		timeout -k 10 "$secs" "${PYTHON:-python3}" -m bench.gpu --sluice "$dir/sluice" --corpus "$dir/corpus" \
			--pipeline model_repository/preprocess_imagenet/1/pipeline.pbtxt \
			--batches "${BENCH_BATCHES:-16,64,256}" --seconds "${BENCH_SECONDS:-3}" --gpu "${GPU:-0}" \
			--instances "${BENCH_INSTANCES:-1}" --json-out "$out/bench.json" --md-out "$out/bench.md" >"$blog" 2>&1
		rc=$?
		cat "$blog"
		if [ $rc -eq 0 ] && [ -s "$out/bench.md" ]; then
			if grep -q 'FAILED' "$out/bench.md"; then
				summary+=("PASS bench ($((SECONDS - t0))s), with FAILED cells: see bench.md")
			else
				summary+=("PASS bench ($((SECONDS - t0))s)")
			fi
		else
			# Keep its output: bench.md is where a reader looks.
			{ echo "bench.gpu exit $rc"; echo '```'; cat "$blog"; echo '```'; } >>"$out/bench.md"
			summary+=("FAIL bench (exit $rc$([ $rc -eq 124 ] && echo ', timed out'))")
		fi
		rm -f "$blog"
	fi

	echo
	echo "== summary ($((SECONDS - start))s; logs in ${out})"
	printf '%s\n' "${summary[@]}"
	return $failed
}

case ${1:-} in
build) shift; build "$@" ;;
run) shift; run "$@" ;;
*)
	sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
	exit 64
	;;
esac
