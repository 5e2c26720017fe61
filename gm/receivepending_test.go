package gm

import (
	"testing"
	"time"
)

// TestReceivePendingRing: ReceivePending sees a message whose frame waits
// in the receiver's ring, although nothing read the ring yet (the
// receiver's progress goroutine never ticks here), takes no event itself,
// and is false on a quiet port and true on a closed one.
func TestReceivePendingRing(t *testing.T) {
	hosts := twoHosts(t, "pending")
	open := func(h, id int, ticks <-chan time.Time) *Port {
		return hosts(h, id, func(c *Config) { c.progressTicks = ticks })
	}
	a := open(0, 2, nil)
	b := open(1, 4, make(chan time.Time)) // b's progress goroutine never runs
	size := MinSizeForLength(8)
	for range 2 {
		if err := b.ProvideReceiveBuffer(make([]byte, 8), size, LowPriority, 0); err != nil {
			t.Fatal(err)
		}
	}
	la := startLoopInternal(a)
	defer la()

	// recv polls b until a receive event arrives.
	recv := func(what string) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
			e := b.Receive()
			switch {
			case e.Type.IsRecv():
				return
			case e.Type != NoRecvEvent:
				b.Unknown(e)
			}
		}
		t.Fatalf("no %s within 5 s", what)
	}
	send := func(k byte) {
		t.Helper()
		if err := a.SendWithCallback([]byte{k, 1, 2, 3, 4, 5, 6, 7}, size, 8, LowPriority, 2, 4, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The first message opens the session (b answers only while polled).
	send(1)
	recv("first message")
	// Quiet: nothing pending once the events are taken and a's acks are in.
	for end := time.Now().Add(5 * time.Second); b.ReceivePending(); {
		if e := b.Receive(); e.Type != NoRecvEvent && !e.Type.IsRecv() {
			b.Unknown(e)
		}
		if time.Now().After(end) {
			t.Fatal("ReceivePending stays true on a quiet port")
		}
	}
	if b.ReceivePending() {
		t.Fatal("ReceivePending true on a quiet port")
	}

	send(2)
	for end := time.Now().Add(5 * time.Second); !b.ReceivePending(); time.Sleep(100 * time.Microsecond) {
		if time.Now().After(end) {
			t.Fatal("ReceivePending does not see the frame waiting in the ring")
		}
	}
	if !b.ReceivePending() {
		t.Fatal("ReceivePending took the event")
	}
	e := b.Receive()
	if !e.Type.IsRecv() || e.Message[0] != 2 {
		t.Fatalf("the next Receive returned %v, not the message", e.Type)
	}
	b.Close()
	if !b.ReceivePending() {
		t.Fatal("ReceivePending false on a closed port (Receive returns PortClosedEvent)")
	}
}

// startLoopInternal runs p's receive loop (events to Unknown) until the
// returned function is called.
func startLoopInternal(p *Port) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			e := p.Receive()
			switch {
			case e.Type == PortClosedEvent:
				return
			case e.Type == NoRecvEvent:
				time.Sleep(20 * time.Microsecond)
			case !e.Type.IsRecv():
				p.Unknown(e)
			}
		}
	}()
	return func() { close(done); <-stopped }
}
