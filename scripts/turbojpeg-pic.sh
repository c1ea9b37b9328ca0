#!/usr/bin/env bash
# Builds libturbojpeg.a as position-independent code, for the Triton
# backend (a shared object):
#
#   scripts/turbojpeg-pic.sh OUT_DIR      writes OUT_DIR/libturbojpeg.a
#
# Why: package codec links TurboJPEG statically (-l:libturbojpeg.a), and
# Debian's libturbojpeg.a cannot go into a shared object: it is compiled as
# PIE, with the local-exec TLS model (R_X86_64_TPOFF32 relocations against
# errStr and simd_support), which only an executable can hold. The linker
# stops with "relocation R_X86_64_TPOFF32 against `errStr' can not be used
# when making a shared object". This builds the same code, the source
# package of the installed libturbojpeg0-dev with Debian's patches, with
# -fPIC. Package cgo links with -L build/turbojpeg-pic, so the backend gets
# this copy and the sluice command keeps the system's.
#
# The source comes from apt-get source, run against a private deb-src copy
# of the system's apt sources (/etc/apt is left alone). Missing build tools
# (cmake, nasm, dpkg-dev) are installed with apt-get, which needs root.
# Does nothing when OUT_DIR already holds a build of the installed version.
set -euo pipefail

OUT=${1:?usage: scripts/turbojpeg-pic.sh OUT_DIR}
PKG=libturbojpeg0-dev

log() { echo "turbojpeg-pic.sh: $*" >&2; }
die() { echo "turbojpeg-pic.sh: ERROR: $*" >&2; exit 1; }

ver=$(dpkg-query -W -f='${source:Version}' "$PKG" 2>/dev/null) || die "$PKG is not installed (make deps)"
src=$(dpkg-query -W -f='${source:Package}' "$PKG")
STAMP=$OUT/libturbojpeg.a.version
if [ -f "$OUT/libturbojpeg.a" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$src $ver" ]; then
  exit 0
fi

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v nasm >/dev/null || missing+=(nasm) # libjpeg-turbo's SIMD code
command -v dpkg-source >/dev/null || missing+=(dpkg-dev)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2 ||
    { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2; }; } ||
    die "apt-get install ${missing[*]} failed (needs root)"
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
APT=$WORK/apt
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/sources.list.d"
# deb-src twins of the enabled system sources, in both formats.
for f in /etc/apt/sources.list.d/*.sources; do
  [ -e "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" > "$APT/sources.list.d/$(basename "$f")"
done
cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
  sed -n 's/^deb\([[:space:]]\)/deb-src\1/p' > "$APT/sources.list" || true
APTO=(-o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=$APT/sources.list.d"
      -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache"
      -o "APT::Sandbox::User=$(id -un)") # the private dirs are ours, not _apt's

log "fetching the source of $src $ver"
# A third-party source without deb-src makes update report an error; the
# distribution's own sources are what matters, and source says if they fail.
apt-get -qq "${APTO[@]}" update >&2 || log "apt-get update reported errors; trying the download anyway"
(cd "$WORK" && apt-get -qq "${APTO[@]}" source "$src=$ver" >"$WORK/source.log" 2>&1) ||
  { cat "$WORK/source.log" >&2; die "apt-get source $src=$ver failed"; }
dir=$(find "$WORK" -mindepth 1 -maxdepth 1 -type d -name "$src-*" | head -1)
[ -n "$dir" ] || die "apt-get source unpacked nothing"

log "building $(basename "$dir") with -fPIC"
if ! { cmake -S "$dir" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
         -DENABLE_SHARED=OFF -DENABLE_STATIC=ON -DWITH_JAVA=OFF -DREQUIRE_SIMD=ON &&
       cmake --build "$WORK/build" --target turbojpeg-static -j"$(nproc)"; } >"$WORK/build.log" 2>&1; then
  tail -30 "$WORK/build.log" >&2
  die "building libturbojpeg.a failed"
fi

mkdir -p "$OUT"
cp "$WORK/build/libturbojpeg.a" "$OUT/libturbojpeg.a.tmp"
mv "$OUT/libturbojpeg.a.tmp" "$OUT/libturbojpeg.a"
echo "$src $ver" > "$STAMP"
log "wrote $OUT/libturbojpeg.a ($src $ver, PIC)"
