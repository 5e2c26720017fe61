#!/usr/bin/env bash
# layering.sh checks with `go list -deps` that the pure packages (frame
# formats, tokens, the protocol engine, the mapper's core) link no I/O:
# no sockets, no raw syscalls, no link layer, no capture, no subprocesses.
# A package that fails names the import chain to look at with
# `go list -deps` / `go mod why`. It also checks that the port and its
# link do not link package capture (gopacket), and that no package outside
# tests/ imports tests/... from its non-test files.
set -euo pipefail
cd "$(dirname "$0")/.."

pure=(./wire ./wire/auth ./token ./gm/internal/proto)
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

# Capture decorates the link (capture.Writer.Wrap): the port and its link must not
# link the pcap writer, so that a program that does not capture does not
# link gopacket; nor the in-memory test links.
core=(./gm ./gm/link)
nocapture='^(github\.com/google/gopacket.*|github\.com/ethergm/ethergm/(capture|gm/link/linktest))$'
cstatus=0
for p in "${core[@]}"; do
	bad=$(go list -deps "$p" | grep -E "$nocapture" || true)
	if [ -n "$bad" ]; then
		echo "layering: $p must not import (directly or not): $(echo $bad) (attach capture with gm.Config.WrapLink = w.Wrap)" >&2
		cstatus=1
	fi
done
[ $cstatus -eq 0 ] && echo "layering: ${core[*]} link no capture (gopacket) and no test links"
[ $cstatus -eq 0 ] || status=1

# Test helpers live under tests/: no package outside tests/ may import
# them from its non-test files, so that the installed commands and the
# library build without test code (the netns cluster is internal/netns).
mod=$(go list -m)
bad=$(go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... |
	awk -v t="$mod/tests/" 'index($1, t) != 1 { for (i = 2; i <= NF; i++) if (index($i, t) == 1) print $1 " imports " $i }')
if [ -n "$bad" ]; then
	echo "$bad" | sed 's/^/layering: /; s/$/ (test helpers are for _test.go files)/' >&2
	status=1
else
	echo "layering: no non-test package imports $mod/tests/..."
fi
exit $status
