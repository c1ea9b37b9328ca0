#!/usr/bin/env bash
# perf_analyzer over gRPC (and HTTP) against Sluice models served by a real
# Triton, with real JPEGs, and a Markdown table of the results (for docs/perf.md).
#
#   bench/perf_triton.sh [OPTIONS]
#
#   --work-dir DIR      use the server scripts/triton.sh started there (e.g. build/triton after
#                       `make run-bg`); without it, a server is started on free ports for the run
#                       (model_repository/, build/backends) and stopped at the end
#   --models "A B"      models to measure (preprocess_imagenet ensemble_imagenet)
#   --concurrency "N.." concurrency levels (1 2 4 8)
#   --protocols "P.."   grpc and/or http (grpc)
#   --batch "B.."       images per request, perf_analyzer -b (1). With B > 1 the requests are
#                       [B, N] UINT8 tensors, so the B images of a request must have the same
#                       byte size: the input data then holds every photo zero-padded to the
#                       largest's size (sluice perf-data --pad)
#   --quick             a short sweep: concurrency 1 and 4, 2000 ms windows
#   --window-ms N       perf_analyzer measurement window (5000)
#   --stability N       perf_analyzer --stability-percentage (10); a level that does not settle
#                       is measured again at 50 and marked in the table
#   --dirs "D.."        corpus folders the images come from (jpeg/derived jpeg/native)
#   --out DIR           CSVs, logs, the input data and perf.md (build/perf)
#   --venv DIR          tritonserver/tritonclient venv (.venv-triton)
#   --sluice FILE       the sluice CLI, which writes the input data (build/sluice; $SLUICE_BIN)
#
# Needs `make backend build` (the server loads build/backends/sluice) and the photo
# corpus ($SLUICE_CORPUS, default ../shared/corpus). The table goes to stdout
# and to <out>/perf.md; perf_analyzer's own output to
# <out>/<model>.<protocol>.b<B>.c<N>.log. Each added protocol or batch size
# repeats the whole concurrency sweep: e.g. --protocols "grpc http" --batch "1 4"
# takes four times the default run (about 4 x 8 levels x 3 windows).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK_DIR=""
MODELS="preprocess_imagenet ensemble_imagenet"
CONCURRENCY="1 2 4 8"
PROTOCOLS="grpc"
BATCHES="1"
WINDOW_MS=5000
STABILITY=10
DIRS="jpeg/derived jpeg/native"
OUT=$REPO/build/perf
VENV=${TRITON_VENV:-$REPO/.venv-triton}
SLUICE=${SLUICE_BIN:-$REPO/build/sluice}

. "$REPO/scripts/lib.sh"
CORPUS=$(corpus_dir)

while [ $# -gt 0 ]; do
  case "$1" in
    --work-dir) WORK_DIR=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --protocols) PROTOCOLS=$2; shift 2 ;;
    --batch) BATCHES=$2; shift 2 ;;
    --quick) CONCURRENCY="1 4"; WINDOW_MS=2000; shift ;;
    --window-ms) WINDOW_MS=$2; shift 2 ;;
    --stability) STABILITY=$2; shift 2 ;;
    --dirs) DIRS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --venv) VENV=$2; shift 2 ;;
    --sluice) SLUICE=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ -x "$SLUICE" ] || die "no sluice CLI at $SLUICE: make build"

# ---------------------------------------------------------------- the server
if [ -n "$WORK_DIR" ]; then
  [ -f "$WORK_DIR/triton.env" ] || die "no server recorded in $WORK_DIR (scripts/triton.sh writes triton.env)"
  # shellcheck disable=SC1091
  . "$WORK_DIR/triton.env"
  kill -0 "$TRITON_PID" 2>/dev/null || die "the server recorded in $WORK_DIR (pid $TRITON_PID) is not running"
  VENV=$TRITON_VENV
else
  [ -e "$REPO/build/backends/sluice/libtriton_sluice.so" ] || die "no build/backends/sluice/libtriton_sluice.so: make backend"
  WORK_DIR=$OUT/triton
  log "starting a server for the run (work dir $WORK_DIR)"
  vars=$("$REPO/scripts/triton.sh" --venv "$VENV" --work-dir "$WORK_DIR" \
           --model-repo "$REPO/model_repository" --backend-dir "$REPO/build/backends") ||
    die "the server did not start"
  eval "$vars"
  trap '"$REPO/scripts/triton.sh" --stop --work-dir "$WORK_DIR"' EXIT
fi
PA=$TRITON_PERF_ANALYZER
PY=$VENV/bin/python
for proto in $PROTOCOLS; do
  case "$proto" in grpc|http) ;; *) die "unknown protocol $proto (grpc, http)" ;; esac
done
for b in $BATCHES; do
  [[ "$b" =~ ^[1-9][0-9]*$ ]] || die "bad batch size $b"
done
url_of() { if [ "$1" = grpc ]; then echo "$TRITON_HOST:$TRITON_GRPC_PORT"; else echo "$TRITON_HOST:$TRITON_HTTP_PORT"; fi; }

# ---------------------------------------------------------------- input data
# jpegs.json: the files as they are (-b 1). jpegs_padded.json, for -b > 1:
# every file zero-padded to the largest's size, because perf_analyzer batches
# only entries of one shape (cmd/sluice/perfdata.go says why).
make_data() { # make_data FILE [--pad]: writes FILE, sets DATA_NOTE
  # shellcheck disable=SC2086
  "$SLUICE" perf-data --corpus "$CORPUS" -o "$1" --ext .jpg,.jpeg "${@:2}" $DIRS > "$OUT/perf_data.log" 2>&1 ||
    { cat "$OUT/perf_data.log" >&2; die "sluice perf-data failed"; }
  DATA_NOTE=$(grep ' -> ' "$OUT/perf_data.log" | sed 's/ -> .*//')
  log "input data: $DATA_NOTE"
}
DATA=$OUT/jpegs.json DATA_PADDED=$OUT/jpegs_padded.json
NOTES=()
if [[ " $BATCHES " == *" 1 "* ]]; then
  make_data "$DATA"
  NOTES+=("\`-b 1\`: $DATA_NOTE (whole files, cycled)")
fi
if echo "$BATCHES" | tr ' ' '\n' | grep -qvx 1; then
  make_data "$DATA_PADDED" --pad
  NOTES+=("\`-b\` > 1: $DATA_NOTE (a request's B images are B consecutive files: perf_analyzer batches only tensors of one shape)")
fi

# ---------------------------------------------------------------- measure
# One perf_analyzer run per model, protocol, batch size and level: a level
# that fails to settle does not lose the others.
ROWS=()
for model in $MODELS; do
 for proto in $PROTOCOLS; do
  for b in $BATCHES; do
   data=$DATA
   [ "$b" = 1 ] || data=$DATA_PADDED
   for c in $CONCURRENCY; do
    name=$model.$proto.b$b.c$c
    csv=$OUT/$name.csv plog=$OUT/$name.log note=""
    rm -f "$csv"
    args=(-m "$model" -i "$proto" -u "$(url_of "$proto")" -b "$b" --input-data "$data" --concurrency-range "$c"
          --measurement-interval "$WINDOW_MS" -f "$csv")
    log "$model, $proto, batch $b, concurrency $c"
    if ! "$PA" "${args[@]}" --stability-percentage "$STABILITY" > "$plog" 2>&1; then
      if grep -qi "stable" "$plog"; then
        log "  not stable within ${STABILITY}%: measuring again at 50%"
        note="settled only within 50%"
        "$PA" "${args[@]}" --stability-percentage 50 > "$plog" 2>&1 || true
      fi
    fi
    if [ ! -s "$csv" ]; then
      log "  failed: $(grep -iv '^ *$' "$plog" | tail -1)"
      ROWS+=("| \`$model\` | $proto | $b | $c | failed | | | | | see $(basename "$plog") |")
      continue
    fi
    # CSV: Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,
    #      Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,
    #      p50 latency,p90 latency,p95 latency,p99 latency (microseconds)
    row=$("$PY" - "$csv" "$model" "$proto" "$b" "$c" "$note" <<'EOF'
import csv, sys
path, model, proto, b, c, note = sys.argv[1:]
with open(path) as f:
    r = list(csv.DictReader(f))[0]
ms = lambda k: f"{float(r[k]) / 1000:.1f}"
print(f"| `{model}` | {proto} | {b} | {c} | {float(r['Inferences/Second']):.0f} | {ms('p50 latency')} | {ms('p99 latency')} "
      f"| {ms('Server Queue')} | {ms('Server Compute Input')} / {ms('Server Compute Infer')} / {ms('Server Compute Output')} | {note} |")
EOF
)
    ROWS+=("$row")
    log "  $row"
   done
  done
 done
done

# ---------------------------------------------------------------- table
{
  echo "perf_analyzer (tritonclient 2.51.0), $(echo "$PROTOCOLS" | sed 's/grpc/gRPC/; s/http/HTTP/; s/ /, /g'),"
  echo "\`-b\` images per request (${BATCHES// /, }), synchronous clients; tritonserver 2.51.0"
  echo "CPU-only, \`instance_group [{kind: KIND_CPU, count: 1}]\`. Images: $(printf '%s; ' "${NOTES[@]}" | sed 's/; $//')."
  echo "Measured $(date -u +%Y-%m-%d) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'));"
  echo "${WINDOW_MS} ms windows, stable within ${STABILITY}%. infer/s counts images (requests x batch);"
  echo "latencies in ms per request, client side; server times are per-request averages."
  echo
  echo "| model | protocol | batch | concurrency | infer/s | p50 | p99 | server queue | server compute input / infer / output | note |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---|---|"
  printf '%s\n' "${ROWS[@]}"
} > "$OUT/perf.md"
echo
cat "$OUT/perf.md"
log "table: $OUT/perf.md; CSVs and perf_analyzer logs: $OUT"
