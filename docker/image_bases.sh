#!/usr/bin/env bash
# The local TEST BASES that docker/image.sh builds docker/Dockerfile over,
# where no image registry is reachable. They stand in for the official
# images and say so (image names and labels); none is published.
#
#   docker/image_bases.sh [--rebuild] [--venv DIR]
#
#   localhost/sluice-testbase-debian:bookworm        for debian:bookworm (kernels stage):
#       Debian 12 minbase from debootstrap, with the official image's deb822 apt sources
#   localhost/sluice-testbase-golang:<GO>-bookworm   for golang:1.26-bookworm (build stage):
#       the above plus this machine's Go tree (its version must be go.mod's)
#   localhost/sluice-testbase-triton:2.51            for NVIDIA's tritonserver:24.10-py3:
#       the above plus tritonserver 2.51.0 of the nvidia-pytriton wheel (.venv-triton,
#       make triton) in /opt/tritonserver as the NGC image lays it out
#
# Each is built only when missing (--rebuild: all again), and the Triton one
# also when docker/testbase/triton.Containerfile changed. On stdout: the
# three names as BUILD-ARG=IMAGE lines, for buildah bud --build-arg.
# Environment: BUILDAH (the buildah command, with its storage options),
# IMAGE_CACHE (work folder: debootstrap's package cache, build contexts).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILDAH=${BUILDAH:-buildah}
CACHE=${IMAGE_CACHE:-/var/tmp/sluice-image}
VENV=$REPO/.venv-triton
REBUILD=0

. "$REPO/scripts/lib.sh"

while [ $# -gt 0 ]; do
  case "$1" in
    --rebuild) REBUILD=1; shift ;;
    --venv) VENV=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done

GO_MOD=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$REPO/go.mod")
DEBIAN=localhost/sluice-testbase-debian:bookworm
GOLANG=localhost/sluice-testbase-golang:$GO_MOD-bookworm
TRITON=localhost/sluice-testbase-triton:2.51
NOTICE="TEST BASE for docker/image.sh, not an official image"

# $BUILDAH is a command with options: split on purpose.
# shellcheck disable=SC2086
bh() { $BUILDAH "$@"; }
have() { [ "$REBUILD" = 0 ] && bh inspect --type image "$1" >/dev/null 2>&1; }
# A test base on top of the Debian one; its log is kept, shown on failure.
bud() {
  bh bud --isolation chroot --pull=never --build-arg "DEBIAN_IMAGE=$DEBIAN" "$@" >"$CACHE/bud-base.log" 2>&1 ||
    { tail -30 "$CACHE/bud-base.log" >&2; die "buildah bud $* failed (log: $CACHE/bud-base.log)"; }
}
mkdir -p "$CACHE"

# ---------------------------------------------------------------- debian
# The mirror and apt sources are this machine's (Debian 12 too): the test
# base fetches from where the host does.
host_sources() {
  local f=/etc/apt/sources.list.d/debian.sources
  [ -f "$f" ] && { grep -v '^#' "$f"; return; }
  # One-line format: the same entries in deb822.
  grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | awk '$3 ~ /^bookworm/ {
    printf "Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n", $2, $3 }'
}
if ! have "$DEBIAN"; then
  command -v debootstrap >/dev/null || die "debootstrap is missing (make image-deps)"
  sources=$(host_sources)
  mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' <<<"$sources")
  [ -n "$mirror" ] || die "no Debian mirror in this machine's apt sources"
  log "debootstrap bookworm from $mirror into $DEBIAN"
  bh rm sluice-testbase-debian-work >/dev/null 2>&1 || true # left by an interrupted run
  ctr=$(bh from --name sluice-testbase-debian-work scratch)
  root=$(bh mount "$ctr")
  mkdir -p "$CACHE/debs"
  debootstrap --variant=minbase --cache-dir="$CACHE/debs" bookworm "$root" "$mirror" >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap.log" >&2; bh rm "$ctr" >/dev/null; die "debootstrap failed"; }
  # As in the official image: deb822 sources, no package cache or lists.
  rm -f "$root/etc/apt/sources.list"
  printf '%s\n' "$sources" > "$root/etc/apt/sources.list.d/debian.sources"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  bh config --label org.opencontainers.image.title=sluice-testbase-debian \
    --label "org.opencontainers.image.description=$NOTICE: Debian 12 minbase from debootstrap." \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash "$ctr"
  bh commit --quiet --rm "$ctr" "$DEBIAN" >/dev/null
fi

# ---------------------------------------------------------------- golang
if ! have "$GOLANG"; then
  goroot=$(go env GOROOT)
  have_go=$("$goroot/bin/go" env GOVERSION)
  [ "$have_go" = "go$GO_MOD" ] || die "this machine's Go is $have_go, go.mod wants go$GO_MOD"
  log "$GOLANG: $DEBIAN plus $goroot ($have_go)"
  ctx=$CACHE/golang-context
  rm -rf "$ctx"; mkdir -p "$ctx"
  # Hard links when the cache is on the GOROOT's file system: no 250 MB copy.
  cp -al "$goroot" "$ctx/go" 2>/dev/null || { rm -rf "$ctx/go"; cp -a "$goroot" "$ctx/go"; }
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
  bud --build-arg "GO_VERSION=$GO_MOD" -f "$REPO/docker/testbase/golang.Containerfile" -t "$GOLANG" "$ctx"
  rm -rf "$ctx"
fi

# ---------------------------------------------------------------- triton
# Built again when its recipe changed: its label sluice.recipe holds the
# SHA-256 of the triton.Containerfile it was built from.
RECIPE=$REPO/docker/testbase/triton.Containerfile
recipe=$(sha256sum "$RECIPE" | cut -d' ' -f1)
built=$(bh inspect --type image --format '{{index .OCIv1.Config.Labels "sluice.recipe"}}' "$TRITON" 2>/dev/null || true)
if ! have "$TRITON" || [ "$built" != "$recipe" ]; then
  py=$VENV/bin/python
  [ -x "$py" ] || die "no $py: make triton installs tritonserver 2.51.0 there"
  sp=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  ts=$sp/pytriton/tritonserver libs=$sp/nvidia_pytriton.libs
  [ -x "$ts/bin/tritonserver" ] || die "no tritonserver in $ts (make triton)"
  # The NGC layout. tritonserver's RPATH has $ORIGIN/../lib, so the wheel's
  # libraries go to lib/; the python backend's stub for Debian 12's Python
  # goes next to the backend, where Triton looks for it.
  ctx=$CACHE/triton-context
  rm -rf "$ctx"
  o=$ctx/opt/tritonserver
  mkdir -p "$o/bin" "$o/lib" "$o/backends/python" "$o/caches"
  cp -a "$ts/bin/tritonserver" "$o/bin/"
  cp -a "$libs"/. "$o/lib/"
  cp -a "$ts/caches"/. "$o/caches/"
  cp -a "$ts/backends/python/libtriton_python.so" "$ts/backends/python/triton_python_backend_utils.py" "$o/backends/python/"
  cp -a "$ts/python_backend_stubs/3.11/triton_python_backend_stub" "$o/backends/python/"
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
  log "$TRITON: $DEBIAN plus tritonserver 2.51.0 from $ts"
  bud --label "sluice.recipe=$recipe" -f "$RECIPE" -t "$TRITON" "$ctx"
  rm -rf "$ctx"
fi

echo "DEBIAN_IMAGE=$DEBIAN"
echo "GOLANG_IMAGE=$GOLANG"
echo "BASE_IMAGE=$TRITON"
