#!/usr/bin/env bash
# Proves that the tests judging the operators can fail: plants one small
# defect at a time (a resampling coefficient, a rounding step, a pass order,
# a channel order, a crop or letterbox offset) and checks that both judges
# reject it: go test ./ops (against the Pillow reference written in
# ops/pillow_ref_test.go) and the accuracy tests (tests/test_accuracy.py:
# the sluice CLI against Pillow, OpenCV and NumPy on the corpus photos).
#
#   scripts/mutation_check.sh [PYTHON]   PYTHON: the venv's python with
#                                        pytest, Pillow, OpenCV (.venv/bin/python)
#
# The defects go in through go build's -overlay, so the working tree is never
# touched. The unchanged code runs first and must pass. Needs the corpus
# ($SLUICE_CORPUS, default ../shared/corpus): without it the check is
# skipped, or fails where SLUICE_REQUIRE_CORPUS=1. Prints a table of each
# defect and the first test that failed on it; exits 1 when a defect
# survives. About 4 minutes of CPU time (11 builds and runs of both judges).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
. "$ROOT/scripts/lib.sh"
py=${1:-.venv/bin/python}
SLUICE_CORPUS=$(corpus_dir)
export SLUICE_CORPUS
if [ ! -e "$SLUICE_CORPUS/MANIFEST.tsv" ]; then
	if [ "${SLUICE_REQUIRE_CORPUS:-}" = 1 ]; then
		echo "mutation check FAILED: no photo corpus at $SLUICE_CORPUS (SLUICE_REQUIRE_CORPUS=1)" >&2
		exit 1
	fi
	echo "mutation check skipped: no photo corpus at $SLUICE_CORPUS (set SLUICE_CORPUS)"
	exit 0
fi
export SLUICE_REQUIRE_CORPUS=1

# name~file~sed expression (on that file)~the defect
mutants=(
	"cubic-a~ops/resample.go~s#const a = -0.5\$#const a = -0.55#~bicubic coefficient -0.55 instead of -0.5"
	"weight-rounding~ops/resample.go~s#int32(0.5 + float64(x\*(1<<rsBits)))#int32(float64(x*(1<<rsBits)))#~resampling weights truncated, not rounded"
	"pass-order~ops/resample.go~s#return sh-dh > 2\*(sw-dw) \&\& dh < sh \&\& !f.torch()\$#return false#~always horizontal pass first (Pillow 13 goes vertical first on tall shrinks)"
	"antialias~ops/resample.go~s#if fs < 1 || (!aa \&\& f != interpArea) {#if fs < 1 {#~antialias=false ignored"
	"nearest-start~ops/resample.go~s#x := float64(t.lo) + a\*0.5\$#x := float64(t.lo) + a*0.49#~nearest samples just left of the pixel centre"
	"decode-channels~ops/decode.go~s#codec.Options{Color: o.color,#codec.Options{Color: [...]Color{RGB: BGR, BGR: RGB, Gray: Gray, RGBA: BGRA, BGRA: RGBA}[o.color],#~decode RGB and BGR swapped"
	"normalize-channels~ops/normalize.go~s#p\[i\] = i\$#p[i] = len(p) - 1 - i#~normalize reverses the channels it should keep"
	"normalize-rounding~ops/normalize.go~s#math.RoundToEven(f)#math.Floor(f)#~UINT8 output truncated, not rounded"
	"crop-offset~ops/crop.go~s#return roundHalfEven(float64(in-out) / 2)#return roundHalfEven(float64(in-out)/2 + 0.5)#~centre crop half a pixel further down and right"
	"letterbox-offset~ops/letterbox.go~s#/2 - 0.1)#/2 + 0.1)#g~letterbox's odd padding pixel on the top and left"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run NAME OVERLAY: builds the CLI with the overlay and runs both judges;
# sets go_first and py_first to the first failing test ("" when all pass).
run() {
	local name=$1 overlay=$2 out
	go_first="" py_first=""
	if ! go build ${overlay:+-overlay "$overlay"} -o "$work/sluice-$name" ./cmd/sluice 2>"$work/build.log"; then
		cat "$work/build.log" >&2
		return 1
	fi
	out=$(go test ${overlay:+-overlay "$overlay"} -count=1 -failfast ./ops 2>&1)
	go_first=$(grep -m1 -oE -- '--- FAIL: [^ ]+' <<<"$out" | cut -d' ' -f3)
	[ -z "$go_first" ] && ! grep -q '^ok' <<<"$out" && go_first="(go test: $(tail -1 <<<"$out"))"
	out=$(SLUICE_BIN=$work/sluice-$name "$py" -m pytest -x -q -p no:cacheprovider tests/test_accuracy.py 2>&1)
	py_first=$(grep -m1 -oE '^(FAILED|ERROR) [^ ]+' <<<"$out" | cut -d' ' -f2)
	[ -z "$py_first" ] && ! grep -qE '^[0-9]+ passed' <<<"$out" && py_first="(pytest: $(tail -1 <<<"$out"))"
	return 0
}

t0=$SECONDS
echo "== unchanged code"
if ! run base ""; then
	echo "FAIL: the CLI does not build" >&2
	exit 1
fi
if [ -n "$go_first$py_first" ]; then
	echo "FAIL: the unchanged code fails ${go_first:+$go_first }${py_first}: fix that first" >&2
	exit 1
fi

status=0
rows=()
for m in "${mutants[@]}"; do
	IFS='~' read -r name file expr what <<<"$m"
	sed "$expr" "$file" >"$work/$name.go"
	if cmp -s "$file" "$work/$name.go"; then
		rows+=("| $name | $what | PATTERN GONE | - |")
		status=1
		continue
	fi
	printf '{"Replace":{"%s":"%s"}}' "$ROOT/$file" "$work/$name.go" >"$work/$name.json"
	echo "== $name: $what"
	if ! run "$name" "$work/$name.json"; then
		rows+=("| $name | $what | DOES NOT BUILD | - |")
		status=1
		continue
	fi
	[ -n "$go_first" ] && [ -n "$py_first" ] || status=1
	rows+=("| $name | $what | ${go_first:-SURVIVED} | ${py_first:-SURVIVED} |")
done

echo
echo "| mutant | defect | first failure, go test ./ops | first failure, tests/test_accuracy.py |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
if [ $status -eq 0 ]; then
	echo "mutation check: all ${#mutants[@]} defects caught by both judges ($((SECONDS - t0))s)"
else
	echo "mutation check FAILED: a defect survived or did not apply ($((SECONDS - t0))s)"
fi
exit $status
