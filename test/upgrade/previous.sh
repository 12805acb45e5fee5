#!/usr/bin/env bash
# Builds the operator as it was at an earlier commit, for the operator-upgrade spec
# (test/e2e/operatorupgrade_test.go, `make e2e-upgrade`):
#
#   test/upgrade/previous.sh COMMIT [TAG]
#
# - the commit's tree, from this repository's own history (git archive), in
#   .local/upgrade/<commit>-TAG/src (its Helm chart, when it has one, is
#   .local/upgrade/<commit>-TAG/src/deploy/helm/valkey-operator);
# - its three controllers and valkey-start, built there (its own go.mod), packed as
#   valkey.local/{volume,workload,topology}-controller:TAG (default: previous) by this tree's
#   image packer (test/images), the same layout as `make images`, and imported when the local
#   cluster is up;
# - its deploy/local, rendered with those images: .local/upgrade/TAG.yaml (the spec applies
#   it, then this tree's deploy/local over it), and the commit in .local/upgrade/TAG.commit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
from="${1:?usage: test/upgrade/previous.sh COMMIT [TAG]}"
tag="${2:-previous}"
sha="$(git -C "$repo" rev-parse --verify "$from^{commit}")"
out="$repo/.local/upgrade"
dir="$out/${sha:0:12}-$tag"
src="$dir/src"
bin="$dir/bin"
start=$(date +%s)

if [ ! -f "$dir/done" ]; then
	rm -rf "$dir"
	mkdir -p "$src" "$bin"
	git -C "$repo" archive "$sha" | tar -x -C "$src"
	(cd "$src" && CGO_ENABLED=0 go build -ldflags "-s -w" -o "$bin/valkey-start" ./cmd/valkey-start)
	for c in volume workload topology; do
		(cd "$src" && CGO_ENABLED=0 go build -ldflags "-s -w" -o "$bin/$c-controller" "./cmd/$c-controller")
	done
	(cd "$repo/test/images" && CGO_ENABLED=0 go build -trimpath -o "$bin/imagepack" .)
	for c in volume workload topology; do
		extra=()
		[ "$c" != workload ] || extra=("$bin/valkey-start=/usr/local/bin/valkey-start")
		"$bin/imagepack" -out "$dir/$c-controller.tar" -tag "valkey.local/$c-controller:$tag" \
			-entrypoint "/usr/local/bin/$c-controller" -user 65532:65532 -passwd nonroot:65532:65532:/ \
			"$bin/$c-controller=/usr/local/bin/$c-controller" "${extra[@]}"
	done
	touch "$dir/done"
fi
kubectl kustomize "$src/deploy/local" |
	sed -E "s#(valkey\.local/(volume|workload|topology)-controller):dev#\1:$tag#" >"$out/$tag.yaml"
grep -q "controller:$tag" "$out/$tag.yaml" || { echo "no controller image of $sha in its deploy/local" >&2; exit 1; }
echo "$sha" >"$out/$tag.commit"
echo "operator at ${sha:0:12} built in $(($(date +%s) - start))s: $out/$tag.yaml"
"$repo/test/localcluster/cluster.sh" import "$dir"/*-controller.tar
