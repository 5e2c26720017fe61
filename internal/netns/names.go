package netns

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
)

// Prefix starts the name of every namespace, bridge and switch-side veth this
// package (and cluster.sh) creates.
const Prefix = "egm"

// Limits on [Options]: names must fit IFNAMSIZ (15 bytes) and host and rail
// numbers must fit one MAC address byte.
const (
	MaxHosts = 256 // hosts 0..255
	MaxRails = 10  // rails 0..9
)

// runCounter distinguishes clusters built by one process.
var runCounter atomic.Uint32

// newRunID returns a fresh run id: six lower-case hex digits holding 10 bits
// of the process id, 4 bits of a per-process counter and 10 random bits.
func newRunID() string {
	pid := uint32(os.Getpid()) & 0x3ff
	n := runCounter.Add(1) & 0xf
	r := rand.Uint32() & 0x3ff
	return fmt.Sprintf("%06x", pid<<14|n<<10|r)
}

// validRunID reports whether s looks like a run id.
func validRunID(s string) bool {
	if len(s) != 6 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// runIDOf returns the run id embedded in a namespace or link name created by
// this package, or "" if name is not one of ours.
func runIDOf(name string) string {
	if !strings.HasPrefix(name, Prefix) || len(name) < len(Prefix)+6 {
		return ""
	}
	id := name[len(Prefix) : len(Prefix)+6]
	if !validRunID(id) {
		return ""
	}
	return id
}

// hostName is the name of host i (also its EtherGM host name).
func hostName(i int) string { return fmt.Sprintf("host%d", i) }

// nsName is the namespace name of role ("host0", "sw", "relay") in run id.
func nsName(id, role string) string { return Prefix + id + "-" + role }

// bridgeName is the name of the bridge of rail r.
func bridgeName(id string, rail int) string { return fmt.Sprintf("%s%sbr%d", Prefix, id, rail) }

// portName is the switch-side (or relay-side) name of host h's rail r veth.
func portName(id string, host, rail int) string {
	return fmt.Sprintf("%s%sh%dr%d", Prefix, id, host, rail)
}

// ifaceName is the host-side name of the rail r interface.
func ifaceName(rail int) string { return fmt.Sprintf("eth%d", rail) }

// hostMAC is the MAC address of host h's rail r interface.
func hostMAC(id string, host, rail int) net.HardwareAddr {
	return mac(id, byte(host), byte(rail))
}

// portMAC is the MAC address of the switch-side peer of host h's rail r
// interface.
func portMAC(id string, host, rail int) net.HardwareAddr {
	return mac(id, byte(host), 0x80|byte(rail))
}

func mac(id string, a, b byte) net.HardwareAddr {
	var v uint32
	fmt.Sscanf(id, "%06x", &v)
	return net.HardwareAddr{0x02, byte(v >> 16), byte(v >> 8), byte(v), a, b}
}

// hostPrefix is the IPv4 address and prefix of host h's rail r interface:
// 198.18.r.(h+1)/24, and for the hosts a /24 cannot number (254 and 255)
// 198.19.r.(h-253)/24, which the other hosts do not reach over IPv4.
func hostPrefix(host, rail int) netip.Prefix {
	if host >= 254 {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(rail), byte(host - 253)}), 24)
	}
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(rail), byte(host + 1)}), 24)
}

// hostIndex is the ifindex of rail r's interface on the first (0) or
// second (1) host of a veth pair; portIndex is the ifindex of host h's rail
// r port on the switch. All differ from their peers' ifindexes: a veth
// whose ifindex equals its peer's makes the kernel delay its carrier
// events by up to a second (linkwatch_urgent_event).
func hostIndex(side, rail int) int { return 10 + 40*side + rail }

// portIndex: see hostIndex.
func portIndex(host, rail int) int { return 1000 + 16*host + rail }
