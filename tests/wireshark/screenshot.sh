#!/bin/sh
# screenshot.sh renders docs/img/wireshark.png: Wireshark (Qt) running under
# Xvfb on the example capture wire/wireshark/testdata/example.pcapng with the
# EtherGM Lua dissector loaded, the CONFIG frame selected and its EtherGM
# tree expanded.
#
#   tests/wireshark/screenshot.sh [CAPTURE [OUTPUT.png]]
#
# Environment: SHOT_FRAME (the frame to select, default 18, the CONFIG frame
# of the example), SHOT_FILTER (display filter, default "ethergm").
#
# It installs what is missing from Debian's packages (wireshark-qt, xvfb,
# imagemagick, xdotool; root needed for that), uses a throw-away Wireshark
# profile (window geometry, pane sizes and zoom are fixed there so that the
# clicks below land on the right rows), and stops every process it started.
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
capture=${1:-$root/wire/wireshark/testdata/example.pcapng}
out=${2:-$root/docs/img/wireshark.png}
frame=${SHOT_FRAME:-18}
filter=${SHOT_FILTER:-ethergm}

# Layout, in pixels of the virtual screen: the window fills it; the packet
# list pane is upper_pane high; rows are row_h high at zoom level -1.
width=1280
height=1310
upper_pane=320
row_h=14

# --- packages -------------------------------------------------------------
missing=""
command -v wireshark >/dev/null 2>&1 || missing="$missing wireshark-qt"
command -v Xvfb >/dev/null 2>&1 || missing="$missing xvfb"
command -v import >/dev/null 2>&1 || missing="$missing imagemagick"
command -v xdotool >/dev/null 2>&1 || missing="$missing xdotool"
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "screenshot.sh: missing$missing; run as root or: sudo apt-get install$missing" >&2
		exit 1
	fi
	echo "screenshot.sh: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
	apt-get update -q >/dev/null
	# shellcheck disable=SC2086 # word splitting of the package list is wanted
	apt-get install -y -q --no-install-recommends $missing >/dev/null
fi
[ -f "$capture" ] || {
	echo "screenshot.sh: $capture not found (ETHERGM_UPDATE_EXAMPLE=1 go test -run TestDissectorSample ./tests/wireshark/)" >&2
	exit 1
}
capture=$(cd "$(dirname "$capture")" && pwd)/$(basename "$capture")

# --- a throw-away profile --------------------------------------------------
tmp=$(mktemp -d)
xvfb_pid=""
ws_pid=""
cleanup() {
	[ -n "$ws_pid" ] && kill "$ws_pid" 2>/dev/null || true
	[ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null || true
	[ -n "$ws_pid" ] && wait "$ws_pid" 2>/dev/null || true
	[ -n "$xvfb_pid" ] && wait "$xvfb_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

conf=$tmp/.config/wireshark
mkdir -p "$conf" "$tmp/runtime"
chmod 700 "$tmp/runtime"
cat >"$conf/recent_common" <<EOF
gui.geometry_main_x: 0
gui.geometry_main_y: 0
gui.geometry_main_width: $width
gui.geometry_main_height: $height
gui.geometry_main_maximized: FALSE
privs.warn_if_elevated: FALSE
sys.warn_if_no_capture: FALSE
EOF
cat >"$conf/recent" <<EOF
gui.byte_view_show: FALSE
gui.packet_diagram_show: FALSE
gui.zoom_level: -1
gui.geometry_main_upper_pane: $upper_pane
gui.geometry_main_lower_pane: 0
EOF

# --- Xvfb ------------------------------------------------------------------
Xvfb -displayfd 3 -screen 0 "${width}x${height}x24" -nolisten tcp 3>"$tmp/display" 2>"$tmp/xvfb.log" &
xvfb_pid=$!
i=0
while [ ! -s "$tmp/display" ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || {
		echo "screenshot.sh: Xvfb did not start:" >&2
		cat "$tmp/xvfb.log" >&2
		exit 1
	}
	sleep 0.1
done
DISPLAY=:$(cat "$tmp/display")
export DISPLAY

# --- Wireshark ---------------------------------------------------------------
HOME=$tmp XDG_CONFIG_HOME=$tmp/.config XDG_RUNTIME_DIR=$tmp/runtime \
	wireshark -X "lua_script:$root/wire/wireshark/ethergm.lua" -r "$capture" \
	-Y "$filter" -g "$frame" >"$tmp/wireshark.log" 2>&1 &
ws_pid=$!

# Wait for the main window, titled after the capture file.
name=$(basename "$capture")
i=0
until xdotool search --onlyvisible --name "^$name" >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 300 ] || {
		echo "screenshot.sh: no Wireshark window after 30 s:" >&2
		cat "$tmp/wireshark.log" >&2
		exit 1
	}
	kill -0 "$ws_pid" 2>/dev/null || {
		echo "screenshot.sh: wireshark exited:" >&2
		cat "$tmp/wireshark.log" >&2
		exit 1
	}
	sleep 0.1
done
sleep 3 # let it read the file, apply the filter and select the frame
if grep -qi "lua" "$tmp/wireshark.log"; then
	echo "screenshot.sh: Lua trouble:" >&2
	cat "$tmp/wireshark.log" >&2
	exit 1
fi

# Click the third row of the packet details (Frame, Ethernet II, EtherGM)
# and expand its subtrees (View > Expand Subtrees, Shift+Right).
details_top=$((95 + upper_pane))
xdotool mousemove 120 $((details_top + 2 * row_h + row_h / 2)) click 1
sleep 0.5
xdotool key shift+Right
sleep 1
xdotool mousemove $((width - 5)) $((height - 5))
sleep 0.3

mkdir -p "$(dirname "$out")"
import -window root -colors 256 "PNG8:$out"
xdotool key ctrl+q >/dev/null 2>&1 || true
sleep 1
echo "wrote $out ($(wc -c <"$out") bytes)"
