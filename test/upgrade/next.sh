#!/usr/bin/env bash
# The two manifests of this tree the operator-upgrade spec applies (test/e2e/operatorupgrade_test.go):
#
# - .local/upgrade/current.yaml: deploy/local rendered (the images `make images` built);
# - .local/upgrade/next.yaml: the same with the workload controller's image tagged
#   valkey.local/workload-controller:next, the same binaries packed again (built by
#   `make images` in .local/images/bin): a release that changes nothing but the controllers'
#   image, hence valkey-start's, which must restart no Valkey pod. Imported when the local
#   cluster is up.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$repo/.local/upgrade"
bin="${IMAGES_DIR:-$repo/.local/images}/bin"
mkdir -p "$out"
for f in imagepack workload-controller valkey-start; do
	[ -x "$bin/$f" ] || { echo "no $bin/$f: run make images first" >&2; exit 1; }
done
"$bin/imagepack" -out "$out/workload-controller-next.tar" -tag valkey.local/workload-controller:next \
	-entrypoint /usr/local/bin/workload-controller -user 65532:65532 -passwd nonroot:65532:65532:/ \
	"$bin/workload-controller=/usr/local/bin/workload-controller" "$bin/valkey-start=/usr/local/bin/valkey-start"
kubectl kustomize "$repo/deploy/local" >"$out/current.yaml"
sed 's#valkey\.local/workload-controller:dev#valkey.local/workload-controller:next#' "$out/current.yaml" >"$out/next.yaml"
grep -q 'workload-controller:next' "$out/next.yaml" || { echo "no workload controller image in deploy/local" >&2; exit 1; }
"$repo/test/localcluster/cluster.sh" import "$out/workload-controller-next.tar"
