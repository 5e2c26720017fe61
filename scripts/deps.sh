#!/usr/bin/env bash
# deps.sh installs the Debian packages EtherGM's tests, demo or benchmarks need,
# only those that are missing (idempotent). Usage: scripts/deps.sh test|bench|demo|screenshot
set -euo pipefail

want=()
need() { # need COMMAND PACKAGE
	command -v "$1" >/dev/null 2>&1 || want+=("$2")
}

case "${1:-test}" in
test)
	need ip iproute2
	need tshark tshark
	need taskset util-linux
	;;
bench)
	need ip iproute2
	need taskset util-linux
	need sockperf sockperf
	need NPtcp netpipe-tcp
	;;
demo)
	need ip iproute2
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
