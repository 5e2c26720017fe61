package rail

import (
	"net"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// BenchmarkFakeRails1Hop is what a set of one rail costs a small message's
// hop: one frame sent and one frame drained (one op), over a link that
// only counts. It is the benchmark that the set's one shortcut for one
// rail (railPeer) answers to.
func BenchmarkFakeRails1Hop(b *testing.B) { benchHop(b, 1) }

// BenchmarkFakeRails2Hop is BenchmarkFakeRails1Hop over two rails.
func BenchmarkFakeRails2Hop(b *testing.B) { benchHop(b, 2) }

func benchHop(b *testing.B, rails int) {
	in := frame(wire.TypeData, 1, 2, 0, 0, 8, 0, 8)
	out := frame(wire.TypeData, 2, 1, 0, 0, 8, 0, 8)
	links := make([]link.Endpoint, rails)
	for i := range links {
		links[i] = &benchLink{mac: macA[i], in: in}
	}
	s := New(links)
	eng := &countEngine{}
	now := time.Second
	s.Attach(eng, func() time.Duration { return now })
	m, err := nodemap.New(0, [6]byte{}, []nodemap.Entry{
		{ID: 1, Host: "a", MACs: macA[:rails]}, {ID: 2, Host: "b", MACs: macB[:rails]},
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	s.SetMap(m, 1)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Send(out); err != nil {
			b.Fatal(err)
		}
		links[0].(*benchLink).pending = true
		if got, _ := s.Drain(now); got != 1 {
			b.Fatalf("drained %d frames", got)
		}
	}
	if eng.in != b.N {
		b.Fatalf("%d frames in, %d ops", eng.in, b.N)
	}
}

// benchLink delivers its frame in once per pending and counts sends.
type benchLink struct {
	link.Endpoint
	mac     [6]byte
	in      []byte
	pending bool
	sent    int
}

func (l *benchLink) Caps() link.Caps                      { return link.CapOwnedReceive | link.CapOwnedSend | link.CapIdle }
func (l *benchLink) Unwrap() link.Endpoint                { return nil }
func (l *benchLink) HardwareAddr() net.HardwareAddr       { return l.mac[:] }
func (l *benchLink) MTU() int                             { return testMTU }
func (l *benchLink) Running() bool                        { return true }
func (l *benchLink) SendOwned(f []byte) error             { l.sent++; return nil }
func (l *benchLink) Send(f []byte) error                  { l.sent++; return nil }
func (l *benchLink) RecvOwned(fr [][]byte) int            { return l.Recv(fr) }
func (l *benchLink) JoinWait([]link.Endpoint) link.Waiter { return nil }
func (l *benchLink) Recv(fr [][]byte) int {
	if !l.pending {
		return 0
	}
	l.pending = false
	fr[0] = l.in
	return 1
}

type countEngine struct{ in, pumps int }

func (e *countEngine) Input(time.Duration, []byte) { e.in++ }
func (e *countEngine) Pump(time.Duration)          { e.pumps++ }
