package link

import (
	"testing"
	"time"
)

// plainEndpoint has no capability; its JoinWait would fail the test.
type plainEndpoint struct {
	Endpoint
	t     *testing.T
	inner Endpoint
}

func (e plainEndpoint) Caps() Caps       { return 0 }
func (e plainEndpoint) Unwrap() Endpoint { return e.inner }
func (e plainEndpoint) JoinWait([]Endpoint) Waiter {
	e.t.Error("JoinWait called on an endpoint without CapMultiWait")
	return nil
}

// joinEndpoint can sleep with others of its kind and records what
// JoinWait was given.
type joinEndpoint struct {
	Endpoint
	got *[]Endpoint
}

func (e joinEndpoint) Caps() Caps       { return CapMultiWait }
func (e joinEndpoint) Unwrap() Endpoint { return nil }
func (e joinEndpoint) JoinWait(eps []Endpoint) Waiter {
	*e.got = eps
	return joinWaiter{}
}

type joinWaiter struct{}

func (joinWaiter) Wait(time.Duration) error { return nil }

// TestNewWaiter: endpoints without CapMultiWait get a Waiter that looks
// and returns; endpoints with it get their own, asked of the innermost
// endpoints behind any decorators.
func TestNewWaiter(t *testing.T) {
	if w := NewWaiter(plainEndpoint{t: t}); w != (pollWaiter{}) {
		t.Fatalf("Waiter of endpoints without CapMultiWait: %T", w)
	}
	if err := NewWaiter(plainEndpoint{t: t}).Wait(0); err != nil {
		t.Fatal(err)
	}
	var got []Endpoint
	a, b := joinEndpoint{got: &got}, joinEndpoint{got: &got}
	wrapped := plainEndpoint{t: t, inner: plainEndpoint{t: t, inner: b}}
	NewWaiter(a, wrapped)
	if len(got) != 2 || got[0] != Endpoint(a) || got[1] != Endpoint(b) {
		t.Fatalf("JoinWait got %v, want the innermost endpoints", got)
	}
	if !Caps(CapSlots|CapIdle).Has(CapIdle) || Caps(CapIdle).Has(CapIdle|CapSlots) {
		t.Fatal("Caps.Has")
	}
}
