#!/usr/bin/env bash
# Builds the local cluster's DNS server into OUT (`make coredns`): CoreDNS (pinned in
# test/localcluster/coredns/go.mod, from the Go module proxy) with only the plugins the
# cluster needs (test/localcluster/coredns/main.go), static.
#
#   test/localcluster/build-coredns.sh OUT
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: $0 OUT}"
start=$(date +%s)
(cd "$here/coredns" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp" .)
mv "$out.tmp" "$out"
echo "built $out ($(sed -n 's/^[[:space:]]*github.com\/coredns\/coredns \(v[^ ]*\).*/coredns \1/p' "$here/coredns/go.mod")) in $(($(date +%s) - start))s"
