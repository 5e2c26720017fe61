package proto

import (
	"bytes"
	"testing"
	"time"

	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

// Tests of the retransmission timeout: it must not fire for a receiver
// that is merely slow to answer, and when it fires without loss it must
// cost one frame, not a window of duplicates. All times are virtual.

// sendAll queues msgs on p.a (size class size, to node 2 port 2) with ctx
// = index.
func sendAll(t *testing.T, p *slowPipe, size uint8, msgs ...[]byte) {
	t.Helper()
	for i, m := range msgs {
		if err := p.a.Send(p.now, m, size, len(m), 0, 2, 2, nil, i); err != nil {
			t.Fatal(err)
		}
	}
}

func checkDelivered(t *testing.T, p *slowPipe, msgs ...[]byte) {
	t.Helper()
	for _, c := range p.comps {
		if c.st != StatusSuccess {
			t.Fatalf("completions %+v\nA: %s\nB: %s", p.comps, p.a.Dump(p.now), p.b.Dump(p.now))
		}
	}
	if len(p.got) != len(msgs) {
		t.Fatalf("received %d messages, want %d", len(p.got), len(msgs))
	}
	for i := range msgs {
		if !bytes.Equal(p.got[i], msgs[i]) {
			t.Fatalf("message %d differs", i)
		}
	}
}

// TestDescheduledReceiverNoWindowResend: the receiver stops reading for
// longer than the retransmission timeout while a full window is in flight
// (its process is descheduled), then works through the backlog, sending
// its acks as it goes. The timeout's probe is the only resend: the first
// late acks must not make the sender resend the rest of the window. (The
// probe used to be the oldest frame; the late ack of its first
// transmission then looked like the probe's answer, and every frame sent
// before the probe was declared lost.)
func TestDescheduledReceiverNoWindowResend(t *testing.T) {
	p := newSlowPipe(t, func(c *Config) { c.Window = 256 })
	p.bCost = time.Microsecond
	const size = 16
	for i := 0; i < 2; i++ {
		_ = p.b.Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0)
	}
	// Start the session (its first frame goes alone) and get an RTT sample.
	m0 := pattern(200, 0) // longer than MaxFastRecvBytes: slowPipe reads buffers
	sendAll(t, p, size, m0)
	p.run(time.Second, func() bool { return len(p.comps) == 1 })

	m1, m2 := pattern(15000, 1), pattern(15000, 2) // 150 frames each: the window fills
	if err := p.a.Send(p.now, m1, size, len(m1), 0, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.a.Send(p.now, m2, size, len(m2), 0, 2, 2, nil, 2); err != nil {
		t.Fatal(err)
	}
	p.bFree = p.now + 100*time.Millisecond // B gets no CPU for 100 ms
	p.run(5*time.Second, func() bool { return len(p.comps) == 3 })
	checkDelivered(t, p, m0, m1, m2)
	sa, sb := p.a.Stats(), p.b.Stats()
	if sa.Timeouts == 0 {
		t.Fatalf("no retransmission timeout: the test does not test anything (A %+v)", sa)
	}
	if sa.DataRetransmitted > sa.Timeouts || sb.Duplicates > sa.Timeouts {
		t.Fatalf("%d timeouts cost %d resends (%d duplicates at B), want one frame each\nA: %s",
			sa.Timeouts, sa.DataRetransmitted, sb.Duplicates, p.a.Dump(p.now))
	}
}

// TestStalledReceiverWithinMaxAckDelay: the RTT samples are short (the
// receiver answers at once), then the receiver stalls for a few
// milliseconds with a frame in flight, as a process does on a loaded
// machine. The timeout allows for MaxAckDelay on top of the round trip, so
// nothing is resent. (With the timeout at the old 2 ms floor it was.)
func TestStalledReceiverWithinMaxAckDelay(t *testing.T) {
	p := newSlowPipe(t, nil)
	const size = 8
	for i := 0; i < 4; i++ {
		_ = p.b.Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0)
	}
	var msgs [][]byte
	for i := 0; i < 20; i++ {
		m := pattern(200, i)
		msgs = append(msgs, m)
		if err := p.a.Send(p.now, m, size, len(m), 0, 2, 2, nil, i); err != nil {
			t.Fatal(err)
		}
		if i == 15 {
			p.bFree = p.now + 8*time.Millisecond
		}
		p.run(time.Second, func() bool { return len(p.comps) == i+1 })
	}
	checkDelivered(t, p, msgs...)
	if st := p.a.Stats(); st.Timeouts != 0 || st.DataRetransmitted != 0 {
		t.Fatalf("A %+v: a receiver stalled for 8 ms (< MaxAckDelay) caused resends\n%s", st, p.a.Dump(p.now))
	}
	// The timeout follows the samples plus MaxAckDelay.
	s := p.a.peers[2].tx[2][0]
	if s.rto != p.a.clampRTO(s.srtt+4*s.rttvar+DefaultMaxAckDelay) {
		t.Fatalf("rto %v (srtt %v rttvar %v), want SRTT + 4 RTTVAR + %v", s.rto, s.srtt, s.rttvar, DefaultMaxAckDelay)
	}
}

// TestTailLossOneTimeout: the last frames of a burst are lost, so no later
// frame's ack can reveal them. One timeout must recover the whole tail:
// the probe (the newest unacknowledged frame) is acknowledged alone, which
// shows that every frame sent before it and still unacknowledged is lost.
func TestTailLossOneTimeout(t *testing.T) {
	testTailLoss(t, false)
}

// TestTailLossProbeLost is TestTailLossOneTimeout with the first probe lost
// too: the second timeout probes the oldest frame, the third the newest
// again, whose answer shows the rest of the tail lost.
func TestTailLossProbeLost(t *testing.T) {
	testTailLoss(t, true)
}

func testTailLoss(t *testing.T, probeLost bool) {
	p := newSlowPipe(t, func(c *Config) { c.Window = 128 })
	const size = 14
	_ = p.b.Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0)
	_ = p.b.Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0)
	m0 := pattern(200, 0) // longer than MaxFastRecvBytes: slowPipe reads buffers
	sendAll(t, p, size, m0)
	p.run(time.Second, func() bool { return len(p.comps) == 1 })

	m1 := pattern(6000, 1) // 60 frames
	first := p.a.peers[2].tx[2][0].nxt
	const lost = 20
	dropped, probes := 0, 0
	p.dropToB = func(h wire.Header) bool {
		// The first transmission of the last 20 frames (and the first
		// retransmission if probeLost).
		if h.Flags()&wire.FlagRetransmit == 0 && diff(h.Seq(), first) >= 60-lost {
			dropped++
			return true
		}
		if probeLost && h.Flags()&wire.FlagRetransmit != 0 && probes == 0 {
			probes++
			return true
		}
		return false
	}
	if err := p.a.Send(p.now, m1, size, len(m1), 0, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	p.run(time.Second, func() bool { return len(p.comps) == 2 })
	checkDelivered(t, p, m0, m1)
	st := p.a.Stats()
	wantTimeouts, wantResends := uint64(1), uint64(lost)
	if probeLost {
		// The lost probe (the newest frame), the oldest frame, the newest
		// again, then the other 18 of the tail.
		wantTimeouts, wantResends = 3, lost+1
	}
	if dropped != lost || st.Timeouts != wantTimeouts || st.DataRetransmitted != wantResends {
		t.Fatalf("dropped %d: %d timeouts, %d resends; want %d timeouts and %d resends\n%s",
			dropped, st.Timeouts, st.DataRetransmitted, wantTimeouts, wantResends, p.a.Dump(p.now))
	}
}

// TestTimeoutProbeAnsweredAfterLostNack: the receiver refused a message
// for lack of a buffer and the nack was lost; frames of later messages are
// dropped without an answer (the receiver expects the sender to rewind).
// The timeout's probe, the newest frame, belongs to such a later message:
// being a retransmission, it is answered with the nack again, so the
// sender rewinds and delivers everything once buffers appear.
func TestTimeoutProbeAnsweredAfterLostNack(t *testing.T) {
	p := newSlowPipe(t, func(c *Config) { c.Window = 128 })
	p.provideDelay = 30 * time.Millisecond
	const size = 12
	_ = p.b.Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0)
	m0 := pattern(200, 0) // longer than MaxFastRecvBytes: slowPipe reads buffers
	sendAll(t, p, size, m0)
	p.run(time.Second, func() bool { return len(p.comps) == 1 })
	// B's only buffer comes back 30 ms after m0 arrived. Drop every nack
	// (A -> B drops are not needed: B refuses).
	var nacks int
	orig := p.b.out
	p.b.out = filterOut{Out: orig, drop: func(f []byte) bool {
		h, err := wire.ParseFrame(f, wire.EtherType)
		if err == nil && h.Type() == wire.TypeNack && nacks < 1 {
			nacks++
			return true
		}
		return false
	}}
	m1, m2 := pattern(1000, 1), pattern(1000, 2)
	if err := p.a.Send(p.now, m1, size, len(m1), 0, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.a.Send(p.now, m2, size, len(m2), 0, 2, 2, nil, 2); err != nil {
		t.Fatal(err)
	}
	p.run(2*time.Second, func() bool { return len(p.comps) == 3 })
	checkDelivered(t, p, m0, m1, m2)
	if nacks != 1 {
		t.Fatalf("%d nacks dropped, want 1", nacks)
	}
}

// filterOut drops the frames drop selects.
type filterOut struct {
	Out
	drop func(f []byte) bool
}

func (o filterOut) Send(f []byte) error {
	if o.drop(f) {
		return nil
	}
	return o.Out.Send(f)
}

func (o filterOut) SendBatch(fs [][]byte) (int, error) {
	for i, f := range fs {
		if err := o.Send(f); err != nil {
			return i, err
		}
	}
	return len(fs), nil
}
