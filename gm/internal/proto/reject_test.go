package proto

import (
	"testing"

	"github.com/ethergm/ethergm/wire"
)

// countOut counts the frames an engine sends.
type countOut struct{ n int }

func (o *countOut) Send([]byte) error { o.n++; return nil }
func (o *countOut) SendBatch(f [][]byte) (int, error) {
	o.n += len(f)
	return len(f), nil
}

// rejects sums the counters under which Input records a frame it drops.
func rejects(s Stats) uint64 {
	return s.Malformed + s.StaleDropped + s.OutOfWindow + s.Duplicates + s.Misaddressed + s.Ignored +
		s.DatagramsNoBuffer + s.DatagramsReplayed
}

// TestInputCountsEveryReject feeds an engine one frame of every kind that
// Input drops and checks that each raises a counter by exactly one, and
// that frames claiming node ids the node map does not know allocate no
// peer state (a forger could otherwise make a port allocate about 12 KB
// per claimed (node, port, priority)).
func TestInputCountsEveryReject(t *testing.T) {
	peerMAC := [6]byte{2, 0, 0, 0, 0, 2}
	resolve := func(node uint32) ([6]byte, bool) { return peerMAC, node == 2 }
	e := New(Config{NodeID: 1, Port: 4, MAC: [6]byte{2, 0, 0, 0, 0, 1}, Resolve: resolve}, &countOut{})
	base := wire.HeaderFields{Type: wire.TypeData, TargetPort: 4, SourcePort: 2, TargetNode: 1, SourceNode: 2, Size: 5, Session: 0x1234, Seq: 77, MsgLen: 4}
	frame := func(mod func(f *wire.HeaderFields)) []byte {
		f := base
		mod(&f)
		var payload []byte
		if f.Type.IsData() || f.Type == wire.TypeDatagram {
			payload = []byte("abcd")
		}
		return wire.AppendFrame(nil, [6]byte{2, 0, 0, 0, 0, 1}, peerMAC, wire.EtherType, &f, payload)
	}
	for _, tt := range []struct {
		name  string
		frame []byte
		count func(Stats) uint64
	}{
		{"another target node", frame(func(f *wire.HeaderFields) { f.TargetNode = 9 }), func(s Stats) uint64 { return s.Misaddressed }},
		{"another target port", frame(func(f *wire.HeaderFields) { f.TargetPort = 5 }), func(s Stats) uint64 { return s.Misaddressed }},
		{"source port 16", frame(func(f *wire.HeaderFields) { f.SourcePort = 16 }), func(s Stats) uint64 { return s.Misaddressed }},
		{"source node 0", frame(func(f *wire.HeaderFields) { f.SourceNode = 0 }), func(s Stats) uint64 { return s.Misaddressed }},
		{"source node not in the map", frame(func(f *wire.HeaderFields) { f.SourceNode = 3 }), func(s Stats) uint64 { return s.Misaddressed }},
		{"source node beyond the node ids", frame(func(f *wire.HeaderFields) { f.SourceNode = 1 << 30 }), func(s Stats) uint64 { return s.Misaddressed }},
		{"datagram without a buffer", frame(func(f *wire.HeaderFields) { f.Type = wire.TypeDatagram }), func(s Stats) uint64 { return s.DatagramsNoBuffer }},
		{"datagram replayed", frame(func(f *wire.HeaderFields) { f.Type = wire.TypeDatagram }), func(s Stats) uint64 { return s.DatagramsReplayed }},
		{"datagram of counter 0", frame(func(f *wire.HeaderFields) { f.Type, f.Session, f.Seq = wire.TypeDatagram, 0, 0 }), func(s Stats) uint64 { return s.Malformed }},
		{"datagram longer than its size class", frame(func(f *wire.HeaderFields) { f.Type, f.Size, f.Seq = wire.TypeDatagram, 2, 78 }), func(s Stats) uint64 { return s.Malformed }},
		{"scout", frame(func(f *wire.HeaderFields) { f.Type, f.Size, f.MsgLen = wire.TypeScout, 0, 0 }), func(s Stats) uint64 { return s.Ignored }},
		{"ack of no stream", frame(func(f *wire.HeaderFields) { f.Type, f.Size, f.MsgLen = wire.TypeAck, 0, 0 }), func(s Stats) uint64 { return s.Ignored }},
		{"nack of no stream", frame(func(f *wire.HeaderFields) { f.Type, f.Size, f.MsgLen, f.Status = wire.TypeNack, 0, 0, 1 }), func(s Stats) uint64 { return s.Ignored }},
		{"open-ack of no stream", frame(func(f *wire.HeaderFields) { f.Type, f.Size, f.MsgLen = wire.TypeOpenAck, 0, 0 }), func(s Stats) uint64 { return s.Ignored }},
		{"open of session 0", frame(func(f *wire.HeaderFields) { f.Type, f.Size, f.MsgLen, f.Session = wire.TypeOpen, 0, 0, 0 }), func(s Stats) uint64 { return s.Ignored }},
		{"data of an unknown session", frame(func(f *wire.HeaderFields) {}), func(s Stats) uint64 { return s.StaleDropped }},
		{"not a frame", []byte("short"), func(s Stats) uint64 { return s.Malformed }},
	} {
		before := e.Stats()
		e.Input(0, tt.frame)
		after := e.Stats()
		if got := tt.count(after) - tt.count(before); got != 1 {
			t.Errorf("%s: counter +%d, want +1 (stats %+v)", tt.name, got, after)
		}
		if got := rejects(after) - rejects(before); got != 1 {
			t.Errorf("%s: rejects +%d, want +1", tt.name, got)
		}
	}
	for node := uint32(3); node < 10003; node++ {
		e.Input(0, frame(func(f *wire.HeaderFields) { f.SourceNode = node }))
	}
	for i, p := range e.peers {
		if p != nil && i != 2 {
			t.Fatalf("a frame from node %d, which the map does not know, created peer state", i)
		}
	}
}
