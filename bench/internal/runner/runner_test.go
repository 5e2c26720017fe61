//go:build linux

package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
)

// TestIntegrationRetryClient checks that RetryClient waits for a server that takes
// longer than a few tries to listen, gives up at once when the server has
// exited, and gives up after retryClientFor otherwise.
func TestIntegrationRetryClient(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 1})
	h := c.Hosts[0]
	srv, err := h.Start("sleep", "600")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Kill() })

	// Ready only after 3 s (more than 20 tries of 100 ms).
	ready := time.Now().Add(3 * time.Second)
	calls := 0
	if err := RetryClient(srv, func() error {
		calls++
		if time.Now().Before(ready) {
			return errors.New("connection refused")
		}
		return nil
	}); err != nil {
		t.Fatalf("slow server: %v after %d calls", err, calls)
	}

	// Never ready: the last error after the deadline.
	defer func(d time.Duration) { retryClientFor = d }(retryClientFor)
	retryClientFor = 500 * time.Millisecond
	start := time.Now()
	err = RetryClient(srv, func() error { return errors.New("connection refused") })
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("server never ready: %v", err)
	}
	if el := time.Since(start); el < retryClientFor {
		t.Errorf("gave up after %v, before %v", el, retryClientFor)
	}

	// The server has exited: no more tries.
	retryClientFor = time.Hour
	gone, err := h.Start("true")
	if err != nil {
		t.Fatal(err)
	}
	<-gone.Done()
	calls = 0
	err = RetryClient(gone, func() error { calls++; return errors.New("connection refused") })
	if err == nil || !strings.Contains(err.Error(), "server exited") || calls != 1 {
		t.Errorf("exited server: %v after %d calls", err, calls)
	}
}
