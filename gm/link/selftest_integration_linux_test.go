package link

import (
	"runtime"
	"testing"

	"github.com/ethergm/ethergm/internal/netns"
)

// TestIntegrationSelfTestOnce: the self-test runs once per network
// namespace (and EtherType): a second Link in the namespace, on any
// interface, takes the open-block reader without running it again; a Link
// in another namespace runs its own; an injected failure is never cached
// over, nor is lo going down.
func TestIntegrationSelfTestOnce(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the self-test runs only on x86-64")
	}
	c := netns.New(t, netns.Options{Hosts: 2, Rails: 2})
	h0, h1 := c.Hosts[0], c.Hosts[1]
	open := func(h *netns.Host, rail int, cfg *Config) *Link {
		t.Helper()
		var l *Link
		if err := h.Do(func() (err error) { l, err = Open(h.Ifaces[rail], cfg); return }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	runs := selfTestRuns.Load()
	if l := open(h0, 0, nil); l.Mode() != ModeOpenBlock {
		t.Fatalf("first Link: Mode() = %q", l.Mode())
	}
	if d := selfTestRuns.Load() - runs; d != 1 {
		t.Fatalf("first Link of the namespace: %d self-tests, want 1", d)
	}
	runs = selfTestRuns.Load()
	a, b := open(h0, 0, nil), open(h0, 1, nil)
	if a.Mode() != ModeOpenBlock || b.Mode() != ModeOpenBlock {
		t.Fatalf("Mode() = %q, %q", a.Mode(), b.Mode())
	}
	if d := selfTestRuns.Load() - runs; d != 0 {
		t.Fatalf("two more Links in the namespace ran %d self-tests, want 0", d)
	}
	if l := open(h0, 0, &Config{EtherType: 0x88B6}); l.Mode() != ModeOpenBlock || selfTestRuns.Load()-runs != 1 {
		t.Fatalf("another EtherType: Mode() = %q after %d self-tests, want 1", l.Mode(), selfTestRuns.Load()-runs)
	}
	runs = selfTestRuns.Load()
	if l := open(h1, 0, nil); l.Mode() != ModeOpenBlock || selfTestRuns.Load()-runs != 1 {
		t.Fatalf("another namespace: Mode() = %q after %d self-tests, want 1", l.Mode(), selfTestRuns.Load()-runs)
	}
	selfTestFault = "self-test: injected failure"
	f := open(h0, 0, nil)
	selfTestFault = ""
	if want := ModeV2 + " (fallback: self-test: injected failure)"; f.Mode() != want {
		t.Errorf("Mode() = %q, want %q", f.Mode(), want)
	}
	pingPong(t, a, open(h1, 0, nil), 50, false, 64)
	// With lo down the test runs again, and says it cannot.
	if _, err := h0.Run("ip", "link", "set", "lo", "down"); err != nil {
		t.Fatal(err)
	}
	if l, want := open(h0, 0, nil), ModeV2+" (fallback: self-test impossible: the loopback interface lo is down)"; l.Mode() != want {
		t.Errorf("with lo down: Mode() = %q, want %q", l.Mode(), want)
	}
}
