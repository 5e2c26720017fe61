package proto

import (
	"testing"
	"time"

	"github.com/ethergm/ethergm/token"
)

// TestClockSamples: with Config.Clock, the times passed to the engine may
// lag the clock (a port's coarse clock), so a round-trip sample must come
// from Clock at both ends, and Clock is read only for samples: one per
// SampleGap per stream, not per message. The test's Clock runs ahead of
// the times passed by one millisecond more at each reading, so a sample
// taken from it reads the round trip plus 1 ms, and one taken from the
// passed times the bare round trip.
func TestClockSamples(t *testing.T) {
	var p *slowPipe
	reads := 0
	p = newSlowPipe(t, func(c *Config) {
		if c.NodeID == 1 {
			c.Clock = func() Time { reads++; return p.now + Time(reads)*time.Millisecond }
		}
	})
	const size = 8
	for i := 0; i < 4; i++ {
		_ = p.b.Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0)
	}
	send := func(i int) {
		t.Helper()
		m := pattern(200, i)
		if err := p.a.Send(p.now, m, size, len(m), 0, 2, 2, nil, i); err != nil {
			t.Fatal(err)
		}
		p.run(time.Second, func() bool { return len(p.comps) == i+1 })
	}
	send(0)
	s := p.a.peers[2].tx[2][0]
	rtt := 2 * p.lat
	if reads != 2 || s.srtt < rtt+time.Millisecond || s.srtt > rtt+time.Millisecond+100*time.Microsecond {
		t.Fatalf("first sample: %d clock readings, srtt %v; want 2 and the round trip (%v) + 1 ms from Clock", reads, s.srtt, rtt)
	}
	// Ten more round trips, within SampleGap of the first sample's start
	// (40 µs each): no sample, no reading.
	for i := 1; i <= 10; i++ {
		send(i)
	}
	if reads != 2 {
		t.Fatalf("%d clock readings after 11 messages within the sample gap, want 2 (one sample)", reads)
	}
	// Past the gap, the next message is timed again.
	p.now += 3 * DefaultSampleGap
	send(11)
	if reads != 4 {
		t.Fatalf("%d clock readings after a message past the sample gap, want 4 (a second sample)", reads)
	}
	checkDelivered(t, p, func() [][]byte {
		var ms [][]byte
		for i := 0; i <= 11; i++ {
			ms = append(ms, pattern(200, i))
		}
		return ms
	}()...)
}
