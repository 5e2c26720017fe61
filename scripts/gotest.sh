#!/usr/bin/env bash
# gotest.sh runs every Go test (unit and netns integration) with the race
# detector, prints the names of the integration tests that ran, and fails if
# any test failed or if a netns test skipped while ETHERGM_REQUIRE_NETNS=1.
set -uo pipefail

log_dir=${RESULTS:-results}
mkdir -p "$log_dir"
log="$log_dir/test.log"

export ETHERGM_REQUIRE_NETNS=${ETHERGM_REQUIRE_NETNS:-1}
if [ "$ETHERGM_REQUIRE_NETNS" = 1 ] && [ "$(id -u)" -ne 0 ]; then
	echo "gotest.sh: the netns integration tests need root (CAP_NET_ADMIN, CAP_NET_RAW): run 'sudo make test'" >&2
	exit 1
fi

# -race needs cgo; everything else is also checked with CGO_ENABLED=0 by the Makefile.
CGO_ENABLED=1 go test -race -shuffle=on -count=1 -timeout=15m -v "$@" ./... >"$log" 2>&1
status=$?

grep -E '^(ok|FAIL|---|panic:)|^\s+--- (FAIL|SKIP)' "$log" | grep -vE '^\s*--- PASS' || true
echo
echo "Integration (netns) tests that ran:"
grep -E '^--- (PASS|FAIL|SKIP): Test(Integration|Netns)' "$log" | sed 's/^/  /' || echo "  (none)"

passed=$(grep -cE '^\s*--- PASS' "$log")
failed=$(grep -cE '^\s*--- FAIL' "$log")
skipped=$(grep -cE '^\s*--- SKIP' "$log")
integration=$(grep -cE '^--- PASS: Test(Integration|Netns)' "$log")

if [ "$ETHERGM_REQUIRE_NETNS" = 1 ]; then
	if grep -qE '^\s*--- SKIP: Test(Integration|Netns)' "$log"; then
		echo "gotest.sh: netns tests skipped although ETHERGM_REQUIRE_NETNS=1:" >&2
		grep -A2 -E '^\s*--- SKIP: Test(Integration|Netns)' "$log" >&2
		status=1
	fi
	if [ "$integration" -eq 0 ]; then
		echo "gotest.sh: no netns integration test ran" >&2
		status=1
	fi
fi
if [ $status -ne 0 ]; then
	echo "gotest.sh: failures; full output in $log" >&2
	grep -B5 -A30 -E '^\s*--- FAIL|^panic:|^FAIL\s' "$log" | tail -150 >&2
fi
echo "go test: $passed passed, $failed failed, $skipped skipped ($integration netns integration tests)"
exit $status
