package gm_test

import (
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
)

// benchConfig keeps the node map watcher quiet during a benchmark: its
// reloads would be counted with the messages.
func benchConfig(c *gm.Config) { c.MapPoll = time.Hour }

// The benchmarks of port_bench_test.go over in-memory links (linktest):
// the port's and the engine's work without sockets, so that instruction
// counts (callgrind) measure the user-space cost of a message exactly.

// BenchmarkFakeReceiveIdle is BenchmarkReceiveIdle on an in-memory link.
func BenchmarkFakeReceiveIdle(b *testing.B) {
	n := newFakeNet(b, 1, 1)
	p := n.open(b, 0, 2, benchConfig)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if e := p.Receive(); e.Type != gm.NoRecvEvent {
			p.Unknown(e)
		}
	}
}

// BenchmarkFakePingPong8 is BenchmarkLocalPingPong8 between two hosts on
// in-memory links: one op is a round trip of an 8-byte message.
func BenchmarkFakePingPong8(b *testing.B) {
	n := newFakeNet(b, 2, 1)
	pa, pb := n.open(b, 0, 2, benchConfig), n.open(b, 1, 4, benchConfig)
	localPingPong8(b, pa, pb)
}
