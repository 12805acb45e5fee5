#!/usr/bin/env bash
# make test's suites: every package with go test and, alongside (the topology suite mostly
# waits on its servers), the topology suite again on Redis 7 (make test-redis), whose output
# is printed at the end. Both must pass.
#
#   hack/test.sh [go test flags...]
set -uo pipefail
mkdir -p .local
"${MAKE:-make}" --no-print-directory test-redis >.local/test-redis.log 2>&1 &
redis=$!
go test ./... -timeout 30m "$@"
rc=$?
wait "$redis"
redis_rc=$?
cat .local/test-redis.log
[ "$rc" -eq 0 ] && [ "$redis_rc" -eq 0 ]
