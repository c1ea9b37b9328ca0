#!/usr/bin/env bash
# Real NVIDIA Triton Inference Server 2.51.0 for Sluice, CPU only: the
# tritonserver binary bundled in the nvidia-pytriton 0.7.0 wheel, installed
# into a Python venv. Used by `make run`, `make test-triton` (the tests'
# fixture) and bench/perf_triton.sh.
#
#   scripts/triton.sh [OPTIONS]                 start in the background, wait until ready, print
#                                               TRITON_* shell variables on stdout (eval-able)
#   scripts/triton.sh --foreground [OPTIONS]    start, print how to call it, stay in the foreground;
#                                               Ctrl-C (or SIGTERM) stops the server
#   scripts/triton.sh --stop [--work-dir DIR]   stop the server started with that work dir
#   scripts/triton.sh --howto [--work-dir DIR]  print how to call the server running there
#   scripts/triton.sh --install-only            only make sure the venv and the example models'
#                                               ONNX files are in place
#
# OPTIONS
#   --venv DIR          venv holding tritonserver and tritonclient (.venv-triton; $TRITON_VENV)
#   --requirements F    what to install into it (tests/triton/requirements.txt)
#   --model-repo DIR    model repository (model_repository)
#   --backend-dir DIR   every entry is linked into the server's backend directory next to the
#                       python backend (build/backends: holds sluice/libtriton_sluice.so)
#   --work-dir DIR      backend directory, log, pid and env file, perf_analyzer wrapper (build/triton)
#   --host ADDR         address to listen on (127.0.0.1)
#   --http-port N  --grpc-port N  --metrics-port N      0 (the default) picks a free port
#   --timeout SECS      how long to wait for readiness (300)
#   --explicit          --model-control-mode=explicit (load models with --load-model or the API)
#   --load-model NAME   (repeatable) with --explicit, load NAME at startup
#   --log-verbose N     tritonserver --log-verbose
#   -- ARGS...          passed to tritonserver as they are
#
# Output: stdout gets only the shell variables TRITON_PID, TRITON_HTTP_PORT, TRITON_GRPC_PORT,
# TRITON_METRICS_PORT, TRITON_HOST, TRITON_LOG, TRITON_WORK_DIR, TRITON_VENV, TRITON_PERF_ANALYZER
# (also written to <work-dir>/triton.env); progress and errors go to stderr.
#
# Every mode but --stop and --howto first writes model_repository's ONNX files (the untrained
# networks of the example classifier, classifier_crops and detector: scripts/onnx_models.py)
# where they are missing or come from another version of that script; the venv's python writes
# them (onnx, numpy) and the python backend runs them (onnxruntime).
#
# Requirements: python3 with venv (Debian: python3 python3-venv). The python backend stub links
# libpython3.X.so.1.0; when no such library is found, Debian's libpython3.X is installed with
# apt-get (needs root).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}
VENV=${TRITON_VENV:-$REPO/.venv-triton}
REQUIREMENTS=$REPO/tests/triton/requirements.txt
MODEL_REPO=$REPO/model_repository
BACKEND_DIR=$REPO/build/backends
WORK_DIR=$REPO/build/triton
HOST=127.0.0.1
HTTP_PORT=0 GRPC_PORT=0 METRICS_PORT=0
TIMEOUT=300
EXPLICIT=0 LOG_VERBOSE=0
MODE=start
LOAD_MODELS=() EXTRA=()

. "$REPO/scripts/lib.sh"

while [ $# -gt 0 ]; do
  case "$1" in
    --venv) VENV=$2; shift 2 ;;
    --requirements) REQUIREMENTS=$2; shift 2 ;;
    --model-repo) MODEL_REPO=$2; shift 2 ;;
    --backend-dir) BACKEND_DIR=$2; shift 2 ;;
    --work-dir) WORK_DIR=$2; shift 2 ;;
    --host) HOST=$2; shift 2 ;;
    --http-port) HTTP_PORT=$2; shift 2 ;;
    --grpc-port) GRPC_PORT=$2; shift 2 ;;
    --metrics-port) METRICS_PORT=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --explicit) EXPLICIT=1; shift ;;
    --load-model) LOAD_MODELS+=("$2"); shift 2 ;;
    --log-verbose) LOG_VERBOSE=$2; shift 2 ;;
    --foreground) MODE=foreground; shift ;;
    --stop) MODE=stop; shift ;;
    --howto) MODE=howto; shift ;;
    --install-only) MODE=install; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
for p in "$HTTP_PORT" "$GRPC_PORT" "$METRICS_PORT" "$TIMEOUT"; do
  [[ "$p" =~ ^[0-9]+$ ]] || die "not a number: $p"
done

mkdir -p "$WORK_DIR"
WORK_DIR=$(cd "$WORK_DIR" && pwd)
ENV_FILE=$WORK_DIR/triton.env
PID_FILE=$WORK_DIR/tritonserver.pid

# ---------------------------------------------------------------- stop
stop_server() {
  [ -f "$PID_FILE" ] || { log "no server recorded in $WORK_DIR"; return 0; }
  local pid; pid=$(cat "$PID_FILE")
  # Only a live process that is a tritonserver: the pid may have been reused.
  if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
     tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q tritonserver; then
    kill -TERM "$pid" 2>/dev/null || true
    # --exit-timeout-secs=10 bounds the server's own wait for in-flight requests.
    for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid still running after 20s: SIGKILL to its process group"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped tritonserver (pid $pid)"
  else
    log "tritonserver (pid $pid) was not running"
  fi
  rm -f "$PID_FILE"
}

# ---------------------------------------------------------------- how to call it
howto() {
  [ -f "$ENV_FILE" ] || die "no server recorded in $WORK_DIR"
  # shellcheck disable=SC1090
  . "$ENV_FILE"
  local h=$TRITON_HOST hp=$TRITON_HTTP_PORT gp=$TRITON_GRPC_PORT mp=$TRITON_METRICS_PORT
  local py=$TRITON_VENV/bin/python corpus=$(corpus_dir) photo=photo.jpg
  if [ -d "$corpus/jpeg/derived" ]; then
    photo=$(cd "$corpus/jpeg/derived" && pwd)/lom-bridge_full_512x384_b420q75.jpg
    [ -f "$photo" ] || photo=photo.jpg
  fi
  cat >&2 <<EOF

Triton 2.51.0 is serving $TRITON_MODEL_REPO
  pid $TRITON_PID, log $TRITON_LOG
  HTTP $h:$hp   gRPC $h:$gp   metrics http://$h:$mp/metrics

Health, models, config (auto-completed by Sluice), statistics:
  curl -s -o /dev/null -w '%{http_code}\n' $h:$hp/v2/health/ready
  curl -s -X POST $h:$hp/v2/repository/index
  curl -s $h:$hp/v2/models/preprocess_letterbox/config
  curl -s $h:$hp/v2/models/preprocess_imagenet/stats
  curl -s $h:$mp/metrics | grep '^nv_inference_count'

Inference from Python ($py):
  import numpy as np, tritonclient.http as tc
  c = tc.InferenceServerClient("$h:$hp")
  img = np.fromfile("$photo", dtype=np.uint8)[None]  # [1, N]: one encoded image
  x = tc.InferInput("IMAGE", list(img.shape), "UINT8"); x.set_data_from_numpy(img)
  pixels = c.infer("preprocess_imagenet", [x]).as_numpy("PIXELS")  # float32 [1, 3, 224, 224]
  scores = c.infer("ensemble_imagenet", [x]).as_numpy("SCORES")    # float32 [1, 1000]

perf_analyzer over gRPC with real JPEGs (concurrency 1, 2, 4, 8; Markdown table):
  bench/perf_triton.sh --work-dir $TRITON_WORK_DIR
or by hand:
  build/sluice perf-data --corpus ../shared/corpus -o /tmp/jpegs.json jpeg/derived jpeg/native
  $TRITON_PERF_ANALYZER -m preprocess_imagenet -i grpc -u $h:$gp --input-data /tmp/jpegs.json --concurrency-range 4

Stop it: scripts/triton.sh --stop --work-dir $TRITON_WORK_DIR (make stop), or Ctrl-C under make run.
On a machine without a GPU, the log's "CudaDriverHelper has not been initialized",
"unable to create stream for ensemble_imagenet: CUDA driver version is insufficient" and
"failed to allocate pinned system memory" come from tritonserver itself and are harmless.

EOF
}

case "$MODE" in
  stop) stop_server; exit 0 ;;
  howto) howto; exit 0 ;;
esac

# ---------------------------------------------------------------- install
req_hash() { sha256sum "$REQUIREMENTS" | cut -d' ' -f1; }
[ -f "$REQUIREMENTS" ] || die "no requirements file $REQUIREMENTS"
if [ ! -x "$VENV/bin/python" ]; then
  log "creating venv $VENV with $PYTHON"
  "$PYTHON" -m venv "$VENV" ||
    die "venv creation failed (on Debian: apt-get install -y python3-venv)"
fi
VENV=$(cd "$VENV" && pwd)
PY=$VENV/bin/python
STAMP=$VENV/.sluice-requirements.sha256
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$(req_hash)" ]; then
  t0=$(date +%s)
  log "installing $REQUIREMENTS into $VENV (tritonserver, tritonclient: about 400 MB)"
  "$PY" -m pip install -q --disable-pip-version-check --progress-bar off -r "$REQUIREMENTS" >&2 ||
    die "pip install failed"
  req_hash > "$STAMP"
  log "installed in $(( $(date +%s) - t0 ))s"
fi
# The example models' networks: a quick check when they are in place.
"$PY" "$REPO/scripts/onnx_models.py" --if-stale "$REPO/model_repository" ||
  die "scripts/onnx_models.py failed to write model_repository's ONNX files"

SP=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
TS=$SP/pytriton/tritonserver
LIBS=$SP/nvidia_pytriton.libs
[ -x "$TS/bin/tritonserver" ] || die "no tritonserver at $TS/bin/tritonserver (is nvidia-pytriton installed in $VENV?)"
PYVER=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
STUB=$TS/python_backend_stubs/$PYVER/triton_python_backend_stub
[ -x "$STUB" ] || die "no python backend stub for Python $PYVER (the wheel has: $(ls "$TS/python_backend_stubs" | tr '\n' ' '))"

# The stub links libpython3.X.so.1.0, and its RPATH covers only the wheel's
# libraries. A Python built with --enable-shared outside /usr (pyenv) has
# it in its LIBDIR: put that first so the stub embeds the venv's own Python.
# Debian's python3 does not ship it: libpython3.X does.
STUB_LD=""
read -r PYLIBDIR PYSONAME < <("$PY" -c 'import sysconfig as s; print(s.get_config_var("LIBDIR"), "libpython%s.so.1.0" % s.get_config_var("py_version_short"))')
if [ -e "$PYLIBDIR/$PYSONAME" ]; then
  case "$PYLIBDIR" in /usr/lib*|/lib*) ;; *) STUB_LD=$PYLIBDIR ;; esac
elif ! ldconfig -p 2>/dev/null | grep -q "$PYSONAME"; then
  pkg=libpython$PYVER
  log "$PYSONAME not found: installing Debian package $pkg"
  command -v apt-get >/dev/null || die "$PYSONAME is missing and there is no apt-get to install $pkg"
  [ "$(id -u)" = 0 ] || die "$PYSONAME is missing: install $pkg as root (apt-get install -y $pkg)"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >&2 ||
    { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >&2; }; } ||
    die "apt-get install $pkg failed"
fi

# perf_analyzer (in the tritonclient wheel) wants libb64.so.0d and
# libcudart.so.12 even for CPU-only gRPC runs; the pytriton wheel carries
# both under hashed names. The wrapper puts links to them on its path.
mkdir -p "$WORK_DIR/palibs"
b64=$(ls "$LIBS"/libb64-*.so.0d 2>/dev/null | head -1 || true)
cudart=$(ls "$LIBS"/libcudart-*.so.12* 2>/dev/null | head -1 || true)
if [ -n "$b64" ]; then ln -sfn "$b64" "$WORK_DIR/palibs/libb64.so.0d"; fi
if [ -n "$cudart" ]; then ln -sfn "$cudart" "$WORK_DIR/palibs/libcudart.so.12"; fi
PA=$WORK_DIR/perf_analyzer
cat > "$PA" <<EOF
#!/bin/sh
# perf_analyzer from $VENV with the libraries it lacks (scripts/triton.sh).
LD_LIBRARY_PATH="$WORK_DIR/palibs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$VENV/bin/perf_analyzer" "\$@"
EOF
chmod +x "$PA"

if [ "$MODE" = install ]; then log "tritonserver 2.51.0 installed in $VENV"; exit 0; fi

# ---------------------------------------------------------------- backend directory
[ -d "$MODEL_REPO" ] || die "model repository $MODEL_REPO does not exist"
MODEL_REPO=$(cd "$MODEL_REPO" && pwd)
if [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
  die "a server started from $WORK_DIR is still running (pid $(cat "$PID_FILE")): scripts/triton.sh --stop --work-dir $WORK_DIR"
fi
BD=$WORK_DIR/backends
rm -rf "$BD"; mkdir -p "$BD/python"
ln -s "$TS/backends/python/libtriton_python.so" "$BD/python/libtriton_python.so"
ln -s "$TS/backends/python/triton_python_backend_utils.py" "$BD/python/triton_python_backend_utils.py"
ln -s "$STUB" "$BD/python/triton_python_backend_stub"
if [ -d "$BACKEND_DIR" ]; then
  BACKEND_DIR=$(cd "$BACKEND_DIR" && pwd)
  for e in "$BACKEND_DIR"/*; do
    [ -e "$e" ] && [ "$(basename "$e")" != python ] && ln -s "$e" "$BD/$(basename "$e")"
  done
fi
[ -e "$BD/sluice/libtriton_sluice.so" ] ||
  log "warning: no sluice/libtriton_sluice.so under ${BACKEND_DIR}: sluice models will fail to load (make backend)"

# ---------------------------------------------------------------- start
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind((__import__("sys").argv[1], 0)); print(s.getsockname()[1]); s.close()' "$HOST"; }
port_busy() { "$PY" -c 'import socket,sys; s=socket.socket(); s.settimeout(1); sys.exit(0 if s.connect_ex((sys.argv[1], int(sys.argv[2])))==0 else 1)' "$HOST" "$1"; }
is_ready() { "$PY" -c 'import sys,urllib.request as u; sys.exit(0 if u.urlopen(sys.argv[1], timeout=2).status==200 else 1)' \
               "http://$HOST:$HTTP_PORT/v2/health/ready" 2>/dev/null; }

LOG=$WORK_DIR/tritonserver.log
AUTO_PORTS=0
if [ "$HTTP_PORT" = 0 ] && [ "$GRPC_PORT" = 0 ] && [ "$METRICS_PORT" = 0 ]; then AUTO_PORTS=1; fi
REQ_HTTP=$HTTP_PORT REQ_GRPC=$GRPC_PORT REQ_METRICS=$METRICS_PORT

start_once() {
  HTTP_PORT=$REQ_HTTP GRPC_PORT=$REQ_GRPC METRICS_PORT=$REQ_METRICS
  [ "$HTTP_PORT" != 0 ] || HTTP_PORT=$(free_port)
  [ "$GRPC_PORT" != 0 ] || GRPC_PORT=$(free_port)
  [ "$METRICS_PORT" != 0 ] || METRICS_PORT=$(free_port)
  [ "$HTTP_PORT" != "$GRPC_PORT" ] && [ "$HTTP_PORT" != "$METRICS_PORT" ] && [ "$GRPC_PORT" != "$METRICS_PORT" ] ||
    return 2
  for p in "$HTTP_PORT" "$GRPC_PORT" "$METRICS_PORT"; do
    if port_busy "$p"; then log "port $p on $HOST is already in use"; return 2; fi
  done

  local args=(
    --model-repository="$MODEL_REPO"
    --backend-directory="$BD"
    --cache-directory="$TS/caches"
    --http-address="$HOST" --http-port="$HTTP_PORT"
    --grpc-address="$HOST" --grpc-port="$GRPC_PORT"
    --allow-metrics=true --allow-gpu-metrics=false --allow-cpu-metrics=true
    --metrics-address="$HOST" --metrics-port="$METRICS_PORT"
    --pinned-memory-pool-byte-size=0
    --exit-timeout-secs=10
    --log-verbose="$LOG_VERBOSE"
  )
  if [ "$EXPLICIT" = 1 ]; then args+=(--model-control-mode=explicit); fi
  for m in ${LOAD_MODELS[@]+"${LOAD_MODELS[@]}"}; do args+=(--load-model="$m"); done
  args+=(${EXTRA[@]+"${EXTRA[@]}"})

  log "starting tritonserver ${args[*]}"
  # setsid: the server gets its own session, so that Ctrl-C in the
  # terminal that started it reaches only the foreground wrapper, which
  # then stops the server cleanly.
  # PATH: the python backend stub embeds libpython and finds its prefix from
  # `python3` on PATH: the venv's bin first, or its models do not see the
  # venv's numpy and onnxruntime.
  (
    export PATH="$VENV/bin:$PATH"
    [ -z "$STUB_LD" ] || export LD_LIBRARY_PATH="$STUB_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    exec setsid "$TS/bin/tritonserver" "${args[@]}" </dev/null >"$LOG" 2>&1
  ) &
  PID=$!
  echo "$PID" > "$PID_FILE"

  local t1 deadline
  t1=$(date +%s.%N)
  deadline=$(( $(date +%s) + TIMEOUT ))
  until is_ready; do
    if ! kill -0 "$PID" 2>/dev/null; then
      wait "$PID" 2>/dev/null || true
      rm -f "$PID_FILE"
      if grep -qi 'address already in use' "$LOG"; then return 2; fi
      log "tritonserver exited during startup; the end of $LOG:"
      tail -40 "$LOG" >&2
      return 1
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "tritonserver not ready after ${TIMEOUT}s; the end of $LOG:"
      tail -40 "$LOG" >&2
      stop_server
      return 1
    fi
    sleep 0.2
  done
  STARTUP_S=$(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  return 0
}

tries=1
if [ "$AUTO_PORTS" = 1 ]; then tries=4; fi   # a free port can be taken between the check and the bind
rc=1
for i in $(seq 1 "$tries"); do
  set +e; start_once; rc=$?; set -e
  [ "$rc" = 2 ] || break
  if [ "$i" -lt "$tries" ]; then log "ports taken, retrying with other ports"; fi
done
[ "$rc" = 0 ] || {
  [ "$rc" = 2 ] && { tail -20 "$LOG" >&2 2>/dev/null || true; die "ports in use (http $HTTP_PORT, grpc $GRPC_PORT, metrics $METRICS_PORT)"; }
  die "tritonserver did not start (log: $LOG)"
}

cat > "$ENV_FILE" <<EOF
TRITON_PID=$PID
TRITON_HOST=$HOST
TRITON_HTTP_PORT=$HTTP_PORT
TRITON_GRPC_PORT=$GRPC_PORT
TRITON_METRICS_PORT=$METRICS_PORT
TRITON_LOG=$LOG
TRITON_WORK_DIR=$WORK_DIR
TRITON_VENV=$VENV
TRITON_MODEL_REPO=$MODEL_REPO
TRITON_PERF_ANALYZER=$PA
TRITON_STARTUP_S=$STARTUP_S
EOF
log "ready in ${STARTUP_S}s: pid $PID, http $HOST:$HTTP_PORT, grpc $HOST:$GRPC_PORT, metrics $HOST:$METRICS_PORT, log $LOG"

if [ "$MODE" = start ]; then
  cat "$ENV_FILE"
  exit 0
fi

# ---------------------------------------------------------------- foreground
howto
echo "Server log follows; Ctrl-C stops the server." >&2
tail -n +1 -f --pid="$PID" "$LOG" >&2 &
TAIL=$!
# Ctrl-C or SIGTERM here, or --stop from elsewhere (make stop): the server
# shuts down cleanly and exits 0, a normal end. Any other exit is a crash.
trap 'trap - INT TERM; echo >&2; stop_server; kill "$TAIL" 2>/dev/null || true; log "tritonserver stopped"; exit 0' INT TERM
rc=0
wait "$PID" || rc=$?
wait "$TAIL" || true
rm -f "$PID_FILE"
[ "$rc" = 0 ] || die "tritonserver (pid $PID) exited with status $rc; the end of its log is above"
log "tritonserver stopped"
