#!/usr/bin/env bash
# layering.sh checks with `go list -deps` that the pure packages (frame
# formats, tokens, the protocol engine, the mapper's core) link no I/O:
# no sockets, no raw syscalls, no link layer, no capture, no subprocesses.
# A package that fails names the import chain to look at with
# `go list -deps` / `go mod why`.
set -euo pipefail
cd "$(dirname "$0")/.."

pure=(./wire ./token ./gm/internal/proto)
[ -d mapper ] && pure+=(./mapper)
forbidden='^(net|os/exec|os/signal|golang\.org/x/sys/unix|github\.com/mdlayher/.*|github\.com/google/gopacket.*|github\.com/ethergm/ethergm/(gm/link|capture|ctl|gm))$'

status=0
for p in "${pure[@]}"; do
	bad=$(go list -deps "$p" | grep -E "$forbidden" || true)
	if [ -n "$bad" ]; then
		echo "layering: $p must not import (directly or not): $(echo $bad)" >&2
		status=1
	fi
done
[ $status -eq 0 ] && echo "layering: ${pure[*]} link no I/O packages"
exit $status
