# Shell helpers shared by the repository's scripts: source it, don't run it.
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"     (from scripts/)
# log and die name the script that runs ($0), so a message says whose it is.

log() { echo "${0##*/}: $*" >&2; }
die() { echo "${0##*/}: ERROR: $*" >&2; exit 1; }

# mb BYTES: "12.34 MiB". size PATH...: the bytes under the paths, 0 for none.
mb() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
size() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

# corpus_dir: the photo corpus, $SLUICE_CORPUS or ../shared/corpus beside the
# repository.
corpus_dir() { echo "${SLUICE_CORPUS:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/corpus}"; }
