package relay

import (
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// fakeConn is an in-memory Conn: frames put on in are read, frames written
// appear on out.
type fakeConn struct {
	in     chan []byte
	out    chan []byte
	mu     sync.Mutex
	dl     time.Time
	once   sync.Once
	closed chan struct{}
}

func newFakeConn() *fakeConn {
	return &fakeConn{in: make(chan []byte, 100), out: make(chan []byte, 100), closed: make(chan struct{})}
}

func (c *fakeConn) ReadFrom(b []byte) (int, net.Addr, error) {
	c.mu.Lock()
	dl := c.dl
	c.mu.Unlock()
	var timeout <-chan time.Time
	if !dl.IsZero() {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case f := <-c.in:
		return copy(b, f), nil, nil
	case <-c.closed:
		return 0, nil, net.ErrClosed
	case <-timeout:
		return 0, nil, os.ErrDeadlineExceeded
	}
}

func (c *fakeConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	select {
	case c.out <- append([]byte(nil), b...):
		return len(b), nil
	case <-c.closed:
		return 0, net.ErrClosed
	}
}

func (c *fakeConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.dl = t
	c.mu.Unlock()
	return nil
}

func (c *fakeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func startFake(t *testing.T, cfg Config) (*Relay, *fakeConn, *fakeConn) {
	t.Helper()
	a, b := newFakeConn(), newFakeConn()
	r, err := Start(a, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r, a, b
}

func recvFrame(t *testing.T, c *fakeConn, within time.Duration) []byte {
	t.Helper()
	select {
	case f := <-c.out:
		return f
	case <-time.After(within):
		t.Fatalf("no frame within %v", within)
		return nil
	}
}

func TestRelayForward(t *testing.T) {
	r, a, b := startFake(t, Config{})
	for i := range 10 {
		a.in <- testFrame(uint32(i), 60, 0x88B5)
	}
	for i := range 10 {
		if s := seqOf(recvFrame(t, b, 10*time.Second)); s != uint32(i) {
			t.Fatalf("AtoB frame %d has seq %d", i, s)
		}
	}
	b.in <- testFrame(99, 60, 0x88B5)
	if s := seqOf(recvFrame(t, a, 10*time.Second)); s != 99 {
		t.Fatalf("BtoA seq %d", s)
	}
	if s := r.Stats(AtoB); s.Received != 10 || s.Forwarded != 10 {
		t.Errorf("AtoB stats %+v", s)
	}
	if s := r.Stats(BtoA); s.Received != 1 || s.Forwarded != 1 {
		t.Errorf("BtoA stats %+v", s)
	}
}

func TestRelayDelay(t *testing.T) {
	const delay = 30 * time.Millisecond
	r, a, b := startFake(t, Config{AtoB: Impairment{Delay: delay}})
	start := time.Now()
	for i := range 5 {
		a.in <- testFrame(uint32(i), 60, 0x88B5)
	}
	for i := range 5 {
		if s := seqOf(recvFrame(t, b, 10*time.Second)); s != uint32(i) {
			t.Fatalf("frame %d has seq %d", i, s)
		}
	}
	if el := time.Since(start); el < delay {
		t.Errorf("frames arrived after %v, want >= %v", el, delay)
	}
	// BtoA is not delayed.
	b.in <- testFrame(7, 60, 0x88B5)
	recvFrame(t, a, 10*time.Second)
	if s := r.Stats(AtoB); s.Delayed != 5 {
		t.Errorf("stats %+v", s)
	}
	// Changing the impairment at run time.
	if err := r.SetImpairment(AtoB, Impairment{Drop: 1}); err != nil {
		t.Fatal(err)
	}
	if got := r.Impairment(AtoB); got.Drop != 1 {
		t.Errorf("Impairment() = %+v", got)
	}
	a.in <- testFrame(8, 60, 0x88B5)
	waitStats(t, r, AtoB, func(s Stats) bool { return s.Dropped == 1 })
	if err := r.SetImpairment(AtoB, Impairment{Drop: 2}); err == nil {
		t.Error("SetImpairment accepted Drop 2")
	}
}

func TestRelayHoldTimeout(t *testing.T) {
	const hold = 20 * time.Millisecond
	r, a, b := startFake(t, Config{AtoB: Impairment{Reorder: 1}, HoldTimeout: hold})
	start := time.Now()
	a.in <- testFrame(1, 60, 0x88B5)
	recvFrame(t, b, 10*time.Second)
	if el := time.Since(start); el < hold {
		t.Errorf("held frame released after %v, want >= %v", el, hold)
	}
	if s := r.Stats(AtoB); s.Reordered != 1 || s.Forwarded != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestRelayOverflow(t *testing.T) {
	// The delay is long enough that the relay surely reads all 5 frames
	// while the first 2 still wait in the queue, even on a loaded machine:
	// exactly 3 overflow.
	r, a, b := startFake(t, Config{AtoB: Impairment{Delay: 2 * time.Second}, QueueLen: 2})
	for i := range 5 {
		a.in <- testFrame(uint32(i), 60, 0x88B5)
	}
	waitStats(t, r, AtoB, func(s Stats) bool { return s.Received == 5 })
	recvFrame(t, b, 10*time.Second)
	recvFrame(t, b, 10*time.Second)
	if s := r.Stats(AtoB); s.Overflows != 3 {
		t.Errorf("stats %+v, want 3 overflows", s)
	}
}

func TestRelayStartInvalid(t *testing.T) {
	if _, err := Start(newFakeConn(), newFakeConn(), Config{BtoA: Impairment{Corrupt: -1}}); err == nil {
		t.Error("Start accepted an invalid impairment")
	}
}

func TestRelayClose(t *testing.T) {
	a, b := newFakeConn(), newFakeConn()
	r, err := Start(a, b, Config{AtoB: Impairment{Delay: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	a.in <- testFrame(1, 60, 0x88B5)
	waitStats(t, r, AtoB, func(s Stats) bool { return s.Received == 1 })
	done := make(chan error)
	go func() { done <- errors.Join(r.Close(), r.Close()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(20 * time.Second): // a hang, not a slow machine
		t.Fatal("Close hangs")
	}
	select {
	case <-a.closed:
	default:
		t.Error("Close did not close side A")
	}
}

func waitStats(t *testing.T, r *Relay, d Direction, cond func(Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(r.Stats(d)) {
		if time.Now().After(deadline) {
			t.Fatalf("%v stats %+v", d, r.Stats(d))
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRelayLearningSwitch(t *testing.T) {
	conns := []*fakeConn{newFakeConn(), newFakeConn(), newFakeConn()}
	r, err := StartN([]Conn{conns[0], conns[1], conns[2]}, Config{Ports: []Impairment{{}, {Drop: 1, Only: MatchAcks}, {}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	mac := func(i byte) []byte { return []byte{2, 0, 0, 0, 0, i} }
	frame := func(dst, src []byte, typ byte) []byte {
		f := testFrame(0, 60, 0x88B5)
		copy(f, dst)
		copy(f[6:], src)
		f[15] = typ
		return f
	}
	expectNone := func(c *fakeConn) {
		t.Helper()
		select {
		case f := <-c.out:
			t.Fatalf("unexpected frame to %x", f[:6])
		default:
		}
	}
	// Unknown destination: flooded to the two other ports.
	conns[0].in <- frame(mac(2), mac(1), 1)
	recvFrame(t, conns[1], 10*time.Second)
	recvFrame(t, conns[2], 10*time.Second)
	expectNone(conns[0])
	// Port 1 learns mac(2); port 0 learned mac(1): a unicast goes to one
	// port only. Port 1's acks are dropped, its data frames pass.
	conns[1].in <- frame(mac(1), mac(2), 5)
	waitStats(t, r, From(1), func(s Stats) bool { return s.Dropped == 1 && s.Matched == 1 })
	conns[1].in <- frame(mac(1), mac(2), 1)
	recvFrame(t, conns[0], 10*time.Second)
	conns[2].in <- frame(mac(2), mac(3), 5)
	recvFrame(t, conns[1], 10*time.Second)
	// Broadcast: everyone else.
	conns[2].in <- frame([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, mac(3), 0x20)
	recvFrame(t, conns[0], 10*time.Second)
	recvFrame(t, conns[1], 10*time.Second)
	waitStats(t, r, From(2), func(s Stats) bool { return s.Forwarded == 2 })
	expectNone(conns[0])
	expectNone(conns[1])
	expectNone(conns[2])
	if s := r.Stats(From(1)); s.Received != 2 || s.Forwarded != 1 || s.Matched != 1 {
		t.Errorf("port 1 stats %+v", s)
	}
	if r.Ports() != 3 || From(2).String() != "from port 2" {
		t.Errorf("Ports %d, %v", r.Ports(), From(2))
	}
	if _, err := StartN([]Conn{newFakeConn()}, Config{}); err == nil {
		t.Error("StartN accepted one port")
	}
	if _, err := StartN([]Conn{newFakeConn(), newFakeConn()}, Config{Ports: []Impairment{{}}}); err == nil {
		t.Error("StartN accepted 1 impairment for 2 ports")
	}
}
