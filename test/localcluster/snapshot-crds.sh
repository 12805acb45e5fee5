#!/usr/bin/env bash
# The VolumeSnapshot CRDs (snapshot.storage.k8s.io/v1: VolumeSnapshotClass, VolumeSnapshotContent,
# VolumeSnapshot) committed under test/crds/snapshot/, for the local cluster (cluster.sh applies
# them) and for envtest suites, which must not need the network. They are the files of the
# external-snapshotter client module at the version test/localcluster/snapshotter/go.mod pins
# (the snapshot-controller of the local cluster is built from the same pin).
#
#   test/localcluster/snapshot-crds.sh refresh   copy them from the Go module cache (downloads
#                                                the pinned module through the proxy if needed)
#   test/localcluster/snapshot-crds.sh check     fail when the committed files differ from them
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dest="$repo/test/crds/snapshot"
module=github.com/kubernetes-csi/external-snapshotter/client/v8
files=(snapshot.storage.k8s.io_volumesnapshotclasses.yaml snapshot.storage.k8s.io_volumesnapshotcontents.yaml snapshot.storage.k8s.io_volumesnapshots.yaml)

version="$(cd "$here/snapshotter" && go list -m -f '{{.Version}}' "$module")"
src="$(cd "$here/snapshotter" && go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')/config/crd"
[ -d "$src" ] || { echo "no $src" >&2; exit 1; }

case "${1:-}" in
refresh)
	mkdir -p "$dest"
	for f in "${files[@]}"; do cp "$src/$f" "$dest/$f" && chmod 0644 "$dest/$f"; done
	echo "$version" >"$dest/VERSION"
	echo "test/crds/snapshot: the VolumeSnapshot CRDs of $module $version"
	;;
check)
	rc=0
	[ "$(cat "$dest/VERSION" 2>/dev/null)" = "$version" ] || { echo "test/crds/snapshot/VERSION is not $version" >&2; rc=1; }
	for f in "${files[@]}"; do cmp -s "$src/$f" "$dest/$f" || { echo "test/crds/snapshot/$f differs from $module $version" >&2; rc=1; }; done
	[ "$rc" = 0 ] && echo "test/crds/snapshot matches $module $version" ||
		echo "run test/localcluster/snapshot-crds.sh refresh (make snapshot-crds) and commit" >&2
	exit "$rc"
	;;
*) echo "usage: $0 refresh|check" >&2; exit 2 ;;
esac
