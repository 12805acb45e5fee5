#!/usr/bin/env bash
# make test's suites: every package with go test, the topology suite in TOPOLOGY_PROCS
# parallel processes (ginkgo -p: each its own API server, controller and Valkey servers) and,
# alongside (the suites mostly wait on their servers), the topology suite again on Redis 7
# (make test-redis), both printed at the end; then the real-server config tests
# again on Valkey 8.1 (the live-key table and the recorded directives), where its wheel has a
# build. All must pass.
#
#   hack/test.sh [go test flags...]
set -uo pipefail
mkdir -p .local
"${MAKE:-make}" --no-print-directory test-redis >.local/test-redis.log 2>&1 &
redis=$!
go run github.com/onsi/ginkgo/v2/ginkgo --procs="${TOPOLOGY_PROCS:-3}" --timeout=30m "$@" ./topologycontroller/ >.local/test-topology.log 2>&1 &
topology=$!
# test/threecontrollers (three binaries, their API server and Valkey servers) runs after the
# other packages, so that its load does not bend their timing; the topology suites outlast both.
go test $(go list ./... | grep -v -e '/topologycontroller$' -e '/test/threecontrollers$') -timeout 30m "$@"
rc=$?
go test ./test/threecontrollers/ -timeout 15m "$@" || rc=1
wait "$topology"
topology_rc=$?
wait "$redis"
redis_rc=$?
cat .local/test-topology.log .local/test-redis.log
old_rc=0
if old="$(test/valkeyserver/install-8.1.sh)"; then
	echo "config tests again on $("$old/valkey-server" --version | cut -d' ' -f1-3)"
	VALKEY_SERVER="$old/valkey-server" go test ./internal/valkeyconf/realserver/ -count=1 "$@"
	old_rc=$?
fi
[ "$rc" -eq 0 ] && [ "$topology_rc" -eq 0 ] && [ "$redis_rc" -eq 0 ] && [ "$old_rc" -eq 0 ]
