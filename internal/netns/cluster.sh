#!/usr/bin/env bash
# cluster.sh: build the EtherGM test topology of package internal/netns by hand.
#
#   cluster.sh up N [--rails R] [--mtu M] [--direct | --relay]
#       Build N hosts (network namespaces egm<id>-host<i>), each with one veth
#       per rail (eth0, eth1, ...). Rail r's other ends are ports of bridge
#       egm<id>br<r> in namespace egm<id>-sw. --direct joins 2 hosts with one
#       veth pair per rail; --relay joins 2 hosts through namespace
#       egm<id>-relay, where you run egm-relay (internal/netns/cmd/egm-relay).
#       MACs are 02:<id>:<host>:<rail>; eth<r> of host i has 198.18.<r>.<i+1>/24.
#   cluster.sh exec HOST cmd...   run cmd in HOST (host0, 0, sw or relay) of
#                                 the current cluster (-c ID for another one)
#   cluster.sh list               list the clusters made by this script
#   cluster.sh down [ID | --all]  remove the current (or given, or every)
#                                 cluster made by this script
#
# State: one file per cluster in /run/ethergm/netns/<id> (shared with the Go
# package, whose RemoveStale leaves clusters of this script alone), the
# current id in /run/ethergm/cluster-current. Needs root and iproute2.
set -euo pipefail

PREFIX=egm
STATE_ROOT=/run/ethergm
if ! mkdir -p "$STATE_ROOT/netns" 2>/dev/null; then
	STATE_ROOT="${TMPDIR:-/tmp}/ethergm"
	mkdir -p "$STATE_ROOT/netns"
fi
STATE_DIR=$STATE_ROOT/netns
CURRENT=$STATE_ROOT/cluster-current
UP_ID="" # the run being built by up, removed if up fails

die() { echo "cluster.sh: $*" >&2; exit 1; }
usage() { sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# Names and addresses, as in internal/netns/names.go.
ns_name() { echo "$PREFIX$1-$2"; }                     # id role
bridge_name() { echo "$PREFIX$1br$2"; }                # id rail
port_name() { echo "$PREFIX$1h$2r$3"; }                # id host rail
host_index() { echo $((10 + 40 * $1 + $2)); }          # side rail
port_index() { echo $((1000 + 16 * $1 + $2)); }        # host rail
mac() { printf '02:%s:%s:%s:%02x:%02x' "${1:0:2}" "${1:2:2}" "${1:4:2}" "$2" "$3"; } # id a b
addr() { echo "198.18.$2.$(($1 + 1))/24"; }            # host rail

state_get() { sed -n "s/^$2=//p" "$STATE_DIR/$1" 2>/dev/null; } # id key

current_id() {
	[[ -s $CURRENT ]] || die "no current cluster (cluster.sh up N)"
	cat "$CURRENT"
}

# kill_ns NS: kill every process in NS and delete it.
remove_ns() {
	local ns=$1 pid i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		local pids
		pids=$(ip netns pids "$ns" 2>/dev/null) || break
		[[ -n $pids ]] || break
		for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
		sleep 0.1
	done
	ip netns del "$ns" 2>/dev/null || true
}

# remove_run ID: remove every namespace of run ID and its state.
remove_run() {
	local id=$1 ns
	for ns in $(state_get "$id" ns); do
		remove_ns "$ns"
	done
	# Namespaces not (yet) recorded, e.g. after a failed up.
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX$id-" || true); do
		remove_ns "$ns"
	done
	rm -f "$STATE_DIR/$id"
	if [[ -s $CURRENT && $(cat "$CURRENT") == "$id" ]]; then
		rm -f "$CURRENT"
	fi
}

# wait_up CMD...: retry CMD for up to 10 s.
wait_up() {
	local i
	for ((i = 0; i < 1000; i++)); do
		if "$@"; then return 0; fi
		sleep 0.01
	done
	return 1
}
host_running() { ip -n "$1" -o link show "$2" | grep -q 'state UP '; }
port_ready() { # ns port bridged
	local line
	line=$(ip -n "$1" -o -d link show "$2") || return 1
	[[ $line == *"state UP "* ]] || return 1
	[[ $3 == 0 || $line == *"bridge_slave state forwarding"* ]]
}

# offloads_off NS IFACE: turn off checksum offload, segmentation and GRO,
# as the relay copies frames byte for byte (ethtool, or its legacy ioctls
# from python3 when ethtool is missing).
offloads_off() {
	if command -v ethtool >/dev/null; then
		ip netns exec "$1" ethtool -K "$2" tx off sg off tso off gso off gro off >/dev/null 2>&1
		return
	fi
	command -v python3 >/dev/null || return 1
	ip netns exec "$1" python3 - "$2" <<-'PY'
		import ctypes, fcntl, socket, struct, sys
		s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
		# ETHTOOL_SGRO, SGSO, STSO, STXCSUM, SSG via SIOCETHTOOL.
		for cmd in (0x2c, 0x24, 0x1f, 0x17, 0x19):
		    v = ctypes.create_string_buffer(struct.pack("II", cmd, 0))
		    fcntl.ioctl(s, 0x8946, struct.pack("16sP16x", sys.argv[1].encode(), ctypes.addressof(v)))
	PY
}

cmd_up() {
	local hosts="" rails=1 mtu=1500 mode=switch offloads=on
	while (($#)); do
		case $1 in
		--rails) rails=${2:?}; shift 2 ;;
		--mtu) mtu=${2:?}; shift 2 ;;
		--direct) mode=direct; shift ;;
		--relay) mode=relay; shift ;;
		-h | --help) usage ;;
		*) [[ -z $hosts ]] || usage; hosts=$1; shift ;;
		esac
	done
	[[ $(id -u) == 0 ]] || die "need root"
	command -v ip >/dev/null || die "iproute2 ip command not found"
	[[ $mode == switch ]] || hosts=${hosts:-2}
	[[ $hosts =~ ^[0-9]+$ ]] || usage
	((hosts >= 1 && hosts <= 100)) || die "N must be in 1..100"
	((rails >= 1 && rails <= 10)) || die "--rails must be in 1..10"
	((mtu >= 68 && mtu <= 65535)) || die "--mtu must be in 68..65535"
	[[ $mode == switch ]] || ((hosts == 2)) || die "--$mode needs N=2"
	[[ $mode != relay ]] || ((rails == 1)) || die "--relay needs one rail"

	# Reserve a run id: the state file is created exclusively.
	local id="" try
	for try in 1 2 3 4 5 6 7 8; do
		id=$(printf '%06x' $(((($$ & 0x3ff) << 14) | (try << 10) | (RANDOM & 0x3ff))))
		if ! ls /run/netns/"$PREFIX$id"* >/dev/null 2>&1 &&
			(set -o noclobber; printf 'pid=%s\nstart=\nowner=script\nhosts=%s\nrails=%s\nmtu=%s\nmode=%s\n' \
				$$ "$hosts" "$rails" "$mtu" "$mode" >"$STATE_DIR/$id") 2>/dev/null; then
			break
		fi
		id=""
	done
	[[ -n $id ]] || die "no free run id"
	UP_ID=$id
	trap 'if [[ -n $UP_ID ]]; then echo "cluster.sh: up failed, removing $UP_ID" >&2; remove_run "$UP_ID"; fi' EXIT
	trap 'exit 130' INT TERM

	local sw="" i r
	local -a nss=()
	for ((i = 0; i < hosts; i++)); do nss+=("$(ns_name "$id" "host$i")"); done
	case $mode in
	switch) sw=$(ns_name "$id" sw) ;;
	relay) sw=$(ns_name "$id" relay) ;;
	esac
	[[ -z $sw ]] || nss+=("$sw")
	local ns
	for ns in "${nss[@]}"; do
		ip netns add "$ns"
		echo "ns=$ns" >>"$STATE_DIR/$id"
		ip netns exec "$ns" sh -c 'for p in default all; do echo 1 > /proc/sys/net/ipv6/conf/$p/disable_ipv6; done' 2>/dev/null || true
		ip -n "$ns" link set lo up
	done

	for ((i = 0; i < hosts; i++)); do
		local hns
		hns=$(ns_name "$id" "host$i")
		for ((r = 0; r < rails; r++)); do
			if [[ $mode == direct ]]; then
				if ((i == 0)); then
					ip -n "$hns" link add "eth$r" index "$(host_index 0 "$r")" address "$(mac "$id" 0 "$r")" mtu "$mtu" \
						type veth peer name "eth$r" index "$(host_index 1 "$r")" address "$(mac "$id" 1 "$r")" mtu "$mtu" \
						netns "$(ns_name "$id" host1)"
				fi
			else
				ip -n "$hns" link add "eth$r" index "$(host_index 0 "$r")" address "$(mac "$id" "$i" "$r")" mtu "$mtu" \
					type veth peer name "$(port_name "$id" "$i" "$r")" index "$(port_index "$i" "$r")" \
					address "$(mac "$id" "$i" $((0x80 | r)))" mtu "$mtu" netns "$sw"
			fi
		done
	done
	for ((i = 0; i < hosts; i++)); do
		hns=$(ns_name "$id" "host$i")
		for ((r = 0; r < rails; r++)); do
			ip -n "$hns" addr add "$(addr "$i" "$r")" dev "eth$r"
			ip -n "$hns" link set "eth$r" up
		done
	done
	if [[ $mode == switch ]]; then
		for ((r = 0; r < rails; r++)); do
			local br
			br=$(bridge_name "$id" "$r")
			ip -n "$sw" link add "$br" mtu "$mtu" type bridge stp_state 0 forward_delay 0
			for ((i = 0; i < hosts; i++)); do
				ip -n "$sw" link set "$(port_name "$id" "$i" "$r")" master "$br"
				ip -n "$sw" link set "$(port_name "$id" "$i" "$r")" up
			done
			ip -n "$sw" link set "$br" up
		done
	elif [[ $mode == relay ]]; then
		offloads=off
		for ((i = 0; i < 2; i++)); do
			ip -n "$sw" link set "$(port_name "$id" "$i" 0)" up
			offloads_off "$(ns_name "$id" "host$i")" eth0 || offloads=on
		done
	fi

	for ((i = 0; i < hosts; i++)); do
		for ((r = 0; r < rails; r++)); do
			wait_up host_running "$(ns_name "$id" "host$i")" "eth$r" || die "host$i eth$r not up"
			if [[ -n $sw ]]; then
				local bridged=1
				[[ $mode == switch ]] || bridged=0
				wait_up port_ready "$sw" "$(port_name "$id" "$i" "$r")" $bridged ||
					die "port $(port_name "$id" "$i" "$r") not forwarding"
			fi
		done
	done
	echo "$id" >"$CURRENT"
	UP_ID=""
	trap - EXIT INT TERM

	echo "cluster $id: $hosts host(s), $rails rail(s), MTU $mtu, $mode"
	for ((i = 0; i < hosts; i++)); do
		local line="  host$i  ns $(ns_name "$id" "host$i")"
		for ((r = 0; r < rails; r++)); do
			line+="  eth$r $(mac "$id" "$i" "$r") $(addr "$i" "$r")"
		done
		echo "$line"
	done
	[[ -z $sw ]] || echo "  $mode  ns $sw"
	echo
	echo "Run commands in a host:"
	echo "  ip netns exec $(ns_name "$id" host0) ip addr"
	echo "  $0 exec host0 ip addr"
	if [[ $mode == relay ]]; then
		echo "Start the relay (build it with: go build -o /usr/local/bin/ ./internal/netns/cmd/egm-relay):"
		echo "  ip netns exec $sw egm-relay -a $(port_name "$id" 0 0) -b $(port_name "$id" 1 0) -drop 0.01"
		[[ $offloads == off ]] ||
			echo "  (could not turn host offloads off: UDP/TCP through the relay may fail; EtherGM frames are fine)"
	fi
	echo "Remove it:"
	echo "  $0 down $id"
}

cmd_exec() {
	local id
	if [[ ${1:-} == -c ]]; then id=${2:?}; shift 2; else id=$(current_id); fi
	local host=${1:?usage: cluster.sh exec HOST cmd...}
	shift
	(($#)) || die "usage: cluster.sh exec HOST cmd..."
	[[ $host =~ ^[0-9]+$ ]] && host=host$host
	local ns
	ns=$(ns_name "$id" "$host")
	[[ -e /run/netns/$ns ]] || die "no namespace $ns"
	exec ip netns exec "$ns" "$@"
}

cmd_list() {
	local f id
	for f in "$STATE_DIR"/*; do
		[[ -f $f ]] || continue
		id=${f##*/}
		[[ $(state_get "$id" owner) == script ]] || continue
		echo "$id hosts=$(state_get "$id" hosts) rails=$(state_get "$id" rails) mtu=$(state_get "$id" mtu) mode=$(state_get "$id" mode)"
	done
}

cmd_down() {
	local id=${1:-}
	if [[ $id == --all ]]; then
		for id in $(cmd_list | awk '{print $1}'); do
			remove_run "$id"
			echo "removed $id"
		done
		return
	fi
	[[ -n $id ]] || id=$(current_id)
	[[ $id =~ ^[0-9a-f]{6}$ ]] || die "bad cluster id $id"
	[[ -f $STATE_DIR/$id && $(state_get "$id" owner) == script ]] ||
		die "cluster $id was not made by cluster.sh (try: go run ./internal/netns/cmd/egm-netns-clean)"
	remove_run "$id"
	echo "removed $id"
}

case ${1:-} in
up) shift; cmd_up "$@" ;;
exec) shift; cmd_exec "$@" ;;
list) cmd_list ;;
down) shift; cmd_down "$@" ;;
*) usage ;;
esac
