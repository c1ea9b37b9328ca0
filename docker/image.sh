#!/usr/bin/env bash
# Builds docker/Dockerfile with buildah (no daemon, chroot isolation) over
# local TEST BASES (docker/image_bases.sh: debootstrap, this machine's Go,
# the pytriton wheel's tritonserver 2.51.0 in /opt/tritonserver), then
# smoke-tests the image without a container runtime: the image's own
# tritonserver, started with `buildah run --isolation chroot` (host network:
# it listens on 127.0.0.1), loads /models with the image's
# /opt/tritonserver/backends/sluice/libtriton_sluice.so and answers
# `build/sluice infer` exactly as `make run`'s server on this machine does.
#
#   docker/image.sh [--rebuild-bases] [--no-smoke] [--tag NAME]
#   docker/image.sh --clean          remove the cache (test bases, layers, storage)
#
# The image is a TEST build (tag localhost/sluice:testbase): its runtime base
# is not NVIDIA's image. Layers are cached (buildah bud --layers) in
# $IMAGE_CACHE (/var/tmp/sluice-image), with buildah's storage; the test bases
# are built only when missing. Needs root; installs buildah and debootstrap
# with apt-get when missing. The smoke test needs build/sluice,
# build/backends and .venv-triton (make image-check builds them first).
# Prints the time of each phase and the image's size.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${IMAGE_CACHE:-/var/tmp/sluice-image}
TAG=localhost/sluice:testbase
SMOKE=1 REBUILD_BASES=()
PHOTOS=(jpeg/derived/lom-bridge_full_512x384_b420q75.jpg)

. "$REPO/scripts/lib.sh"
CORPUS=$(corpus_dir)

while [ $# -gt 0 ]; do
  case "$1" in
    --rebuild-bases) REBUILD_BASES=(--rebuild); shift ;;
    --no-smoke) SMOKE=0; shift ;;
    --tag) TAG=$2; shift 2 ;;
    --clean) MODE=clean; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done
[ "$(id -u)" = 0 ] || die "needs root (buildah's chroot isolation, debootstrap)"

export IMAGE_CACHE=$CACHE
export BUILDAH="buildah --root $CACHE/storage --runroot $CACHE/run --storage-driver overlay"
# shellcheck disable=SC2086
bh() { $BUILDAH "$@"; }

if [ "${MODE:-}" = clean ]; then
  if command -v buildah >/dev/null && [ -d "$CACHE/storage" ]; then
    bh rm --all >/dev/null 2>&1 || true
    bh umount --all >/dev/null 2>&1 || true
  fi
  rm -rf "$CACHE"
  log "removed $CACHE"
  exit 0
fi

PHASES=()
T0=$(date +%s)
phase_start() { PT=$(date +%s); log "---- $1"; }
phase_end() { PHASES+=("$(printf '%-8s %4ss' "$1" $(( $(date +%s) - PT )))"); }

# ---------------------------------------------------------------- tools
phase_start tools
missing=()
command -v buildah >/dev/null || missing+=(buildah)
command -v debootstrap >/dev/null || missing+=(debootstrap)
# buildah recommends it; installed so that a new machine has what this script was tested with.
command -v fuse-overlayfs >/dev/null || missing+=(fuse-overlayfs)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
    { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; }; } ||
    die "apt-get install ${missing[*]} failed"
fi
mkdir -p "$CACHE"
phase_end tools

# ---------------------------------------------------------------- test bases
phase_start bases
"$REPO/docker/image_bases.sh" ${REBUILD_BASES[@]+"${REBUILD_BASES[@]}"} >"$CACHE/bases.txt" || die "test bases failed"
args=() BASE_IMAGE=""
while IFS= read -r a; do
  args+=(--build-arg "$a")
  case "$a" in BASE_IMAGE=*) BASE_IMAGE=${a#BASE_IMAGE=} ;; esac
done <"$CACHE/bases.txt"
[ -n "$BASE_IMAGE" ] || die "image_bases.sh named no BASE_IMAGE"
phase_end bases

# ---------------------------------------------------------------- build
# Each output line is stamped with the time, so that the log shows what
# each step cost.
phase_start build
BUILD_LOG=$CACHE/build.log
log "buildah bud ${args[*]} -t $TAG (log: $BUILD_LOG)"
set +e
bh bud --isolation chroot --layers --force-rm --pull=never "${args[@]}" -f "$REPO/docker/Dockerfile" -t "$TAG" "$REPO" 2>&1 |
  while IFS= read -r line; do printf '%(%T)T %s\n' -1 "$line"; done >"$BUILD_LOG"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || { tail -30 "$BUILD_LOG" >&2; die "buildah bud failed (log: $BUILD_LOG)"; }
grep -h 'newest glibc symbol' "$BUILD_LOG" | cut -d' ' -f2- >&2 || true
SIZE=$(bh images --format '{{.Size}}' "$TAG" | head -1)
BASE_SIZE=$(bh images --format '{{.Size}}' "$BASE_IMAGE" | head -1)
phase_end build

summary() {
  log "---- summary"
  printf '  %s\n' "${PHASES[@]}" >&2
  log "total $(( $(date +%s) - T0 ))s; image $TAG: $SIZE (its test base $BASE_IMAGE: $BASE_SIZE)"
}
if [ "$SMOKE" = 0 ]; then summary; exit 0; fi

# ---------------------------------------------------------------- smoke test
phase_start smoke
SLUICE=$REPO/build/sluice
[ -x "$SLUICE" ] || die "no $SLUICE (make build)"
[ -f "$REPO/build/backends/sluice/libtriton_sluice.so" ] || die "no build/backends (make backend)"
files=()
for p in "${PHOTOS[@]}"; do
  [ -f "$CORPUS/$p" ] || die "no corpus photo $CORPUS/$p (SLUICE_CORPUS)"
  files+=("$CORPUS/$p")
done
SMOKE_DIR=$CACHE/smoke
rm -rf "$SMOKE_DIR"; mkdir -p "$SMOKE_DIR"

# The same calls against both servers: an ensemble (Sluice preprocessing,
# then the classifier network in ONNX Runtime: scores and top 5) over gRPC,
# Sluice's outputs alone over HTTP.
infer() { # OUT HTTP_PORT GRPC_PORT
  { "$SLUICE" infer --url "127.0.0.1:$3" --model ensemble_imagenet "${files[@]}" &&
    "$SLUICE" infer --protocol http --url "127.0.0.1:$2" --model preprocess_imagenet --top 0 "${files[@]}" &&
    "$SLUICE" infer --protocol http --url "127.0.0.1:$2" --model preprocess_letterbox --top 0 "${files[@]}"; } >"$1"
}

# The reference: make run's server (scripts/triton.sh), this checkout's backend.
log "reference: scripts/triton.sh with build/backends"
eval "$("$REPO/scripts/triton.sh" --work-dir "$SMOKE_DIR/ref")"
ref_rc=0
infer "$SMOKE_DIR/ref.txt" "$TRITON_HTTP_PORT" "$TRITON_GRPC_PORT" || ref_rc=$?
"$REPO/scripts/triton.sh" --stop --work-dir "$SMOKE_DIR/ref"
[ "$ref_rc" = 0 ] || die "sluice infer against the reference server failed"

# The image's server: its own command (CMD) plus free ports on 127.0.0.1.
CTR=sluice-image-smoke
bh rm "$CTR" >/dev/null 2>&1 || true # left by an interrupted run
bh from --name "$CTR" --pull=never "$TAG" >/dev/null
ROOT=$(bh mount "$CTR")
SRV_PID=""
cleanup() {
  if [ -n "$SRV_PID" ] && kill -0 "$SRV_PID" 2>/dev/null; then
    kill -TERM "$SRV_PID" 2>/dev/null || true
    for _ in $(seq 1 200); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SRV_PID" 2>/dev/null || true
  fi
  [ -z "${RUN_PID:-}" ] || wait "$RUN_PID" 2>/dev/null || true
  bh umount "$CTR" >/dev/null 2>&1 || true
  bh rm "$CTR" >/dev/null 2>&1 || true
}
trap cleanup EXIT

mapfile -t CMD < <(bh inspect --format '{{range .OCIv1.Config.Cmd}}{{println .}}{{end}}' "$TAG" | sed '/^$/d')
[ "${CMD[0]:-}" = tritonserver ] || die "the image's CMD is not tritonserver: ${CMD[*]}"
read -r HTTP GRPC METRICS < <(python3 -c 'import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
LOG=$SMOKE_DIR/image-tritonserver.log
# sh records its pid, then becomes tritonserver: chroot isolation has no
# pid namespace, so it is the host's pid of the server.
PIDFILE=/tmp/sluice-smoke.pid
log "image: buildah run --isolation chroot $TAG -- ${CMD[*]} (ports $HTTP $GRPC $METRICS)"
bh run --isolation chroot "$CTR" -- sh -c 'echo $$ > '"$PIDFILE"'; exec "$@"' sh "${CMD[@]}" \
  --http-address=127.0.0.1 --http-port="$HTTP" --grpc-address=127.0.0.1 --grpc-port="$GRPC" \
  --metrics-address=127.0.0.1 --metrics-port="$METRICS" --log-verbose=1 </dev/null >"$LOG" 2>&1 &
RUN_PID=$!
t1=$(date +%s)
until curl -sf -o /dev/null "http://127.0.0.1:$HTTP/v2/health/ready"; do
  kill -0 "$RUN_PID" 2>/dev/null || { tail -30 "$LOG" >&2; die "the image's tritonserver exited (log: $LOG)"; }
  [ $(( $(date +%s) - t1 )) -lt 300 ] || { tail -30 "$LOG" >&2; die "the image's tritonserver not ready after 300s"; }
  [ -n "$SRV_PID" ] || SRV_PID=$(cat "$ROOT$PIDFILE" 2>/dev/null || true)
  sleep 0.5
done
SRV_PID=$(cat "$ROOT$PIDFILE")
log "ready in $(( $(date +%s) - t1 ))s (pid $SRV_PID)"

# 1. The backend Triton opened is the image's file: the path it logged, and
#    the inode mapped into the server is that of the image's copy.
SO=/opt/tritonserver/backends/sluice/libtriton_sluice.so
grep -q "OpenLibraryHandle: $SO\"" "$LOG" || die "the server's log names no $SO"
ino=$(stat -c %i "$ROOT$SO")
awk -v so="$SO" -v ino="$ino" 'index($6, so) && $5 == ino {f=1} END {exit !f}' "/proc/$SRV_PID/maps" ||
  die "the server did not map the image's $SO (inode $ino)"
# 2. Every model of the image's /models loaded.
for m in $(ls "$ROOT/models"); do
  [ -f "$ROOT/models/$m/config.pbtxt" ] || continue
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP/v2/models/$m/ready")
  [ "$code" = 200 ] || die "model $m is not ready in the image (HTTP $code)"
done
# 3. The answers: the names, shapes, values and top 5 that the reference printed.
infer "$SMOKE_DIR/image.txt" "$HTTP" "$GRPC" || die "sluice infer against the image's server failed"
cat "$SMOKE_DIR/image.txt" >&2
grep -q 'SCORES FP32 \[1 1000\]' "$SMOKE_DIR/image.txt" && grep -q 'top 5:' "$SMOKE_DIR/image.txt" &&
  grep -q 'PIXELS FP32 \[1 3 224 224\]' "$SMOKE_DIR/image.txt" && grep -q 'PIXELS FP32 \[1 3 640 640\]' "$SMOKE_DIR/image.txt" ||
  die "unexpected outputs from the image's server (above)"
diff -u "$SMOKE_DIR/ref.txt" "$SMOKE_DIR/image.txt" >&2 ||
  die "the image's server answered differently from the reference server (diff above)"
log "smoke test passed: the image's answers equal the reference's"
cleanup
trap - EXIT
SRV_PID=""
phase_end smoke
summary
