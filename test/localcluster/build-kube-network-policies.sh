#!/usr/bin/env bash
# Builds sigs.k8s.io/kube-network-policies VERSION from the Go module proxy, static, with
# kube-network-policies-xt-queue.patch applied, into OUT (`make kube-network-policies`).
#
#   test/localcluster/build-kube-network-policies.sh VERSION OUT
#
# The patch: upstream queues packets with the nftables queue expression, which needs a kernel
# with CONFIG_NFT_QUEUE; this machine's kernel has not got it (every rule update fails with
# "netlink receive: no such file or directory" and nothing is enforced), but has the iptables
# NFQUEUE target, which nftables reaches through nft_compat. The patch uses that target instead,
# with the same queue number and bypass flag; nothing else changes.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${1:?usage: $0 VERSION OUT}"
out="${2:?usage: $0 VERSION OUT}"
src="$(go mod download -json "sigs.k8s.io/kube-network-policies@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -d "$src" ] || { echo "go mod download gave no source folder for kube-network-policies@$version" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$src/." "$work"
chmod -R u+w "$work"
(cd "$work" && patch -s -p1 <"$here/kube-network-policies-xt-queue.patch" &&
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp" ./cmd)
mv "$out.tmp" "$out"
echo "built $out (kube-network-policies $version, xt NFQUEUE patch)"
