#!/usr/bin/env bash
# libgm.sh builds and installs libgm, GM's C API (package libgm, the only
# cgo in EtherGM).
#
#   scripts/libgm.sh build OUT [PREFIX]   OUT/include/gm.h, OUT/lib/libgm.so,
#                                         OUT/lib/libgm.a, OUT/lib/pkgconfig/gm.pc
#   scripts/libgm.sh install OUT DEST PREFIX
#                                         copies them into DEST (DESTDIR+PREFIX)
#
# gm.pc names PREFIX (default /usr/local), so that after `make install`
# `cc prog.c $(pkg-config --cflags --libs gm)` works.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

cmd=${1:-}
out=${2:-build}

pc() { # pc PREFIX
	cat <<PC
prefix=$1
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: gm
Description: Myricom GM's C API over Ethernet (EtherGM)
Version: 2.0
Cflags: -I\${includedir}
Libs: -L\${libdir} -lgm
Libs.private: -lpthread
PC
}

case "$cmd" in
build)
	prefix=${3:-/usr/local}
	if ! command -v "${CC:-gcc}" >/dev/null 2>&1; then
		echo "libgm.sh: no C compiler (${CC:-gcc}): install gcc (scripts/deps.sh test does)" >&2
		exit 1
	fi
	mkdir -p "$out/include" "$out/lib/pkgconfig"
	CGO_ENABLED=1 $GO build -trimpath -buildmode=c-shared \
		-ldflags '-extldflags=-Wl,-soname,libgm.so' -o "$out/lib/libgm.so" ./libgm
	CGO_ENABLED=1 $GO build -trimpath -buildmode=c-archive -o "$out/lib/libgm.a" ./libgm
	# cgo writes its own export header beside each library: not part of the API.
	rm -f "$out/lib/libgm.h"
	install -m 0644 libgm/include/gm.h "$out/include/gm.h"
	pc "$prefix" >"$out/lib/pkgconfig/gm.pc"
	echo "libgm: $out/include/gm.h $out/lib/libgm.so $out/lib/libgm.a $out/lib/pkgconfig/gm.pc"
	;;
install)
	dest=${3:?DEST}
	prefix=${4:?PREFIX}
	install -d "$dest/include" "$dest/lib/pkgconfig"
	install -m 0644 "$out/include/gm.h" "$dest/include/gm.h"
	install -m 0755 "$out/lib/libgm.so" "$dest/lib/libgm.so"
	install -m 0644 "$out/lib/libgm.a" "$dest/lib/libgm.a"
	pc "$prefix" >"$dest/lib/pkgconfig/gm.pc"
	echo "installed gm.h, libgm.so, libgm.a and gm.pc in $dest"
	;;
*)
	echo "usage: scripts/libgm.sh build OUT [PREFIX] | install OUT DEST PREFIX" >&2
	exit 2
	;;
esac
