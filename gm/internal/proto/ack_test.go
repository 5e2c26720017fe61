package proto

import (
	"testing"
	"time"
)

// Tests of when acks go out. Two engines exchange frames through
// queueOut (stream_bench_test.go), driven by hand with explicit times.

func ackPair(t *testing.T, mod func(*Config)) (a, b *Engine, oa, ob *queueOut) {
	t.Helper()
	oa, ob = &queueOut{}, &queueOut{}
	cfg := func(node uint32) Config {
		c := Config{
			NodeID: node, Port: 2, MAC: mac(int(node)), SegLen: 100,
			ProgressTimeout: time.Minute, LivenessTimeout: time.Minute,
			Resolve: func(id uint32) ([6]byte, bool) { return mac(int(id)), id == 1 || id == 2 },
		}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	a, b = New(cfg(1), oa), New(cfg(2), ob)
	for _, e := range []*Engine{a, b} {
		for i := 0; i < 4; i++ {
			if err := e.Provide(make([]byte, 248), 8, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Start both sessions (a session's first frame goes alone until it
	// is acknowledged).
	now := time.Second - time.Millisecond
	done := 0
	for i, e := range []*Engine{a, b} {
		if err := e.Send(now, pattern(10, 0), 8, 10, 0, uint32(2-i), 2, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < 4; k++ {
		now += 100 * time.Microsecond
		oa.deliver(b, now, 64)
		ob.deliver(a, now, 64)
		popRecv(t, a, &done)
		popRecv(t, b, &done)
	}
	if done != 2 {
		t.Fatalf("sessions not started: %d sends completed", done)
	}
	return a, b, oa, ob
}

// popRecv pops events of e until a receive event, re-provides its buffer
// and returns true, or returns false if there is none. Completions are
// counted in *done.
func popRecv(t testing.TB, e *Engine, done *int) bool {
	t.Helper()
	var ev Event
	for e.PopEvent(&ev) {
		if ev.Type == EventSentTokens {
			for {
				if _, _, _, ok := e.PopCompletion(); !ok {
					break
				}
				*done++
			}
			continue
		}
		if err := e.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag); err != nil {
			t.Fatal(err)
		}
		return true
	}
	return false
}

// TestRequestedAckRidesOnAnswer: in a ping-pong of two-frame messages,
// whose last frames ask for an ack, the ack waits until the application
// has taken the message, and its answer carries it: no ACK frame at all,
// and every send still completes when the answer arrives.
func TestRequestedAckRidesOnAnswer(t *testing.T) {
	a, b, oa, ob := ackPair(t, nil)
	now := time.Second
	msg := pattern(150, 1) // two frames
	doneA, doneB := 0, 0
	acksA, acksB := a.Stats().AcksSent, b.Stats().AcksSent
	const rounds = 20
	for i := 0; i < rounds; i++ {
		now += 10 * time.Microsecond
		if err := a.Send(now, msg, 8, len(msg), 0, 2, 2, nil, i); err != nil {
			t.Fatal(err)
		}
		oa.deliver(b, now, 64)
		if !popRecv(t, b, &doneB) {
			t.Fatalf("round %d: B got no message", i)
		}
		if err := b.Send(now, msg, 8, len(msg), 0, 1, 2, nil, i); err != nil {
			t.Fatal(err)
		}
		oa.deliver(b, now, 64) // nothing
		ob.deliver(a, now, 64)
		if !popRecv(t, a, &doneA) {
			t.Fatalf("round %d: A got no answer", i)
		}
		popRecv(t, a, &doneA)
		if doneA != i+1 {
			t.Fatalf("round %d: %d of A's sends completed, want %d\n%s", i, doneA, i+1, a.Dump(now))
		}
	}
	if sa, sb := a.Stats(), b.Stats(); sa.AcksSent != acksA || sb.AcksSent != acksB {
		sa.AcksSent -= acksA
		sb.AcksSent -= acksB
		t.Fatalf("ACK frames sent: A %d, B %d; want none (the answers carry them)", sa.AcksSent, sb.AcksSent)
	}
	if sa, sb := a.Stats(), b.Stats(); sa.Timeouts+sb.Timeouts != 0 {
		t.Fatalf("timeouts: A %+v B %+v", sa, sb)
	}
}

// TestRequestedAckAfterTake: a one-way message whose last frame asks for
// an ack. The ack is not sent while the message waits in the event queue
// (at most AckDelay), but with the first Pump or Tick after the
// application took it.
func TestRequestedAckAfterTake(t *testing.T) {
	for _, take := range []bool{true, false} {
		a, b, oa, ob := ackPair(t, nil)
		now := time.Second
		msg := pattern(150, 1)
		if err := a.Send(now, msg, 8, len(msg), 0, 2, 2, nil, 0); err != nil {
			t.Fatal(err)
		}
		acks := b.Stats().AcksSent
		oa.deliver(b, now, 64)
		if n := b.Stats().AcksSent - acks; n != 0 {
			t.Fatalf("%d acks sent before the message was taken", n)
		}
		if d := b.NextDeadline(); d != now+b.Config().AckDelay {
			t.Fatalf("deadline %v after now, want AckDelay", d-now)
		}
		now += 5 * time.Microsecond
		if take {
			done := 0
			if !popRecv(t, b, &done) {
				t.Fatal("no message")
			}
			if d := b.NextDeadline(); d > now {
				t.Fatalf("deadline %v after now, want due", d-now)
			}
		} else {
			b.Tick(now)
			if n := b.Stats().AcksSent - acks; n != 0 {
				t.Fatalf("%d acks sent before AckDelay, message not taken", n)
			}
			now += b.Config().AckDelay
		}
		b.Tick(now)
		if n := b.Stats().AcksSent - acks; n != 1 {
			t.Fatalf("take %v: %d acks sent, want 1", take, n)
		}
		ob.deliver(a, now, 64)
		done := 0
		popRecv(t, a, &done)
		if done != 1 {
			t.Fatalf("take %v: send not completed", take)
		}
	}
}
