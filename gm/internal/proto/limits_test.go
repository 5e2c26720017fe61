package proto

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestSendQueueFull: a stream whose queue holds qCap messages refuses the
// next send with ErrNoSendToken (even when send tokens are left, which
// takes more than MaxSendTokens of them) instead of overwriting a queued
// record; the queued messages all arrive, once each and in order, and
// complete with their own contexts; other streams are not affected.
func TestSendQueueFull(t *testing.T) {
	n := newSimnet(t, 11)
	a := n.add(1, 2, func(c *Config) { c.SendTokens = 2 * qCap })
	b := n.add(2, 4, func(c *Config) { c.RecvTokens = 2*qCap + 8 })
	r := &receiver{e: b}
	for i := 0; i < qCap+2; i++ {
		for pri := uint8(0); pri < 2; pri++ {
			if err := b.Provide(make([]byte, 24), 5, pri, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	msgs := make([][]byte, qCap)
	for i := range msgs {
		msgs[i] = []byte{byte(i), byte(i >> 8), 0xA5}
		if err := a.Send(n.now, msgs[i], 5, len(msgs[i]), 0, 2, 4, nil, i); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	free := a.SendTokens().Free()
	if err := a.Send(n.now, []byte("over"), 5, 4, 0, 2, 4, nil, -1); !errors.Is(err, ErrNoSendToken) {
		t.Fatalf("send %d on a full stream queue: %v, want ErrNoSendToken", qCap, err)
	}
	if got := a.SendTokens().Free(); got != free {
		t.Fatalf("refused send took a token: %d free, want %d", got, free)
	}
	// The high-priority stream to the same port has its own queue.
	if err := a.Send(n.now, []byte("high"), 5, 4, 1, 2, 4, nil, qCap); err != nil {
		t.Fatalf("send on another stream: %v", err)
	}
	var comps []completion
	n.run(5*time.Second, func() bool {
		r.poll()
		drainCompletions(a, &comps)
		return len(comps) == qCap+1 && len(r.got) == qCap+1
	})
	var low [][]byte
	for _, g := range r.got {
		if g.ev.Priority == 0 {
			low = append(low, g.data)
		}
	}
	if len(low) != qCap {
		t.Fatalf("%d low-priority messages received, want %d", len(low), qCap)
	}
	for i, d := range low {
		if !bytes.Equal(d, msgs[i]) {
			t.Fatalf("message %d received as %x, want %x", i, d, msgs[i])
		}
	}
	next := 0
	for _, c := range comps {
		if c.st != StatusSuccess {
			t.Fatalf("completion %d: status %v", c.id, c.st)
		}
		if c.id == qCap {
			continue
		}
		if c.id != next {
			t.Fatalf("completion of send %d, want %d (a queued record was overwritten?)", c.id, next)
		}
		next++
	}
	// Once the queue drained, the stream takes sends again.
	if err := a.Send(n.now, []byte("again"), 5, 5, 0, 2, 4, nil, qCap+1); err != nil {
		t.Fatalf("send after the queue drained: %v", err)
	}
}
