package link

import (
	"testing"

	"golang.org/x/net/bpf"

	"github.com/ethergm/ethergm/wire"
)

// runFilter runs prog on frame in bpf.NewVM as if it arrived on interface
// ifindex with packet type pktType: the ifindex and pkt_type extension
// loads (which bpf.NewVM does not implement) are replaced by constant loads
// (same instruction count, so every jump stays valid).
func runFilter(t *testing.T, prog []bpf.Instruction, frame []byte, ifindex int, pktType uint32) int {
	t.Helper()
	p := append([]bpf.Instruction(nil), prog...)
	for i, ins := range p {
		if ext, ok := ins.(bpf.LoadExtension); ok {
			switch ext.Num {
			case bpf.ExtType:
				p[i] = bpf.LoadConstant{Dst: bpf.RegA, Val: pktType}
			case bpf.ExtInterfaceIndex:
				p[i] = bpf.LoadConstant{Dst: bpf.RegA, Val: uint32(ifindex)}
			default:
				t.Fatalf("program loads extension %v", ext.Num)
			}
		}
	}
	vm, err := bpf.NewVM(p)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	n, err := vm.Run(frame)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return n
}

func TestFilter(t *testing.T) {
	own := [6]byte{0x02, 0, 0, 0, 0, 0x01}
	peer := [6]byte{0x02, 0, 0, 0, 0, 0x02}
	other := [6]byte{0x02, 0, 0, 0, 0, 0x03}
	frame := func(dst, src [6]byte, etherType uint16, port uint8) []byte {
		f := wire.HeaderFields{Type: wire.TypeDatagram, TargetPort: port}
		return wire.AppendFrame(nil, dst, src, etherType, &f, []byte("payload"))
	}
	const dev, lo, rail2 = 7, 1, 8 // interface indexes
	normal := func(ports PortMask) filterSpec {
		return filterSpec{etherType: wire.EtherType, ports: ports, port: -1, mac: own, ifindex: dev, loIndex: lo, snap: acceptAll}
	}
	noLo := normal(AllPorts)
	noLo.loIndex = 0
	selfTest := filterSpec{etherType: wire.EtherType, port: int(wire.PortNone), mac: own, loIndex: lo, selfTest: true, snap: acceptAll}
	doorbell := normal(1 << 3)
	doorbell.snap = 1
	tests := []struct {
		name    string
		spec    filterSpec
		frame   []byte
		ifindex int
		pktType uint32
		want    int
	}{
		{"all ports, port 0", normal(AllPorts), frame(own, peer, wire.EtherType, 0), dev, pktHost, acceptAll},
		{"all ports, port 31", normal(AllPorts), frame(own, peer, wire.EtherType, 31), dev, pktHost, acceptAll},
		{"all ports, port 32", normal(AllPorts), frame(own, peer, wire.EtherType, 32), dev, pktHost, 0},
		{"all ports, PortNone", normal(AllPorts), frame(own, peer, wire.EtherType, wire.PortNone), dev, pktHost, 0},
		{"wrong EtherType", normal(AllPorts), frame(own, peer, 0x88B6, 0), dev, pktHost, 0},
		{"IPv4", normal(AllPorts), frame(own, peer, 0x0800, 0), dev, pktHost, 0},
		{"mask, port in", normal(1<<3 | 1<<7), frame(own, peer, wire.EtherType, 7), dev, pktHost, acceptAll},
		{"mask, port out", normal(1<<3 | 1<<7), frame(own, peer, wire.EtherType, 4), dev, pktHost, 0},
		{"mask, port 35 (shift wraps)", normal(1<<3 | 1<<7), frame(own, peer, wire.EtherType, 35), dev, pktHost, 0},
		{"one bit, match", normal(1 << 5), frame(own, peer, wire.EtherType, 5), dev, pktHost, acceptAll},
		{"one bit, other", normal(1 << 5), frame(own, peer, wire.EtherType, 6), dev, pktHost, 0},
		{"one bit 31", normal(1 << 31), frame(own, peer, wire.EtherType, 31), dev, pktHost, acceptAll},
		{"broadcast", normal(AllPorts), frame(wire.Broadcast, peer, wire.EtherType, 1), dev, pktBroadcast, acceptAll},
		{"multicast", normal(AllPorts), frame([6]byte{1, 0x80, 0xc2, 0, 0, 0xe}, peer, wire.EtherType, 1), dev, pktMulticast, acceptAll},
		{"other host", normal(AllPorts), frame(other, peer, wire.EtherType, 1), dev, pktOtherHost, 0},
		{"outgoing to self", normal(AllPorts), frame(own, own, wire.EtherType, 1), dev, pktOutgoing, acceptAll},
		{"outgoing to peer", normal(AllPorts), frame(peer, own, wire.EtherType, 1), dev, pktOutgoing, 0},
		{"outgoing broadcast", normal(AllPorts), frame(wire.Broadcast, own, wire.EtherType, 1), dev, pktOutgoing, 0},
		{"outgoing, MAC differs in last 2 bytes", normal(AllPorts), frame([6]byte{0x02, 0, 0, 0, 1, 0x01}, own, wire.EtherType, 1), dev, pktOutgoing, 0},
		{"doorbell snap", doorbell, frame(own, peer, wire.EtherType, 3), dev, pktHost, 1},
		{"doorbell other port", doorbell, frame(own, peer, wire.EtherType, 2), dev, pktHost, 0},
		{"self-test frame", selfTest, frame(own, own, wire.EtherType, wire.PortNone), lo, pktOtherHost, acceptAll},
		{"self-test, other source", selfTest, frame(own, peer, wire.EtherType, wire.PortNone), lo, pktOtherHost, 0},
		{"self-test, port 0", selfTest, frame(own, own, wire.EtherType, 0), lo, pktOtherHost, 0},
		{"short frame", normal(AllPorts), []byte{1, 2, 3}, dev, pktHost, 0},
		{"lo, to our MAC", normal(AllPorts), frame(own, own, wire.EtherType, 1), lo, pktOtherHost, acceptAll},
		{"lo, to our MAC, from a peer MAC", normal(AllPorts), frame(own, peer, wire.EtherType, 1), lo, pktOtherHost, acceptAll},
		{"lo, to another MAC", normal(AllPorts), frame(other, own, wire.EtherType, 1), lo, pktOtherHost, 0},
		{"lo, to our MAC, port not in mask", normal(1 << 3), frame(own, own, wire.EtherType, 4), lo, pktOtherHost, 0},
		{"other interface (another rail)", normal(AllPorts), frame(own, peer, wire.EtherType, 1), rail2, pktHost, 0},
		{"no lo: our interface", noLo, frame(own, peer, wire.EtherType, 1), dev, pktHost, acceptAll},
		{"no lo: frame on lo", noLo, frame(own, own, wire.EtherType, 1), lo, pktOtherHost, 0},
		{"self-test, on the interface", selfTest, frame(own, own, wire.EtherType, wire.PortNone), dev, pktHost, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runFilter(t, buildFilter(tt.spec), tt.frame, tt.ifindex, tt.pktType); got != tt.want {
				t.Errorf("filter returned %d, want %d", got, tt.want)
			}
		})
	}
}

func TestFilterAssembles(t *testing.T) {
	for _, ports := range []PortMask{AllPorts, 1, 1 << 31, 0x0000FFFF, 0x80000001} {
		prog := buildFilter(filterSpec{etherType: wire.EtherType, ports: ports, port: -1, ifindex: 7, loIndex: 1, snap: acceptAll})
		raw, err := bpf.Assemble(prog)
		if err != nil {
			t.Fatalf("ports %#x: %v", ports, err)
		}
		if len(raw) > 24 {
			t.Errorf("ports %#x: %d instructions", ports, len(raw))
		}
	}
}

func TestPortMask(t *testing.T) {
	m := PortMask(1<<0 | 1<<31)
	for p, want := range map[uint8]bool{0: true, 1: false, 31: true, 32: false, 255: false} {
		if m.Has(p) != want {
			t.Errorf("Has(%d) = %v", p, !want)
		}
	}
	if !AllPorts.Has(17) {
		t.Error("AllPorts.Has(17) = false")
	}
}
