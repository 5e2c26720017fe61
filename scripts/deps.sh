#!/usr/bin/env bash
# deps.sh installs the Debian packages EtherGM's tests, demo or benchmarks need,
# only those that are missing (idempotent).
# Usage: scripts/deps.sh [--list] test|bench|demo|screenshot
# --list prints "COMMAND PACKAGE" for every command of the set and installs nothing.
#
# "test" is everything `make test` runs: the unit tests, the netns suites
# (which include TestNetnsBench and its UDP and TCP baselines) and the tshark
# suites, so it is a superset of "bench" and "demo". When a test starts to
# run a new program, add it here (command, then the Debian package that has it).
set -euo pipefail

list=0
if [ "${1:-}" = --list ]; then
	list=1
	shift
fi

want=()
need() { # need COMMAND PACKAGE
	if [ $list = 1 ]; then
		echo "$1 $2"
		return 0
	fi
	command -v "$1" >/dev/null 2>&1 && return 0
	local p
	for p in "${want[@]}"; do
		[ "$p" = "$2" ] && return 0
	done
	want+=("$2")
}

# Namespaces, links, bridges; CPU pinning, priorities and credentials.
base() {
	need ip iproute2
	need bridge iproute2
	need taskset util-linux
	need setpriv util-linux
	need setcap libcap2-bin
	need nice coreutils
	need env coreutils
}

# libgm (GM's C API, cgo) and the C programs built against it: the C
# ping-pong of the benchmarks and the C tests.
libgm() {
	need gcc gcc
	need pkg-config pkg-config
}

# The benchmarks' baselines: UDP (sockperf) and TCP (NetPIPE).
baselines() {
	need sockperf sockperf
	need NPtcp netpipe-tcp
}

case "${1:-test}" in
test)
	# Spelled out (not "base; baselines") so that the set reads whole here.
	need ip iproute2
	need bridge iproute2
	need tc iproute2 # the incast tests' tbf bottleneck (gm TestIntegrationIncast*)
	need taskset util-linux
	need setpriv util-linux
	need setcap libcap2-bin
	need nice coreutils
	need env coreutils
	need sockperf sockperf
	need NPtcp netpipe-tcp
	need tshark tshark
	need dumpcap wireshark-common # tshark depends on it; named for clarity
	need gcc gcc                  # libgm (cgo) and its C test programs
	need pkg-config pkg-config    # the C programs build with $(pkg-config --cflags --libs gm)
	;;
bench)
	base
	baselines
	libgm
	;;
demo)
	need ip iproute2
	need bridge iproute2
	;;
screenshot)
	need wireshark wireshark
	need Xvfb xvfb
	need xdotool xdotool
	need import imagemagick
	;;
*)
	echo "deps.sh: unknown set '$1' (want test, bench, demo or screenshot)" >&2
	exit 2
	;;
esac

[ $list = 1 ] && exit 0
[ ${#want[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing ${want[*]}; run as root or install them: apt-get install ${want[*]}" >&2
	exit 1
fi
echo "deps.sh: installing ${want[*]} from Debian"
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
