#!/bin/sh
# install.sh copies the EtherGM Lua dissector into the personal Wireshark
# plugin folder, where Wireshark and tshark load it at start-up
# (make wireshark-install runs this script).
#
#   wire/wireshark/install.sh            install for the current user
#   wire/wireshark/install.sh --remove   uninstall
#
# The folder is ~/.local/lib/wireshark/plugins ("Personal Lua Plugins" in
# `tshark -G folders`); WIRESHARK_PLUGIN_DIR overrides it. After installing,
# do not also pass -X lua_script:ethergm.lua (the dissector would ignore the
# second copy).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src="$here/ethergm.lua"
dir="${WIRESHARK_PLUGIN_DIR:-${HOME:?HOME is not set}/.local/lib/wireshark/plugins}"
dst="$dir/ethergm.lua"

case "${1:-}" in
--remove | -r)
	rm -f "$dst"
	echo "removed $dst"
	exit 0
	;;
"") ;;
*)
	echo "usage: $0 [--remove]" >&2
	exit 2
	;;
esac

[ -f "$src" ] || {
	echo "install.sh: $src not found" >&2
	exit 1
}
mkdir -p "$dir"
cp "$src" "$dst.tmp"
mv "$dst.tmp" "$dst"
echo "installed $dst"

# Check that it loads, when tshark is at hand.
if command -v tshark >/dev/null 2>&1; then
	if tshark -G protocols 2>/dev/null | grep -q '	ethergm$'; then
		echo "tshark loads it: $(tshark -G protocols 2>/dev/null | grep '	ethergm$' | cut -f1)"
	else
		echo "install.sh: warning: tshark does not list the ethergm protocol; check $dst" >&2
		exit 1
	fi
fi
