#!/usr/bin/env bash
# Builds the image libraries Sluice links statically, as position-independent
# code, into one prefix:
#
#   scripts/pic-libs.sh PREFIX        (make pic-libs: PREFIX = build/pic)
#
# PREFIX/lib                          PREFIX/include
#   libturbojpeg.a  TurboJPEG API and     turbojpeg.h, jpeglib.h, jconfig.h,
#                   libjpeg's API (there   jmorecfg.h, jerror.h
#                   is no separate libjpeg.a: link this one for jpeg_*)
#   libwebp.a (also libwebpdecoder.a,     webp/decode.h, webp/demux.h, ...
#   libwebpdemux.a)
#   libtiff.a       LZW, Deflate, PackBits, JPEG, ...  tiffio.h, tiff.h, ...
#   libz.a                                zlib.h, zconf.h
#   libopenjp2.a                          openjpeg-2.5/openjpeg.h
#   libdav1d.a                            dav1d/dav1d.h
#   pkgconfig/, cmake/ (unused by Sluice); PREFIX/stamps: what was built
#
# A codec file points cgo at the prefix; static archives are searched in
# command-line order, so each library comes before the ones it needs:
#
#   #cgo CFLAGS: -I${SRCDIR}/../build/pic/include
#   #cgo LDFLAGS: -L${SRCDIR}/../build/pic/lib -l:libwebp.a -lm
#   #cgo LDFLAGS: -L${SRCDIR}/../build/pic/lib -l:libtiff.a -l:libturbojpeg.a -l:libz.a -lm
#   #cgo LDFLAGS: -L${SRCDIR}/../build/pic/lib -l:libopenjp2.a -lm -lpthread
#   #cgo LDFLAGS: -L${SRCDIR}/../build/pic/lib -l:libdav1d.a -lpthread -ldl -lm
#
# (-L directories are searched before the system's, so these copies win over
# any Debian libfoo.a; -l:name.a never picks a shared library. The backend
# links with --exclude-libs,ALL, so none of their symbols is exported.)
#
# Not here: libavif. The Debian archive this was written against serves
# libavif's .dsc and debian.tar.xz but answers 404 for
# libavif_0.11.1.orig.tar.gz (bookworm and bookworm-security alike), so
# apt-get source cannot unpack it; dav1d, the AV1 decoder AVIF needs, is
# here, and codec/avif*.go reads the container itself.
#
# Why: the Triton backend is a shared object that must need nothing but glibc
# at run time, so these libraries go into it statically, and Debian's static
# libraries cannot: they are compiled as PIE, with the local-exec TLS model
# (libturbojpeg.a: "relocation R_X86_64_TPOFF32 against `errStr' can not be
# used when making a shared object"). Each is built here from the Debian 12
# source package of the installed -dev package, with Debian's patches, with
# -fPIC, and with only the features a decoder needs (libtiff: no jbig, lzma,
# zstd, lerc, webp, libdeflate).
#
# Which source version: the installed -dev package's exact one when the
# archive serves it, else the newest one it does serve for that source
# package (an archive can list a security or point release's source and
# still answer 404 for its files: zlib 1:1.2.13.dfsg-1+deb12u1 on
# 2026-12-01). Nothing needs the static copy to equal the installed binary:
# only its own headers and archive, both in PREFIX, are used. The log says
# which version was built and why; the stamp records it. A library whose
# source cannot be had at all fails naming every version tried.
#
# The source comes from apt-get source, run against a private deb-src copy of
# the system's apt sources (/etc/apt is left alone). Missing build tools are
# installed with apt-get, which needs root. A library whose stamp
# (PREFIX/stamps/SOURCE) matches the installed version and this script is
# not rebuilt, so a rerun with nothing to do takes well under a second.
#
# Tested on Debian 12 (bookworm): the developer, CI and container build
# machines; tests/test_pic_libs.py runs the fallback against a local
# repository. Other apt-based systems (Ubuntu) take the same commands but
# are not tested: their archives cannot be reached from these machines.
#
# For tests: PIC_LIBS_SOURCES names a deb-src sources.list to use instead of
# the system's, PIC_LIBS_ONLY the -dev packages of LIBS to consider
# (space-separated; default all).
set -euo pipefail

OUT=${1:?usage: scripts/pic-libs.sh PREFIX}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Build order: libtiff needs zlib's and libjpeg's headers and libraries. Each entry: the -dev package whose source version is
# built, and the build function.
LIBS=(
  "zlib1g-dev build_zlib"
  "libturbojpeg0-dev build_jpeg"
  "libwebp-dev build_webp"
  "libtiff-dev build_tiff"
  "libopenjp2-7-dev build_openjpeg"
  "libdav1d-dev build_dav1d"
)
# Raise RECIPE when a change to this script changes what it builds (an
# option, a library added): every stamp then goes stale.
RECIPE=r3

# Which libraries are stale. A stamp reads "SOURCE INSTALLED RECIPE BUILT":
# the installed version it stands for, and the source version built.
todo=()
for entry in "${LIBS[@]}"; do
  read -r pkg fn <<<"$entry"
  [ -z "${PIC_LIBS_ONLY:-}" ] || [[ " $PIC_LIBS_ONLY " == *" $pkg "* ]] || continue
  ver=$(dpkg-query -W -f='${source:Version}' "$pkg" 2>/dev/null) || die "$pkg is not installed (make deps)"
  src=$(dpkg-query -W -f='${source:Package}' "$pkg")
  stamp=$(cut -d' ' -f1-3 "$OUT/stamps/$src" 2>/dev/null || true)
  [ "$stamp" = "$src $ver $RECIPE" ] || todo+=("$src $ver $fn")
done
[ ${#todo[@]} -gt 0 ] || exit 0

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v meson >/dev/null || missing+=(meson)             # dav1d
command -v ninja >/dev/null || missing+=(ninja-build)       # dav1d
command -v nasm >/dev/null || missing+=(nasm)               # libjpeg-turbo's and dav1d's SIMD code
command -v dpkg-source >/dev/null || missing+=(dpkg-dev)    # apt-get source unpacks with it
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
if [ -n "${PIC_LIBS_SOURCES:-}" ]; then
  cp "$PIC_LIBS_SOURCES" "$APT/sources.list"
else
  # deb-src twins of the enabled system sources, in both formats.
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" > "$APT/sources.list.d/$(basename "$f")"
  done
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    sed -n 's/^deb\([[:space:]]\)/deb-src\1/p' > "$APT/sources.list" || true
fi
APTO=(-o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=$APT/sources.list.d"
      -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache"
      -o "APT::Sandbox::User=$(id -un)") # the private dirs are ours, not _apt's
# A third-party source without deb-src makes update report an error; the
# distribution's own sources are what matters, and source says if they fail.
apt-get -qq "${APTO[@]}" update >&2 || log "apt-get update reported errors; trying the downloads anyway"

JOBS=$(nproc)
# Build types pick the optimization; -fPIC also reaches code that ignores
# CMAKE_POSITION_INDEPENDENT_CODE (assembly wrappers, zlib's configure).
export CFLAGS="-fPIC" CXXFLAGS="-fPIC"
# Only the prefix's own libraries, should a build look for another.
export PKG_CONFIG_LIBDIR=$OUT/lib/pkgconfig PKG_CONFIG_PATH=
CMAKE_COMMON=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF
              -DCMAKE_INSTALL_PREFIX="$OUT" -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_PREFIX_PATH="$OUT"
              -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)

# run LOG CMD...: runs CMD with its output in LOG, shown (its end) on failure.
run() {
  local logf=$1; shift
  "$@" >>"$logf" 2>&1 || { tail -40 "$logf" >&2; die "failed: $*"; }
}

build_zlib() { # $1 source dir, $2 log
  (cd "$1" && CFLAGS="-O3 -fPIC" run "$2" ./configure --static --prefix="$OUT" --libdir="$OUT/lib" &&
    run "$2" make -j"$JOBS" libz.a && run "$2" make install)
}

build_jpeg() {
  # Only the static TurboJPEG library (it holds libjpeg's API too) and the
  # headers: the tools and tests would take most of the time.
  run "$2" cmake -S "$1" -B "$1/_b" "${CMAKE_COMMON[@]}" -DENABLE_SHARED=OFF -DENABLE_STATIC=ON \
    -DWITH_JAVA=OFF -DREQUIRE_SIMD=ON
  run "$2" cmake --build "$1/_b" --target turbojpeg-static -j"$JOBS"
  mkdir -p "$OUT/lib" "$OUT/include"
  cp "$1/_b/libturbojpeg.a" "$OUT/lib/"
  cp "$1/turbojpeg.h" "$1/jpeglib.h" "$1/jmorecfg.h" "$1/jerror.h" "$1/_b/jconfig.h" "$OUT/include/"
}

build_webp() {
  run "$2" cmake -S "$1" -B "$1/_b" "${CMAKE_COMMON[@]}" -DWEBP_BUILD_ANIM_UTILS=OFF -DWEBP_BUILD_CWEBP=OFF \
    -DWEBP_BUILD_DWEBP=OFF -DWEBP_BUILD_GIF2WEBP=OFF -DWEBP_BUILD_IMG2WEBP=OFF -DWEBP_BUILD_VWEBP=OFF \
    -DWEBP_BUILD_WEBPINFO=OFF -DWEBP_BUILD_WEBPMUX=OFF -DWEBP_BUILD_EXTRAS=OFF -DWEBP_BUILD_LIBWEBPMUX=OFF
  run "$2" cmake --build "$1/_b" -j"$JOBS"
  run "$2" cmake --install "$1/_b"
}

build_tiff() {
  # Baseline codecs (LZW, PackBits, ...) are built in; Deflate from zlib
  # and JPEG from libjpeg-turbo come from the prefix; everything that
  # would need another library is off.
  run "$2" cmake -S "$1" -B "$1/_b" "${CMAKE_COMMON[@]}" -Dtiff-tools=OFF -Dtiff-tests=OFF -Dtiff-contrib=OFF \
    -Dtiff-docs=OFF -Dtiff-deprecated=OFF -Dcxx=OFF -Dzlib=ON -Dlibdeflate=OFF -Djpeg=ON -Dold-jpeg=ON -Djpeg12=OFF \
    -Djbig=OFF -Dlerc=OFF -Dlzma=OFF -Dzstd=OFF -Dwebp=OFF -Dpixarlog=ON \
    -DZLIB_INCLUDE_DIR="$OUT/include" -DZLIB_LIBRARY="$OUT/lib/libz.a" \
    -DJPEG_INCLUDE_DIR="$OUT/include" -DJPEG_LIBRARY="$OUT/lib/libturbojpeg.a"
  run "$2" cmake --build "$1/_b" --target tiff -j"$JOBS"
  run "$2" cmake --install "$1/_b/libtiff"
  cap_allocations "$OUT/lib/libtiff.a" "$2"
}

build_openjpeg() {
  run "$2" cmake -S "$1" -B "$1/_b" "${CMAKE_COMMON[@]}" -DBUILD_STATIC_LIBS=ON -DBUILD_CODEC=OFF \
    -DBUILD_TESTING=OFF -DBUILD_DOC=OFF -DBUILD_JPIP=OFF -DBUILD_JPWL=OFF -DBUILD_MJ2=OFF
  run "$2" cmake --build "$1/_b" -j"$JOBS"
  run "$2" cmake --install "$1/_b"
  cap_allocations "$OUT/lib/libopenjp2.a" "$2"
}

# cap_allocations ARCHIVE LOG: renames the archive's calls of malloc,
# calloc, realloc, free and posix_memalign (every allocation OpenJPEG and
# libtiff make goes through them) to codec/capalloc.c's, which count what
# one decode holds and cap it near its estimate: a wrong estimate fails
# the image as "too large" instead of taking the server's memory. Only
# archives that package codec alone links (it holds capalloc.c): not
# libturbojpeg.a, which internal/testimg links too, nor zlib's, so the
# JPEG strips' libjpeg and the Deflate strips' zlib memory of a TIFF is
# not counted.
cap_allocations() {
  local f sym=()
  for f in malloc calloc realloc free posix_memalign; do sym+=(--redefine-sym "$f=sl_cap_$f"); done
  run "$2" objcopy "${sym[@]}" "$1"
}

build_dav1d() {
  run "$2" meson setup "$1/_b" "$1" --prefix="$OUT" --libdir=lib --buildtype=release -Ddefault_library=static \
    -Db_staticpic=true -Denable_tools=false -Denable_tests=false -Denable_examples=false
  run "$2" ninja -C "$1/_b" -j"$JOBS" install
}

# source_versions SRC WANT: WANT, then every other version of source
# package SRC that the sources list, newest first; one a line.
source_versions() {
  local v i sorted=()
  echo "$2"
  while read -r v; do # insertion sort in Debian's version order
    [ "$v" != "$2" ] && [[ " ${sorted[*]} " != *" $v "* ]] || continue
    for ((i = ${#sorted[@]}; i > 0; i--)); do
      dpkg --compare-versions "$v" gt "${sorted[i-1]}" || break
      sorted[i]=${sorted[i-1]}
    done
    sorted[i]=$v
  done < <(apt-cache "${APTO[@]}" showsrc "$1" 2>/dev/null | sed -n 's/^Version: //p')
  [ ${#sorted[@]} -eq 0 ] || printf '%s\n' "${sorted[@]}"
}

# fetch SRC WANT DIR: unpacks into DIR the first version of source package
# SRC that the archive serves, WANT first, and prints that version.
fetch() {
  local v why tried=()
  while read -r v; do
    rm -rf "$3" && mkdir -p "$3"
    if (cd "$3" && apt-get -qq "${APTO[@]}" source "$1=$v" >"$3.log" 2>&1); then
      [ "$v" = "$2" ] ||
        log "$1: the archive does not serve the source of the installed $2; building $v, the newest source version it serves"
      echo "$v"
      return 0
    fi
    # The cause: a 404, a version not listed, else apt's first error (a file:
    # repository's "File not found", a name that does not resolve, ...).
    why=$(grep -m1 -oE '[0-9]{3} +Not Found|Unable to find a source package.*|Can not find version.*' "$3.log" ||
      sed -n '/^E: /{s/^E: //;s/^Failed to fetch [^ ]* *//;p;q}' "$3.log" || true)
    log "$1 $v: apt-get source failed${why:+: $why}"
    tried+=("$v${why:+ ($why)}")
  done < <(source_versions "$1" "$2")
  local IFS=,
  die "no source of $1 can be had (installed: $2); versions tried: ${tried[*]}"
}

mkdir -p "$OUT/stamps"
for item in "${todo[@]}"; do
  read -r src ver fn <<<"$item"
  rm -f "$OUT/stamps/$src"
  log "fetching the source of $src $ver"
  built=$(fetch "$src" "$ver" "$WORK/$src")
  dir=$(find "$WORK/$src" -mindepth 1 -maxdepth 1 -type d | head -1)
  [ -n "$dir" ] || die "apt-get source $src=$built unpacked nothing"
  log "building $(basename "$dir") ($src $built) with -fPIC"
  start=$SECONDS
  "$fn" "$dir" "$WORK/$src.log"
  rm -rf "$dir"
  echo "$src $ver $RECIPE $built" > "$OUT/stamps/$src"
  log "built $src $built in $((SECONDS - start))s"
done
log "$OUT is up to date"
