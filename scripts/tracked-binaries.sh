#!/usr/bin/env bash
# tracked-binaries.sh fails if git tracks a compiled program or library: any
# file of `git ls-files` that starts with the ELF magic (0x7f 'E' 'L' 'F').
# Built commands belong in bin/ or build/, which .gitignore keeps out.
set -euo pipefail
cd "$(dirname "$0")/.."
git rev-parse --is-inside-work-tree >/dev/null || { echo "tracked-binaries: not a git checkout" >&2; exit 1; }

status=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	if [ "$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; then
		echo "tracked-binaries: $f is a compiled ELF file; git rm --cached it (built files go in bin/ or build/)" >&2
		status=1
	fi
done < <(git ls-files -z)
[ $status -eq 0 ] && echo "tracked-binaries: no ELF file tracked"
exit $status
