package proto

import (
	"testing"
	"time"
)

// TestReplyEventBeforeSentTokens: a reply that carries the ack of its
// request queues its receive event ahead of the SENT_TOKENS event the ack
// produces, and a FAST event taken with TakeEvent keeps its bytes until the
// next take.
func TestReplyEventBeforeSentTokens(t *testing.T) {
	var now Time = time.Second
	a, b := wiredPair(&now)
	for _, e := range []*Engine{a, b} {
		if err := e.Provide(make([]byte, 8), 4, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 3; round++ {
		now += time.Microsecond
		if err := a.Send(now, []byte("request"), 4, 7, 1, 2, 2, nil, nil); err != nil {
			t.Fatal(err)
		}
		b.Tick(now)
		var req *Event
		for ev := b.TakeEvent(); ev != nil; ev = b.TakeEvent() {
			if ev.Type != EventSentTokens {
				req = ev
				break
			}
			for _, _, _, ok := b.PopCompletion(); ok; _, _, _, ok = b.PopCompletion() {
			}
		}
		if req == nil || req.Type != EventFastHighPeerRecv || string(req.Fast[:req.FastLen]) != "request" {
			t.Fatalf("round %d: request event %+v", round, req)
		}
		if err := b.Provide(req.Buffer, req.Size, req.Priority, req.Tag); err != nil {
			t.Fatal(err)
		}
		if err := b.Send(now, []byte("reply"), 4, 5, 1, 1, 2, nil, nil); err != nil {
			t.Fatal(err)
		}
		a.Tick(now)
		first := a.TakeEvent()
		if first == nil || first.Type != EventFastHighPeerRecv {
			t.Fatalf("round %d: first event %+v, want the reply", round, first)
		}
		if err := a.Provide(first.Buffer, first.Size, first.Priority, first.Tag); err != nil {
			t.Fatal(err)
		}
		// The reply's bytes stay in place while other work runs (a send
		// completes, the engine ticks), until the next take.
		a.Tick(now)
		if got := string(first.Fast[:first.FastLen]); got != "reply" {
			t.Fatalf("round %d: reply reads %q before the next take", round, got)
		}
		if ev := a.TakeEvent(); ev == nil || ev.Type != EventSentTokens {
			t.Fatalf("round %d: second event %+v, want SENT_TOKENS", round, ev)
		}
		if _, _, st, ok := a.PopCompletion(); !ok || st != StatusSuccess {
			t.Fatalf("round %d: completion %v %v", round, st, ok)
		}
		if ev := a.TakeEvent(); ev != nil {
			t.Fatalf("round %d: extra event %+v", round, ev)
		}
	}
}

// TestSwapFirstEvents: a receive event queued behind a SENT_TOKENS event
// passes it with its fields and FAST bytes, and the SENT_TOKENS event
// stays queued behind it; with fewer than two events nothing moves.
func TestSwapFirstEvents(t *testing.T) {
	var now Time = time.Second
	a, b := wiredPair(&now)
	for _, e := range []*Engine{a, b} {
		for i := 0; i < 2; i++ {
			if err := e.Provide(make([]byte, 8), 4, 1, 9); err != nil {
				t.Fatal(err)
			}
		}
	}
	if a.SwapFirstEvents() {
		t.Fatal("passed with an empty queue")
	}
	// a's message, acknowledged by b on its own once b took it.
	if err := a.Send(now, []byte("request"), 4, 7, 1, 2, 2, nil, nil); err != nil {
		t.Fatal(err)
	}
	b.Tick(now)
	if ev := b.TakeEvent(); ev == nil || ev.Type != EventFastHighPeerRecv {
		t.Fatalf("b: event %+v, want the request", ev)
	}
	now += time.Microsecond
	b.Tick(now) // the ack, due once the request was taken
	a.Tick(now)
	if a.Pending() != 1 || a.PeekEvent().Type != EventSentTokens {
		t.Fatalf("a: %d events, first %+v; want one SENT_TOKENS", a.Pending(), a.PeekEvent())
	}
	if a.SwapFirstEvents() {
		t.Fatal("passed with one event queued")
	}
	if err := b.Send(now, []byte("message"), 4, 7, 1, 1, 2, nil, nil); err != nil {
		t.Fatal(err)
	}
	a.Tick(now)
	if !a.SwapFirstEvents() {
		t.Fatal("the receive event did not pass the SENT_TOKENS event")
	}
	ev := a.TakeEvent()
	if ev == nil || ev.Type != EventFastHighPeerRecv || string(ev.Fast[:ev.FastLen]) != "message" || ev.Tag != 9 || ev.Length != 7 || len(ev.Buffer) != 8 || ev.SenderNode != 2 {
		t.Fatalf("first event %+v, want the message", ev)
	}
	if a.SwapFirstEvents() {
		t.Fatal("passed with one event queued")
	}
	if ev := a.TakeEvent(); ev == nil || ev.Type != EventSentTokens || ev.Buffer != nil {
		t.Fatalf("second event %+v, want the SENT_TOKENS event", ev)
	}
}
