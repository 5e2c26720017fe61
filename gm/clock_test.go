package gm

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestClockReadsPerBatch: a polling ping-pong reads the clock once per
// batch of freshUses sends and polls that find frames, not once per
// message: the engine takes the coarse clock and reads the clock itself
// only for its round-trip samples (one per proto.DefaultSampleGap). With
// congestion control, whose delay signal wants every sample, each poll
// that finds frames reads it, as before. The ports' clocks are virtual:
// each reading advances them by a microsecond, so no timer falls due and
// the count does not depend on the machine's speed.
func TestClockReadsPerBatch(t *testing.T) {
	const rounds = 256
	for _, cc := range []bool{false, true} {
		t.Run(fmt.Sprintf("cc=%v", cc), func(t *testing.T) {
			var reads [2]atomic.Int64
			hosts := twoHosts(t, "clock")
			open := func(h, id int) *Port {
				return hosts(h, id, func(c *Config) {
					c.progressTicks = make(chan time.Time)
					c.CongestionControl = cc
					c.clock = func() time.Duration { return time.Duration(reads[h].Add(1)) * time.Microsecond }
				})
			}
			a, b := open(0, 2), open(1, 4)
			size := MinSizeForLength(8)
			for _, p := range []*Port{a, b} {
				for range 2 {
					if err := p.ProvideReceiveBuffer(make([]byte, 8), size, HighPriority, 0); err != nil {
						t.Fatal(err)
					}
				}
			}
			hop := func(from, to *Port, port int) {
				t.Helper()
				if err := from.SendWithCallback([]byte("pingpong"), size, 8, HighPriority, to.NodeID(), port, nil, nil); err != nil {
					t.Fatal(err)
				}
				for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
					// The sender's polls take its session's OPEN_ACK and
					// its SENT_TOKENS events (no progress goroutine ticks).
					if e := from.Receive(); e.Type != NoRecvEvent {
						from.Unknown(e)
					}
					e := to.Receive()
					switch {
					case e.Type.IsRecv():
						if err := to.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag); err != nil {
							t.Fatal(err)
						}
						return
					case e.Type != NoRecvEvent:
						to.Unknown(e)
					}
				}
				t.Fatalf("no message at port %d", port)
			}
			hop(a, b, 4) // the sessions' first messages
			hop(b, a, 2)
			before := [2]int64{reads[0].Load(), reads[1].Load()}
			for range rounds {
				hop(a, b, 4)
				hop(b, a, 2)
			}
			for h := range reads {
				n := reads[h].Load() - before[h]
				if !cc && n > rounds/4 {
					t.Errorf("host%d read the clock %d times in %d round trips, want at most %d (once per %d sends and polls that find frames, and the samples)",
						h, n, rounds, rounds/4, freshUses)
				}
				if cc && n < rounds {
					t.Errorf("host%d read the clock %d times in %d round trips with congestion control, want at least once per poll that finds a frame", h, n, rounds)
				}
				t.Logf("host%d: %d clock readings in %d round trips", h, n, rounds)
			}
		})
	}
}
