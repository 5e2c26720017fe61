package proto

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

// slowPipe joins a sender A and a receiver B with one queue per direction
// and virtual time. B is slow: it takes bCost per frame, so frames queue up
// in front of it (as they do in a link's receive ring when the receiving
// process gets little CPU). Its receive loop gives each buffer back
// provideDelay after the message was delivered (a slow application).
// Frames take lat to cross in either direction.
type slowPipe struct {
	t            *testing.T
	now          Time
	a, b         *Engine
	toA, toB     []timed
	lat, bCost   time.Duration
	bFree        Time
	provideDelay time.Duration
	pending      []pendingBuf
	refuse       bool                     // A's link refuses every frame (ErrTxBusy)
	dropFirst    bool                     // DATA_FIRST frames never reach B
	dropToB      func(h wire.Header) bool // if set and true, the frame never reaches B
	comps        []completion
	got          [][]byte
	sentA, sentB int
}

type timed struct {
	at Time
	f  []byte
}

type pendingBuf struct {
	at  Time
	buf []byte
	sz  uint8
	pri uint8
}

type pipeOut struct {
	p   *slowPipe
	toB bool
}

var errRefused = errors.New("link refuses")

func (o pipeOut) Send(f []byte) error {
	p := o.p
	if o.toB {
		if p.refuse {
			return errRefused
		}
		p.sentA++
		if p.dropFirst || p.dropToB != nil {
			if h, err := wire.ParseFrame(f, wire.EtherType); err == nil &&
				((p.dropFirst && h.Type() == wire.TypeDataFirst) || (p.dropToB != nil && p.dropToB(h))) {
				return nil
			}
		}
		p.toB = append(p.toB, timed{p.now + p.lat, bytes.Clone(f)})
	} else {
		p.sentB++
		p.toA = append(p.toA, timed{p.now + p.lat, bytes.Clone(f)})
	}
	return nil
}

func (o pipeOut) SendBatch(fs [][]byte) (int, error) {
	for i, f := range fs {
		if err := o.Send(f); err != nil {
			return i, err
		}
	}
	return len(fs), nil
}

func newSlowPipe(t *testing.T, mod func(*Config)) *slowPipe {
	p := &slowPipe{t: t, now: time.Second, lat: 20 * time.Microsecond}
	cfg := func(node uint32) Config {
		c := Config{
			NodeID: node, Port: 2, MAC: mac(int(node)), SegLen: 100,
			ProgressTimeout: 200 * time.Millisecond, LivenessTimeout: 300 * time.Millisecond,
			Resolve: func(id uint32) ([6]byte, bool) { return mac(int(id)), id >= 1 && id <= 9 },
		}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	p.a = New(cfg(1), pipeOut{p: p, toB: true})
	p.b = New(cfg(2), pipeOut{p: p})
	return p
}

// step runs the earliest thing that happens next: a frame reaching A, B
// finishing a frame, a buffer coming back, or an engine deadline. It
// reports false when nothing is left.
func (p *slowPipe) step() bool {
	next := Time(-1)
	which := 0
	consider := func(t Time, w int) {
		if t > 0 && (next < 0 || t < next) {
			next, which = t, w
		}
	}
	if len(p.toA) > 0 {
		consider(p.toA[0].at, 1)
	}
	if len(p.toB) > 0 {
		consider(max(p.toB[0].at, p.bFree)+p.bCost, 2)
	}
	if len(p.pending) > 0 {
		consider(p.pending[0].at, 3)
	}
	consider(p.a.NextDeadline(), 4)
	consider(p.b.NextDeadline(), 5)
	if next < 0 {
		return false
	}
	if next > p.now {
		p.now = next
	}
	switch which {
	case 1:
		f := p.toA[0].f
		p.toA = p.toA[1:]
		p.a.Input(p.now, f)
		p.a.Tick(p.now)
	case 2:
		f := p.toB[0].f
		p.toB = p.toB[1:]
		p.bFree = p.now
		p.b.Input(p.now, f)
		p.b.Tick(p.now)
	case 3:
		x := p.pending[0]
		p.pending = p.pending[1:]
		if err := p.b.Provide(x.buf, x.sz, x.pri, 0); err != nil {
			p.t.Fatal(err)
		}
	case 4:
		p.a.Tick(p.now)
	case 5:
		p.b.Tick(p.now)
	}
	var ev Event
	for p.b.PopEvent(&ev) {
		if ev.Type == EventSentTokens {
			continue
		}
		p.got = append(p.got, bytes.Clone(ev.Buffer[:ev.Length]))
		p.pending = append(p.pending, pendingBuf{p.now + p.provideDelay, ev.Buffer, ev.Size, ev.Priority})
	}
	drainCompletions(p.a, &p.comps)
	return true
}

func (p *slowPipe) run(limit time.Duration, cond func() bool) {
	p.t.Helper()
	end := p.now + limit
	for !cond() {
		if p.now > end {
			p.t.Fatalf("condition not met within %v of virtual time\nA: %s\nB: %s", limit, p.a.Dump(p.now), p.b.Dump(p.now))
		}
		if !p.step() {
			p.t.Fatalf("idle before the condition was met\nA: %s\nB: %s", p.a.Dump(p.now), p.b.Dump(p.now))
		}
	}
}

// TestNoBufferNacksDoNotStarveProbe is the sequence behind the
// TestIntegrationAllSizes failures on a loaded machine: two messages of
// one size class, one receive buffer, a receiver that works through a
// backlog of in-flight frames slowly and re-provides the buffer late. The
// second message's in-flight frames are refused one by one; every refusal
// used to double the back-off and push the probe further out, so the probe
// never went out and the send failed with GM_SEND_TIMED_OUT although the
// receiver had provided a buffer (and even bound it to the message, waiting
// for its first frame) well within the progress timeout.
func TestNoBufferNacksDoNotStarveProbe(t *testing.T) {
	p := newSlowPipe(t, func(c *Config) { c.Window = 256 })
	p.bCost = time.Millisecond
	p.provideDelay = 150 * time.Millisecond
	const size = 15
	if err := p.b.Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0); err != nil {
		t.Fatal(err)
	}
	m1, m2 := pattern(15000, 1), pattern(20000, 2)
	if err := p.a.Send(p.now, m1, size, len(m1), 0, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.a.Send(p.now, m2, size, len(m2), 0, 2, 2, nil, 2); err != nil {
		t.Fatal(err)
	}
	p.run(5*time.Second, func() bool { return len(p.comps) == 2 })
	for _, c := range p.comps {
		if c.st != StatusSuccess {
			t.Fatalf("completions %+v (progress timeout 200ms, buffer back 150ms after the first message)\nA: %s\nB: %s", p.comps, p.a.Dump(p.now), p.b.Dump(p.now))
		}
	}
	if len(p.got) != 2 || !bytes.Equal(p.got[0], m1) || !bytes.Equal(p.got[1], m2) {
		t.Fatalf("received %d messages, or wrong data", len(p.got))
	}

	if st := p.b.Stats(); st.NacksSent > 20 {
		t.Errorf("receiver sent %d nacks: refusals of one message should be answered about once per probe", st.NacksSent)
	}
}

// TestProgressTimeoutNotStarved: a receiver that never provides a buffer
// but keeps answering (every in-flight frame is refused, slowly) must make
// the send fail with GM_SEND_TIMED_OUT soon after the progress timeout: the
// refusals keep the peer alive (no liveness failure) but must not postpone
// the decision.
func TestProgressTimeoutNotStarved(t *testing.T) {
	p := newSlowPipe(t, func(c *Config) { c.Window = 512 })
	p.bCost = time.Millisecond // 512 refusals trickle in over half a second
	const size = 16
	m := pattern(40000, 3)
	if err := p.a.Send(p.now, m, size, len(m), 0, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	start := p.now
	p.run(5*time.Second, func() bool { return len(p.comps) == 1 })
	if c := p.comps[0]; c.st != StatusSendTimedOut {
		t.Fatalf("completion %+v, want GM_SEND_TIMED_OUT", c)
	}
	// The final probe waits behind the refused backlog (512 frames at 1 ms),
	// so allow for it.
	if el := p.now - start; el < 200*time.Millisecond || el > 900*time.Millisecond {
		t.Fatalf("timed out after %v (progress timeout 200ms)", el)
	}
}

// TestLivenessWhileLinkRefuses: when the link refuses every frame, a send
// must still fail (GM_SEND_TARGET_NODE_UNREACHABLE after the liveness
// timeout) instead of being retried forever with no timer running.
func TestLivenessWhileLinkRefuses(t *testing.T) {
	p := newSlowPipe(t, nil)
	p.refuse = true
	_ = p.b.Provide(make([]byte, 100), 7, 0, 0)
	if err := p.a.Send(p.now, pattern(50, 1), 7, 50, 0, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	start := p.now
	p.run(5*time.Second, func() bool { return len(p.comps) == 1 })
	if c := p.comps[0]; c.st != StatusTargetNodeUnreached {
		t.Fatalf("completion %+v", c)
	}
	if el := p.now - start; el < 300*time.Millisecond || el > 400*time.Millisecond {
		t.Fatalf("failed after %v (liveness timeout 300ms)", el)
	}
	// The stream recovers once the link works again.
	p.refuse = false
	if err := p.a.Resume(p.now, 0, 2, 2, nil, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.a.Send(p.now, pattern(50, 2), 7, 50, 0, 2, 2, nil, 3); err != nil {
		t.Fatal(err)
	}
	p.run(time.Second, func() bool { return len(p.comps) == 3 })
	if p.comps[2] != (completion{3, StatusSuccess}) {
		t.Fatalf("%+v", p.comps)
	}
}

// TestNoBufferBehindEarlierMessage: a message refused while an earlier one
// of the stream is still in flight must not be resent at full window each
// time the earlier one's acks arrive (a storm of refusals), and its
// progress timeout runs only from when it is the oldest unacknowledged
// message.
func TestNoBufferBehindEarlierMessage(t *testing.T) {
	p := newSlowPipe(t, func(c *Config) { c.Window = 128 })
	p.bCost = 200 * time.Microsecond
	p.provideDelay = 150 * time.Millisecond
	const size = 16
	// Two buffers of the class: messages 1 and 2 fit, message 3 waits for
	// message 1's buffer. Message 2 takes ~300 ms to arrive (longer than
	// the progress timeout), so 3 is refused long before it is at the head.
	for i := 0; i < 2; i++ {
		_ = p.b.Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0)
	}
	ms := [][]byte{pattern(2000, 1), pattern(60000, 2), pattern(3000, 3)}
	for i, m := range ms {
		if err := p.a.Send(p.now, m, size, len(m), 0, 2, 2, nil, i); err != nil {
			t.Fatal(err)
		}
	}
	p.run(10*time.Second, func() bool { return len(p.comps) == 3 })
	for _, c := range p.comps {
		if c.st != StatusSuccess {
			t.Fatalf("completions %+v\nA: %s\nB: %s", p.comps, p.a.Dump(p.now), p.b.Dump(p.now))
		}
	}
	for i := range ms {
		if !bytes.Equal(p.got[i], ms[i]) {
			t.Fatalf("message %d differs", i)
		}
	}
	t.Logf("A %+v\nB %+v", p.a.Stats(), p.b.Stats())
	if st := p.b.Stats(); st.NacksSent > 30 || st.OutOfWindow > 200 {
		t.Errorf("refusal storm: %d nacks, %d frames dropped", st.NacksSent, st.OutOfWindow)
	}
}

// TestStallTimeout: a receiver that keeps answering but never lets the
// stream advance keeps the peer "alive". Here the first frame of a
// segmented message never arrives (a path that loses frames of one kind),
// and since the receiver has not learnt the stream's segment length yet it
// drops the message's other frames and asks the sender to go back, again
// and again: a go-back that never moves. The send must still fail, with
// GM_SEND_TIMED_OUT, once nothing advanced for the larger of the progress
// and liveness timeouts.
func TestStallTimeout(t *testing.T) {
	// Retransmissions (and so answers) at least every 50 ms: the liveness
	// timeout alone would never fire.
	p := newSlowPipe(t, func(c *Config) { c.MaxRTO = 50 * time.Millisecond })
	p.dropFirst = true
	const size = 14
	for i := 0; i < 2; i++ {
		_ = p.b.Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0)
	}
	m := pattern(1000, 1)
	if err := p.a.Send(p.now, m, size, 50, 0, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.a.Send(p.now, m, size, len(m), 0, 2, 2, nil, 2); err != nil {
		t.Fatal(err)
	}
	start := p.now
	p.run(5*time.Second, func() bool { return len(p.comps) == 2 })
	if c := p.comps[1]; c.st != StatusSendTimedOut {
		t.Fatalf("completions %+v, want GM_SEND_TIMED_OUT for 2\nA: %s", p.comps, p.a.Dump(p.now))
	}
	if el := p.now - start; el < 300*time.Millisecond || el > 400*time.Millisecond {
		t.Fatalf("failed after %v (liveness timeout 300ms, progress timeout 200ms)", el)
	}
	if p.a.Stats().AcksReceived < 10 {
		t.Fatalf("the receiver should have kept answering: %+v", p.a.Stats())
	}
}

// TestNoBufferThenSilence: the receiver refuses a message for want of a
// buffer, then falls silent while a probe is in flight. The stall timeout
// does not apply to a refused message at the head (the progress timeout
// does, in onNoBuffer), so its deadline must not be announced either: a
// deadline Tick never acts on stays due, and the caller's loop spins at
// that instant (found by FuzzEngineInput). The send must fail by the
// liveness timeout, with virtual time moving on.
func TestNoBufferThenSilence(t *testing.T) {
	n, a, _, comps := errorSetup(t)
	if err := a.Send(n.now, pattern(1000, 1), 10, 1000, 1, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	start := n.now
	n.run(50*time.Millisecond, func() bool { return a.Stats().NacksReceived >= 1 })
	n.cut = true
	for steps := 0; ; steps++ {
		drainCompletions(a, comps)
		if len(*comps) == 1 {
			break
		}
		if steps > 100_000 || n.now-start > 2*time.Second {
			t.Fatalf("no completion after %d steps, %v of virtual time (deadline %v)%s",
				steps, n.now-start, a.NextDeadline()-n.now, n.dump())
		}
		if !n.step() {
			t.Fatalf("network idle before the send completed%s", n.dump())
		}
	}
	if (*comps)[0] != (completion{1, StatusTargetNodeUnreached}) {
		t.Fatalf("%+v, want GM_SEND_TARGET_NODE_UNREACHABLE", *comps)
	}
}
