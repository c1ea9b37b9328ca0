"""scripts/pic-libs.sh's choice of source version, against a local apt
repository instead of the network: the archive the script was written
against lists zlib's installed source version and answers 404 for its files,
so here the repository decides which versions can be had.

The repository (file: URI, flat, deb-src [trusted=yes]) holds synthetic
source packages named zlib, built with dpkg-source and listed with
dpkg-scansources. Each is a tiny library with zlib's build interface
(`./configure --static --prefix --libdir`, `make libz.a`, `make install`)
whose zlibVersion() returns a marker naming its version, so a program
linked against PREFIX/lib/libz.a tells which source was built.
PIC_LIBS_ONLY=zlib1g-dev keeps the script to zlib, PIC_LIBS_SOURCES points
it at the repository.
"""

import glob
import os
import pathlib
import re
import shutil
import subprocess
import tarfile
import textwrap
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "pic-libs.sh"

if os.geteuid() != 0:
    pytest.skip("scripts/pic-libs.sh installs build tools with apt-get: needs root", allow_module_level=True)
for _tool in ("apt-get", "apt-cache", "dpkg-source", "dpkg-scansources", "dpkg-query", "cc", "make"):
    if not shutil.which(_tool):
        pytest.skip(f"{_tool} not found (dpkg-dev, apt and a C compiler are needed)", allow_module_level=True)

CONFIGURE = r"""#!/bin/sh
# zlib's configure interface, as scripts/pic-libs.sh calls it.
set -e
prefix= libdir= static=
for a in "$@"; do
  case $a in
    --static) static=1 ;;
    --prefix=*) prefix=${a#--prefix=} ;;
    --libdir=*) libdir=${a#--libdir=} ;;
    *) echo "configure: unknown option $a" >&2; exit 2 ;;
  esac
done
[ -n "$static" ] && [ -n "$prefix" ] && [ -n "$libdir" ] ||
  { echo "configure: want --static --prefix --libdir" >&2; exit 2; }
T=$(printf '\t')
cat > Makefile <<EOF
CC = ${CC:-cc}
CFLAGS = $CFLAGS
prefix = $prefix
libdir = $libdir
libz.a: zlib.c zlib.h
${T}\$(CC) \$(CFLAGS) -c zlib.c -o zlib.o
${T}ar rcs libz.a zlib.o
install: libz.a
${T}mkdir -p \$(libdir) \$(prefix)/include
${T}cp libz.a \$(libdir)/
${T}cp zlib.h \$(prefix)/include/
EOF
"""

PROGRAM = """#include <stdio.h>
#include <zlib.h>
int main(void) { puts(zlibVersion()); return 0; }
"""


def marker(version):
    return f"synthetic zlib {version}"


def installed_version():
    return subprocess.run(
        ["dpkg-query", "-W", "-f=${source:Version}", "zlib1g-dev"], capture_output=True, text=True, check=True
    ).stdout.strip()


def source_package(repo, work, version):
    """Builds source package zlib VERSION into REPO: "3.0 (native)" for a
    version without a Debian revision, else "3.0 (quilt)" with an orig
    tarball."""
    noepoch = version.split(":", 1)[-1]
    upstream, _, revision = noepoch.rpartition("-") if "-" in noepoch else (noepoch, "", "")
    d = work / f"zlib-{upstream}"
    (d / "debian" / "source").mkdir(parents=True)
    (d / "configure").write_text(CONFIGURE)
    (d / "configure").chmod(0o755)
    (d / "zlib.h").write_text("const char *zlibVersion(void);\n")
    (d / "zlib.c").write_text(f'#include "zlib.h"\nconst char *zlibVersion(void) {{ return "{marker(version)}"; }}\n')
    if revision:
        with tarfile.open(work / f"zlib_{upstream}.orig.tar.gz", "w:gz") as t:
            for f in ("configure", "zlib.h", "zlib.c"):
                t.add(d / f, f"zlib-{upstream}/{f}")
    (d / "debian" / "source" / "format").write_text("3.0 (quilt)\n" if revision else "3.0 (native)\n")
    (d / "debian" / "control").write_text(
        textwrap.dedent("""\
            Source: zlib
            Maintainer: Sluice tests <tests@sluice.invalid>
            Standards-Version: 4.6.2

            Package: zlib1g-dev
            Architecture: any
            Description: synthetic zlib for tests/test_pic_libs.py
             A library with zlib's build interface and one function.
            """)
    )
    (d / "debian" / "changelog").write_text(
        f"zlib ({version}) unstable; urgency=medium\n\n  * Synthetic.\n\n"
        " -- Sluice tests <tests@sluice.invalid>  Tue, 01 Dec 2026 00:00:00 +0000\n"
    )
    (d / "debian" / "rules").write_text("#!/usr/bin/make -f\n%:\n\tdh $@\n")
    (d / "debian" / "rules").chmod(0o755)
    subprocess.run(["dpkg-source", "-b", d.name], cwd=work, capture_output=True, text=True, check=True)
    for f in work.glob("zlib_*"):
        shutil.copy(f, repo)


@pytest.fixture
def make_repo(tmp_path):
    """make_repo(versions, unserved=()) -> a deb-src sources.list for a
    flat file: repository listing source package zlib at VERSIONS, with the
    files of the UNSERVED ones removed (listed, but not to be had: the
    archive's 404)."""

    def make(versions, unserved=()):
        repo = tmp_path / "repo"
        repo.mkdir()
        for i, v in enumerate(versions):
            work = tmp_path / f"src{i}"
            work.mkdir()
            source_package(repo, work, v)
        sources = subprocess.run(["dpkg-scansources", "."], cwd=repo, capture_output=True, text=True, check=True)
        (repo / "Sources").write_text(sources.stdout)
        for v in unserved:
            noepoch = v.split(":", 1)[-1]
            for f in repo.glob(f"zlib_{glob.escape(noepoch)}.*"):
                f.unlink()
        lst = tmp_path / "sources.list"
        lst.write_text(f"deb-src [trusted=yes] file:{repo} ./\n")
        return lst

    return make


def pic_libs(sources, prefix):
    env = dict(os.environ, PIC_LIBS_ONLY="zlib1g-dev", PIC_LIBS_SOURCES=str(sources))
    cmd = ["bash", str(SCRIPT), str(prefix)]
    return subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)


def linked_version(prefix, tmp_path):
    """What zlibVersion() says in PREFIX/lib/libz.a."""
    (tmp_path / "prog.c").write_text(PROGRAM)
    exe = tmp_path / "prog"
    subprocess.run(
        ["cc", f"-I{prefix}/include", str(tmp_path / "prog.c"), f"{prefix}/lib/libz.a", "-o", str(exe)], check=True
    )
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.strip()


def stamp(prefix):
    """PREFIX/stamps/zlib: SOURCE INSTALLED RECIPE BUILT."""
    return (prefix / "stamps" / "zlib").read_text().split()


def recipe():
    return re.search(r"^RECIPE=(\S+)", SCRIPT.read_text(), re.M).group(1)


def older(v, than):
    return subprocess.run(["dpkg", "--compare-versions", v, "lt", than]).returncode == 0


def test_newest_served_version_when_the_installed_one_is_not(make_repo, tmp_path):
    inst = installed_version()
    assert older("1:1.2.12", inst), inst
    prefix = tmp_path / "pic"
    p = pic_libs(make_repo(["1:1.2.10", "1:1.2.12"]), prefix)
    assert p.returncode == 0, p.stderr
    assert (
        f"zlib: the archive does not serve the source of the installed {inst}; "
        "building 1:1.2.12, the newest source version it serves"
    ) in p.stderr, p.stderr
    assert re.search(rf"zlib {re.escape(inst)}: apt-get source failed", p.stderr), p.stderr
    assert "building zlib-1.2.12 (zlib 1:1.2.12)" in p.stderr, p.stderr
    assert "ERROR" not in p.stderr, p.stderr
    assert stamp(prefix) == ["zlib", inst, recipe(), "1:1.2.12"]
    assert linked_version(prefix, tmp_path) == marker("1:1.2.12")

    # Up to date: the stamp stands for the installed version, so nothing is
    # fetched or built again.
    before = (prefix / "lib" / "libz.a").stat().st_mtime_ns
    start = time.monotonic()
    again = pic_libs(tmp_path / "sources.list", prefix)
    took = time.monotonic() - start
    assert again.returncode == 0, again.stderr
    assert took < 10, f"a rerun with nothing to do took {took:.1f}s"
    assert "building" not in again.stderr and "fetching" not in again.stderr, again.stderr
    assert (prefix / "lib" / "libz.a").stat().st_mtime_ns == before


def test_no_source_at_all_fails_naming_what_was_tried(make_repo, tmp_path):
    inst = installed_version()
    prefix = tmp_path / "pic"
    p = pic_libs(make_repo([]), prefix)
    assert p.returncode == 1, p.stderr
    errors = [line for line in p.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, p.stderr
    want = f"pic-libs.sh: ERROR: no source of zlib can be had (installed: {inst}); versions tried: {inst} ("
    assert errors[0].startswith(want), errors[0]
    assert "," not in errors[0].split("versions tried: ", 1)[1], errors[0]  # the installed one alone
    assert not (prefix / "stamps" / "zlib").exists()
    assert not (prefix / "lib" / "libz.a").exists()


def test_installed_version_when_served(make_repo, tmp_path):
    """The installed version, served, wins over an older and a newer one."""
    inst = installed_version()
    newer = "1:9.9.9"
    assert older(inst, newer), inst
    prefix = tmp_path / "pic"
    p = pic_libs(make_repo(["1:1.2.12", inst, newer]), prefix)
    assert p.returncode == 0, p.stderr
    assert "does not serve" not in p.stderr and "failed" not in p.stderr, p.stderr
    assert stamp(prefix) == ["zlib", inst, recipe(), inst]
    assert linked_version(prefix, tmp_path) == marker(inst)


def test_listed_but_not_served(make_repo, tmp_path):
    """The archive's case: the installed version (and here the next older
    one too) is listed, but its files cannot be downloaded."""
    inst = installed_version()
    prefix = tmp_path / "pic"
    p = pic_libs(make_repo(["1:1.2.10", "1:1.2.12", inst], unserved=[inst, "1:1.2.12"]), prefix)
    assert p.returncode == 0, p.stderr
    assert re.search(rf"zlib {re.escape(inst)}: apt-get source failed", p.stderr), p.stderr
    assert "zlib 1:1.2.12: apt-get source failed" in p.stderr, p.stderr
    assert f"installed {inst}; building 1:1.2.10, the newest source version it serves" in p.stderr, p.stderr
    assert stamp(prefix) == ["zlib", inst, recipe(), "1:1.2.10"]
    assert linked_version(prefix, tmp_path) == marker("1:1.2.10")


def test_nothing_served_fails_naming_every_version(make_repo, tmp_path):
    inst = installed_version()
    listed = ["1:1.2.10", "1:1.2.12", inst]
    p = pic_libs(make_repo(listed, unserved=listed), tmp_path / "pic")
    assert p.returncode == 1, p.stderr
    errors = [line for line in p.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, p.stderr
    head = f"pic-libs.sh: ERROR: no source of zlib can be had (installed: {inst}); versions tried: "
    assert errors[0].startswith(head), errors[0]
    # Newest first, each with apt's reason.
    tried = re.findall(r"(?:^|,)(\S+) \(File not found", errors[0][len(head) :])
    assert tried == [inst, "1:1.2.12", "1:1.2.10"], errors[0]
