package gm_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
)

// writeMap writes a node map for the cluster's hosts (node id = index+1)
// and returns its path.
func writeMap(t testing.TB, c *netns.Cluster) string {
	t.Helper()
	path, err := gmmap.Write(c, filepath.Join(t.TempDir(), "map"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Send timeouts of testConfig: generous, so that no send fails on a
// loaded machine (a receiver descheduled for a second must not turn a
// Success into SendTimedOut or SendTargetNodeUnreachable). A test that
// expects a timeout to fire sets a short one explicitly (withTimeouts).
const (
	testProgressTimeout = 30 * time.Second
	testLivenessTimeout = 30 * time.Second
)

// testConfig returns the port configuration of host h with generous send
// timeouts (see testProgressTimeout).
func testConfig(h *netns.Host, mapPath string) *gm.Config {
	return &gm.Config{
		Host: h.Name, StateDir: h.Dir, MapFile: mapPath,
		ProgressTimeout: testProgressTimeout, LivenessTimeout: testLivenessTimeout,
		MapPoll: 50 * time.Millisecond,
	}
}

// withTimeouts returns a config modifier (for newPair and pairOn) that sets
// the progress and liveness timeouts; 0 keeps testConfig's.
func withTimeouts(progress, liveness time.Duration) func(*gm.Config) {
	return func(c *gm.Config) {
		if progress != 0 {
			c.ProgressTimeout = progress
		}
		if liveness != 0 {
			c.LivenessTimeout = liveness
		}
	}
}

// openPort opens port id on host h (inside its namespace).
func openPort(t testing.TB, h *netns.Host, id int, cfg *gm.Config) *gm.Port {
	t.Helper()
	var p *gm.Port
	err := h.Do(func() error {
		var err error
		p, err = gm.Open(h.Ifaces[0], id, "test", cfg)
		return err
	})
	if err != nil {
		t.Fatalf("open %s port %d: %v", h.Name, id, err)
	}
	t.Cleanup(func() { p.Close() })
	dumpOnFailure(t, h.Name, id, p)
	return p
}

var (
	portsMu  sync.Mutex
	testPort = map[testing.TB][]func() string{}
)

// dumpOnFailure registers p so that a failed test explains itself with the
// state of every port it opened, all taken before any of them is closed
// (cleanups run last-in first-out, so the newest one dumps them all).
func dumpOnFailure(t testing.TB, host string, id int, p *gm.Port) {
	portsMu.Lock()
	first := len(testPort[t]) == 0
	testPort[t] = append(testPort[t], func() string {
		return fmt.Sprintf("state of %s port %d:\n%s", host, id, p.DebugState())
	})
	portsMu.Unlock()
	if first {
		t.Cleanup(func() {
			portsMu.Lock()
			delete(testPort, t)
			portsMu.Unlock()
		})
	}
	t.Cleanup(func() {
		portsMu.Lock()
		fs := testPort[t]
		testPort[t] = nil
		portsMu.Unlock()
		if t.Failed() {
			for _, f := range fs {
				t.Log(f())
			}
		}
	})
}

// loop runs p's event loop on a goroutine: receive events go to onRecv
// (which must re-provide or keep the buffer); everything else goes to
// Unknown. It stops when p is closed (PortClosedEvent) or stop is called.
type loop struct {
	p    *gm.Port
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func startLoop(p *gm.Port, onRecv func(e *gm.Event)) *loop {
	l := &loop{p: p, stop: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			select {
			case <-l.stop:
				return
			default:
			}
			e := p.BlockingReceive()
			switch {
			case e.Type == gm.PortClosedEvent:
				return
			case e.Type == gm.NoRecvEvent:
				select {
				case <-l.stop:
					return
				default:
				}
				time.Sleep(time.Millisecond)
			case e.Type.IsRecv():
				if onRecv != nil {
					onRecv(e)
				} else {
					p.Unknown(e)
				}
			default:
				p.Unknown(e)
			}
		}
	}()
	return l
}

// Stop stops the loop and waits for it; it may be called again.
func (l *loop) Stop() {
	l.once.Do(func() {
		close(l.stop)
		// Wake a sleeping BlockingReceive with an alarm.
		var a gm.Alarm
		l.p.SetAlarm(&a, 0, nil, nil)
		l.wg.Wait()
	})
}

// completions collects send completions.
type completions struct {
	mu  sync.Mutex
	got []completion
	ch  chan struct{}
}

type completion struct {
	id int
	st gm.Status
}

func newCompletions() *completions { return &completions{ch: make(chan struct{}, 1)} }

func (c *completions) cb(_ *gm.Port, ctx any, st gm.Status) {
	c.mu.Lock()
	c.got = append(c.got, completion{ctx.(int), st})
	c.mu.Unlock()
	select {
	case c.ch <- struct{}{}:
	default:
	}
}

func (c *completions) snapshot() []completion {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]completion(nil), c.got...)
}

// wait waits until n completions arrived or fails after timeout.
func (c *completions) wait(t testing.TB, n int, timeout time.Duration) []completion {
	t.Helper()
	end := time.After(timeout)
	for {
		if s := c.snapshot(); len(s) >= n {
			return s
		}
		select {
		case <-c.ch:
		case <-end:
			t.Fatalf("got %d completions, want %d: %v", len(c.snapshot()), n, c.snapshot())
		}
	}
}

func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(i)
	}
	return b
}

// waitFor polls cond for up to timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
