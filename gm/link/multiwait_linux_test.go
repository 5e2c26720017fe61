package link

import (
	"errors"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
)

// openRail opens a Link on rail r of host h.
func openRail(tb testing.TB, h *netns.Host, r int) *Link {
	tb.Helper()
	var l *Link
	if err := h.Do(func() error {
		var err error
		l, err = Open(h.Ifaces[r], &Config{SpinTime: -1})
		return err
	}); err != nil {
		tb.Fatalf("Open %s: %v", h.Ifaces[r], err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// TestIntegrationMultiWait checks MultiWait over the two rails of a host:
// it returns the frames of the rail they arrived on, reports readiness
// without consuming, ends early on Wake of either Link and on Close, and
// Running follows the interface state.
func TestIntegrationMultiWait(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2, Rails: 2, Direct: true})
	rx := []*Link{openRail(t, c.Hosts[0], 0), openRail(t, c.Hosts[0], 1)}
	tx := []*Link{openRail(t, c.Hosts[1], 0), openRail(t, c.Hosts[1], 1)}
	m := NewMultiWait(rx...)
	frames := make([][]byte, 8)
	buf := make([]byte, 0, 2048)
	send := func(r int, seq uint64) {
		t.Helper()
		f := testFrame(buf, mac6(rx[r].HardwareAddr()), mac6(tx[r].HardwareAddr()), 5, seq, 100)
		if err := tx[r].Send(f); err != nil {
			t.Fatal(err)
		}
	}

	for _, r := range []int{1, 0, 1} {
		send(r, uint64(10+r))
		n, i, err := m.Wait(frames, 5*time.Second)
		if err != nil || n != 1 || i != r || frameSeq(frames[0]) != uint64(10+r) {
			t.Fatalf("frame on rail %d: Wait = %d, %d, %v", r, n, i, err)
		}
	}

	// Readiness: nothing is consumed. Rail 0's block, read to its end,
	// is closed by the retire timer (1 ms) meanwhile: that is not
	// readiness.
	time.Sleep(5 * time.Millisecond)
	send(1, 42)
	if n, i, err := m.Wait(nil, 5*time.Second); n != 0 || i != 1 || err != nil {
		t.Fatalf("readiness Wait = %d, %d, %v", n, i, err)
	}
	if n := rx[1].Recv(frames); n != 1 || frameSeq(frames[0]) != 42 {
		t.Fatalf("Recv after readiness = %d", n)
	}

	// Timeout, and Wake of either Link.
	if n, i, err := m.Wait(frames, 20*time.Millisecond); n != 0 || i != -1 || err != nil {
		t.Fatalf("idle Wait = %d, %d, %v", n, i, err)
	}
	for r := range rx {
		done := make(chan [3]any, 1)
		go func() {
			n, i, err := m.Wait(frames, 10*time.Second)
			done <- [3]any{n, i, err}
		}()
		time.Sleep(20 * time.Millisecond)
		rx[r].Wake()
		select {
		case got := <-done:
			if got[0] != 0 || got[1] != -1 || got[2] != nil {
				t.Fatalf("Wait woken by rail %d = %v", r, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Wake of rail %d did not end Wait", r)
		}
	}

	// Running follows the interface.
	for r, l := range rx {
		if !l.Running() {
			t.Fatalf("rail %d not running", r)
		}
	}
	if err := c.Hosts[0].LinkDown(1); err != nil {
		t.Fatal(err)
	}
	if rx[1].Running() || !rx[0].Running() {
		t.Fatalf("after LinkDown(1): running %v %v", rx[0].Running(), rx[1].Running())
	}
	if err := c.Hosts[0].LinkUp(1); err != nil {
		t.Fatal(err)
	}
	if !rx[1].Running() {
		t.Fatal("rail 1 not running after LinkUp")
	}

	// Close of one Link ends Wait with its index.
	done := make(chan error, 1)
	go func() {
		_, i, err := m.Wait(frames, 10*time.Second)
		if err == nil || i != 1 {
			err = errors.New("Wait did not report the closed Link")
		} else if errors.Is(err, ErrClosed) {
			err = nil
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	rx[1].Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end Wait")
	}
	if rx[1].Running() {
		t.Fatal("closed Link reports running")
	}
}
