#!/usr/bin/env bash
# fuzz.sh runs every fuzz target (scripts/fuzz-targets.sh) for FUZZTIME each
# and fails on the first target that fails.
#
# A run that fails with nothing but "context deadline exceeded" at the end
# of its -fuzztime, with no failing input written, is a race in Go 1.26's
# fuzzing coordinator (go.dev/issue/75804, fixed in Go 1.27): the deadline
# reaches a worker before its cancellation is recognised as the normal end.
# Such a run is repeated once; a failing input, a panic, a test failure or a
# second deadline failure fails the target.
set -uo pipefail
FUZZTIME=${FUZZTIME:-15s}
GO=${GO:-go}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for target in $(scripts/fuzz-targets.sh); do
	pkg=${target%%:*}
	name=${target##*:}
	for try in 1 2; do
		echo "fuzz $pkg $name"
		"$GO" test -run='^$' -fuzz="^$name\$" -fuzztime="$FUZZTIME" -fuzzminimizetime=5s "$pkg" 2>&1 | tee "$log"
		status=${PIPESTATUS[0]}
		[ "$status" -eq 0 ] && break
		if [ "$try" -eq 1 ] && grep -q 'context deadline exceeded' "$log" &&
			! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$log"; then
			echo "fuzz.sh: $name ended with Go 1.26's fuzztime deadline race (go.dev/issue/75804), no failing input: running it again"
			continue
		fi
		exit "$status"
	done
done
