package gm_test

import (
	"testing"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
)

// BenchmarkReceiveIdle measures one Receive on an idle port: the cost of
// one turn of a polling loop, and so about twice the average delay with
// which a polling application notices a frame.
func BenchmarkReceiveIdle(b *testing.B) {
	c := netns.New(b, netns.Options{Hosts: 1})
	p := openPort(b, c.Hosts[0], 2, testConfig(c.Hosts[0], writeMap(b, c)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if e := p.Receive(); e.Type != gm.NoRecvEvent {
			p.Unknown(e)
		}
	}
}

// BenchmarkLocalPingPong8 is BenchmarkPingPong8 between two ports of one
// host in one goroutine: each turn sends from a to b, receives at b, sends
// back and receives at a. The frames go through lo, so ns/op is two kernel
// sends plus the complete port and engine work of two messages, without
// waiting for another CPU.
func BenchmarkLocalPingPong8(b *testing.B) {
	c := netns.New(b, netns.Options{Hosts: 1})
	m := writeMap(b, c)
	pa := openPort(b, c.Hosts[0], 2, testConfig(c.Hosts[0], m))
	pb := openPort(b, c.Hosts[0], 4, testConfig(c.Hosts[0], m))
	localPingPong8(b, pa, pb)
}

// localPingPong8 runs b.N round trips of an 8-byte message between ports 2
// (pa) and 4 (pb) in one goroutine.
func localPingPong8(b *testing.B, pa, pb *gm.Port) {
	size := gm.MinSizeForLength(8)
	for _, p := range []*gm.Port{pa, pb} {
		for i := 0; i < 4; i++ {
			if err := p.ProvideReceiveBuffer(make([]byte, 8), size, gm.HighPriority, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	msg := []byte("pingpong")
	polls := 0
	hop := func(from, to *gm.Port, port int) {
		for from.SendWithCallback(msg, size, 8, gm.HighPriority, to.NodeID(), port, nil, nil) != nil {
			from.Unknown(from.Receive())
			polls++
		}
		for {
			e := to.Receive()
			polls++
			if e.Type.IsRecv() {
				_ = to.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
				return
			}
			if e.Type != gm.NoRecvEvent {
				to.Unknown(e)
			}
		}
	}
	for i := 0; i < 100; i++ {
		hop(pa, pb, 4)
		hop(pb, pa, 2)
	}
	b.ReportAllocs()
	b.ResetTimer()
	polls = 0
	for i := 0; i < b.N; i++ {
		hop(pa, pb, 4)
		hop(pb, pa, 2)
	}
	// Receive calls per round trip: 2 if every frame is there at the
	// first poll.
	b.ReportMetric(float64(polls)/float64(b.N), "polls/op")
}
