#!/usr/bin/env bash
# Builds the local cluster's snapshot-controller into OUT (`make snapshotter`): the
# external-snapshotter's cmd/snapshot-controller from the Go module proxy, static. Its module
# replaces the client module by ./client, which the module zip lacks, so it is built from the
# wrapper module test/localcluster/snapshotter, whose go.mod pins both modules (a `tool`
# directive names the command).
#
#   test/localcluster/build-snapshotter.sh OUT
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: $0 OUT}"
start=$(date +%s)
cmd=github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller
(cd "$here/snapshotter" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp" "$cmd")
mv "$out.tmp" "$out"
echo "built $out ($(cd "$here/snapshotter" && go list -m -f '{{.Path}} {{.Version}}' github.com/kubernetes-csi/external-snapshotter/v8)) in $(($(date +%s) - start))s"
