package link

import (
	"testing"

	"golang.org/x/net/bpf"

	"github.com/ethergm/ethergm/wire"
)

// runFilter runs prog on frame in bpf.NewVM with the packet type pktType:
// the one pkt_type extension load is replaced by a constant load (same
// instruction count, so every jump stays valid).
func runFilter(t *testing.T, prog []bpf.Instruction, frame []byte, pktType uint32) int {
	t.Helper()
	p := append([]bpf.Instruction(nil), prog...)
	found := 0
	for i, ins := range p {
		if ext, ok := ins.(bpf.LoadExtension); ok && ext.Num == bpf.ExtType {
			p[i] = bpf.LoadConstant{Dst: bpf.RegA, Val: pktType}
			found++
		}
	}
	if found != 1 {
		t.Fatalf("program has %d pkt_type loads, want 1", found)
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
	normal := func(ports PortMask) filterSpec {
		return filterSpec{etherType: wire.EtherType, ports: ports, port: -1, mac: own, snap: acceptAll}
	}
	selfTest := filterSpec{etherType: wire.EtherType, port: int(wire.PortNone), mac: own, matchSrcOnOutgoing: true, snap: acceptAll}
	doorbell := normal(1 << 3)
	doorbell.snap = 1
	tests := []struct {
		name    string
		spec    filterSpec
		frame   []byte
		pktType uint32
		want    int
	}{
		{"all ports, port 0", normal(AllPorts), frame(own, peer, wire.EtherType, 0), pktHost, acceptAll},
		{"all ports, port 31", normal(AllPorts), frame(own, peer, wire.EtherType, 31), pktHost, acceptAll},
		{"all ports, port 32", normal(AllPorts), frame(own, peer, wire.EtherType, 32), pktHost, 0},
		{"all ports, PortNone", normal(AllPorts), frame(own, peer, wire.EtherType, wire.PortNone), pktHost, 0},
		{"wrong EtherType", normal(AllPorts), frame(own, peer, 0x88B6, 0), pktHost, 0},
		{"IPv4", normal(AllPorts), frame(own, peer, 0x0800, 0), pktHost, 0},
		{"mask, port in", normal(1<<3 | 1<<7), frame(own, peer, wire.EtherType, 7), pktHost, acceptAll},
		{"mask, port out", normal(1<<3 | 1<<7), frame(own, peer, wire.EtherType, 4), pktHost, 0},
		{"mask, port 35 (shift wraps)", normal(1<<3 | 1<<7), frame(own, peer, wire.EtherType, 35), pktHost, 0},
		{"one bit, match", normal(1 << 5), frame(own, peer, wire.EtherType, 5), pktHost, acceptAll},
		{"one bit, other", normal(1 << 5), frame(own, peer, wire.EtherType, 6), pktHost, 0},
		{"one bit 31", normal(1 << 31), frame(own, peer, wire.EtherType, 31), pktHost, acceptAll},
		{"broadcast", normal(AllPorts), frame(wire.Broadcast, peer, wire.EtherType, 1), pktBroadcast, acceptAll},
		{"multicast", normal(AllPorts), frame([6]byte{1, 0x80, 0xc2, 0, 0, 0xe}, peer, wire.EtherType, 1), pktMulticast, acceptAll},
		{"other host", normal(AllPorts), frame(other, peer, wire.EtherType, 1), pktOtherHost, 0},
		{"outgoing to self", normal(AllPorts), frame(own, own, wire.EtherType, 1), pktOutgoing, acceptAll},
		{"outgoing to peer", normal(AllPorts), frame(peer, own, wire.EtherType, 1), pktOutgoing, 0},
		{"outgoing broadcast", normal(AllPorts), frame(wire.Broadcast, own, wire.EtherType, 1), pktOutgoing, 0},
		{"outgoing, MAC differs in last 2 bytes", normal(AllPorts), frame([6]byte{0x02, 0, 0, 0, 1, 0x01}, own, wire.EtherType, 1), pktOutgoing, 0},
		{"doorbell snap", doorbell, frame(own, peer, wire.EtherType, 3), pktHost, 1},
		{"doorbell other port", doorbell, frame(own, peer, wire.EtherType, 2), pktHost, 0},
		{"self-test frame", selfTest, frame(own, own, wire.EtherType, wire.PortNone), pktOutgoing, acceptAll},
		{"self-test, incoming", selfTest, frame(own, own, wire.EtherType, wire.PortNone), pktHost, 0},
		{"self-test, other source", selfTest, frame(own, peer, wire.EtherType, wire.PortNone), pktOutgoing, 0},
		{"self-test, port 0", selfTest, frame(own, own, wire.EtherType, 0), pktOutgoing, 0},
		{"short frame", normal(AllPorts), []byte{1, 2, 3}, pktHost, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runFilter(t, buildFilter(tt.spec), tt.frame, tt.pktType); got != tt.want {
				t.Errorf("filter returned %d, want %d", got, tt.want)
			}
		})
	}
}

func TestFilterAssembles(t *testing.T) {
	for _, ports := range []PortMask{AllPorts, 1, 1 << 31, 0x0000FFFF, 0x80000001} {
		prog := buildFilter(filterSpec{etherType: wire.EtherType, ports: ports, port: -1, snap: acceptAll})
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
