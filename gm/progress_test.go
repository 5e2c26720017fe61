package gm

import (
	"testing"
	"time"
)

// tickPort opens port 2 of host0 over an in-memory link, with a node map
// of host0 and host1 (whose port nobody opens), and with its progress
// goroutine driven by ticks instead of a ticker.
func tickPort(t *testing.T, ticks <-chan time.Time) *Port {
	t.Helper()
	return twoHosts(t, "ticks")(0, 2, func(c *Config) { c.progressTicks = ticks })
}

// TestProgressSkipsBusyTicks: while a call of the application holds the
// port's mutex, the progress goroutine skips maxBusyTicks ticks in a row
// without waiting for it, and waits for it at the next; as soon as the
// mutex is free, that tick runs the due timers (so a held mutex delays
// them by at most maxBusyTicks+1 ticks beyond the holder's call), and the
// count of skipped ticks starts again from 0.
func TestProgressSkipsBusyTicks(t *testing.T) {
	ticks := make(chan time.Time) // unbuffered: a tick is taken only by a goroutine back at its select
	p := tickPort(t, ticks)
	// A send to host1, where nothing answers, arms a timer: the session's
	// OPEN is sent again until an OPEN_ACK comes.
	if err := p.SendWithCallback(make([]byte, 8), MinSizeForLength(8), 8, LowPriority, 2, 4, nil, nil); err != nil {
		t.Fatal(err)
	}
	var due time.Duration
	resent := func(s Stats) uint64 { return s.OpensSent + s.DataRetransmitted + s.Timeouts }
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		d, now := p.eng.NextDeadline(), p.now()
		p.mu.Unlock()
		if d != 0 && now >= d {
			due = d
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no timer due 10 s after a send (next deadline %v, now %v)", d, now)
		}
	}

	// tick sends a tick; it reports whether the goroutine took it within
	// wait.
	tick := func(wait time.Duration) bool {
		select {
		case ticks <- time.Now():
			return true
		case <-time.After(wait):
			return false
		}
	}
	holdAndTick := func(first int) {
		t.Helper()
		p.mu.Lock() // an application call in progress
		// Tick first is taken at once; every later one is taken only
		// once the goroutine is done with the one before: it skipped it.
		for i := first; i <= first+maxBusyTicks; i++ {
			if !tick(10 * time.Second) {
				p.mu.Unlock()
				t.Fatalf("tick %d not taken within 10 s while the mutex is held: tick %d waited for the mutex, want %d ticks skipped in a row", i, i-1, maxBusyTicks)
			}
		}
		// Tick first+maxBusyTicks waits for the mutex: the next one is
		// not taken while it is held (a wrong skip shows up here only
		// if the goroutine is quick enough; it never fails a correct
		// goroutine).
		if tick(50 * time.Millisecond) {
			p.mu.Unlock()
			t.Fatalf("tick %d taken while the mutex is held: tick %d was skipped too, want it to wait", first+maxBusyTicks+1, first+maxBusyTicks)
		}
		if d := p.eng.NextDeadline(); d != due {
			p.mu.Unlock()
			t.Fatalf("timers ran while the mutex was held (deadline %v, was %v)", d, due)
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	before := resent(p.eng.Stats())
	p.mu.Unlock()
	holdAndTick(1)
	// The waiting tick runs the due timer once it has the mutex, with no
	// further tick.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		d, s := p.eng.NextDeadline(), p.eng.Stats()
		p.mu.Unlock()
		if d != due {
			if resent(s) == before {
				t.Fatalf("deadline moved from %v to %v, nothing sent again: %+v", due, d, s)
			}
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the tick that waited for the mutex did not run the timer due at %v within 10 s", due)
		}
	}
	// The skipped ticks count from 0 again after a tick that ran.
	p.mu.Lock()
	due = p.eng.NextDeadline()
	p.mu.Unlock()
	holdAndTick(maxBusyTicks + 2)
}

// TestProgressLeavesPollerAlone: while the application polls (a poll
// between every two ticks), the progress goroutine takes every tick
// without touching the port's mutex, however long a call of the
// application holds it (where TestProgressSkipsBusyTicks's ticks end up
// waiting for it), and runs no timer: the polls do.
func TestProgressLeavesPollerAlone(t *testing.T) {
	ticks := make(chan time.Time) // unbuffered: a tick is taken only by a goroutine back at its select
	p := tickPort(t, ticks)
	if err := p.SendWithCallback(make([]byte, 8), MinSizeForLength(8), 8, LowPriority, 2, 4, nil, nil); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	due := p.eng.NextDeadline()
	defer p.mu.Unlock()
	for i := 1; i <= 3*maxBusyTicks; i++ {
		p.markPolled() // a poll of the application since the last tick
		select {
		case ticks <- time.Now():
		case <-time.After(10 * time.Second):
			t.Fatalf("tick %d not taken within 10 s while the application polls: the progress goroutine waits for the mutex", i)
		}
	}
	// The last tick is taken; once the goroutine is back at its select
	// (the next tick is taken), it is done with it.
	p.markPolled()
	select {
	case ticks <- time.Now():
	case <-time.After(10 * time.Second):
		t.Fatal("the last tick not taken within 10 s")
	}
	if d := p.eng.NextDeadline(); d != due {
		t.Fatalf("the progress goroutine ran the timers while the application polls (deadline %v, was %v)", d, due)
	}
}
