#!/usr/bin/env bash
# fuzz-targets.sh lists every Go fuzz target as ./pkg:FuzzName, one per line.
set -euo pipefail
grep -rlE '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' --include='*_test.go' . |
	while read -r file; do
		pkg=./$(dirname "${file#./}")
		grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | sed "s|^func |$pkg:|"
	done | sort -u
