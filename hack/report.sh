#!/usr/bin/env bash
# Runs a command, shows its output as it comes, and writes the lines of it that hold figures
# into a dated report, docs/reports/<name>.md, with the commit and the machine, so figures that
# change with each run are never edited by hand. The command's exit status is kept.
#
#   hack/report.sh <name> <title> <extended-regexp of the lines to keep> -- <command...>
set -uo pipefail
name="$1" title="$2" keep="$3"
shift 3
[ "${1:-}" = -- ] && shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$here/docs/reports/$name.md"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
start=$(date +%s)
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
took=$(($(date +%s) - start))

commit="$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
[ -z "$(git -C "$here" status --porcelain 2>/dev/null)" ] || commit="$commit (with uncommitted changes)"
cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
mem="$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
mkdir -p "$(dirname "$out")"
{
	echo "# $title"
	echo
	echo "Written by \`hack/report.sh\` at the end of the run; do not edit by hand."
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- commit: $commit"
	echo "- machine: $(nproc) cores ($cpu), $mem, $(uname -sr)"
	echo "- command: \`$*\`, exit status $rc, $took s"
	echo
	echo '```'
	sed -E 's/\x1b\[[0-9;]*m//g' "$log" | grep -E "$keep" | sed -E 's/^[[:space:]]+//; s/^[a-z_]+_test\.go:[0-9]+: //'
	echo '```'
} >"$out"
echo "report: $out"
exit "$rc"
