package ctl

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestIdle(t *testing.T) {
	var stop atomic.Bool
	w := NewIdle(&stop, 20*time.Millisecond, true)
	if w.Over() {
		t.Fatal("over at once")
	}
	time.Sleep(30 * time.Millisecond)
	if !w.Over() || w.Err == nil {
		t.Fatalf("no frame within the timeout: over without an error (%v)", w.Err)
	}
	w = NewIdle(&stop, time.Hour, true)
	w.Seen(time.Now())
	stop.Store(true)
	if !w.Over() || w.Err != nil {
		t.Fatalf("stopped: %v", w.Err)
	}
}

func TestResender(t *testing.T) {
	var stop atomic.Bool
	r := NewResender(&stop, 30*time.Millisecond)
	r.Sent(time.Now(), 10*time.Millisecond)
	if due, err := r.Due(); due || err != nil {
		t.Fatalf("due at once: %v", err)
	}
	time.Sleep(15 * time.Millisecond)
	if due, err := r.Due(); !due || err != nil || !r.Retried || r.Requests != 1 {
		t.Fatalf("not due after the period: %v", err)
	}
	time.Sleep(40 * time.Millisecond)
	if _, err := r.Due(); err == nil {
		t.Fatal("no error after the timeout")
	}
	stop.Store(true)
	if _, err := r.Due(); err == nil {
		t.Fatal("no error once stopped")
	}
}
