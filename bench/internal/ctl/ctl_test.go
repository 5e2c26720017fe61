package ctl

import (
	"errors"
	"strings"
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

// TestDispatch: the named mode's Check runs first and its failure stops
// the run; then the role's function runs; an unknown mode is an error.
func TestDispatch(t *testing.T) {
	type opts struct{ ran []string }
	note := func(what string, err error) func(*opts) error {
		return func(o *opts) error { o.ran = append(o.ran, what); return err }
	}
	bad := errors.New("bad size")
	modes := []Mode[opts]{
		{Name: "a", Server: note("a server", nil), Client: note("a client", nil)},
		{Name: "b", Check: note("b check", nil), Server: note("b server", nil), Client: note("b client", nil)},
		{Name: "c", Check: note("c check", bad), Server: note("c server", nil), Client: note("c client", nil)},
	}
	for _, tt := range []struct {
		mode   string
		server bool
		ran    string
		err    error
	}{
		{"a", true, "a server", nil},
		{"a", false, "a client", nil},
		{"b", true, "b check,b server", nil},
		{"b", false, "b check,b client", nil},
		{"c", false, "c check", bad},
	} {
		var o opts
		err := Dispatch(modes, tt.mode, tt.server, &o)
		if err != tt.err || strings.Join(o.ran, ",") != tt.ran {
			t.Errorf("mode %s server %v: ran %v, error %v; want %s, %v", tt.mode, tt.server, o.ran, err, tt.ran, tt.err)
		}
	}
	var o opts
	if err := Dispatch(modes, "d", true, &o); err == nil || err.Error() != `unknown -mode "d"` || len(o.ran) != 0 {
		t.Errorf("unknown mode: %v, ran %v", err, o.ran)
	}
}
