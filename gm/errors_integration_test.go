package gm_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
)

func expect(t *testing.T, got []completion, want ...completion) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("completions %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("completions %v, want %v", got, want)
		}
	}
}

// errorsPair is one subtest's pair for TestIntegrationErrors: host0 port 2
// (pr.a, with an event loop) sends to host1 port 4 (pr.b), whose event loop
// reports the messages it receives on recvCh and re-provides their buffers.
type errorsPair struct {
	*pair
	t      *testing.T
	lb     *loop
	recvCh chan string
}

// newErrorsPair opens the pair on cluster c for subtest t (the ports close
// when t ends) with the given send timeouts (0: testConfig's generous
// ones). Each subtest sets only the timeout it waits for, and leaves the
// others long so that they cannot fire on a loaded machine.
func newErrorsPair(t *testing.T, c *netns.Cluster, progress, liveness time.Duration) *errorsPair {
	pr := pairOn(t, c, withTimeouts(progress, liveness))
	e := &errorsPair{pair: pr, t: t, recvCh: make(chan string, 100)}
	e.lb = startLoop(pr.b, func(ev *gm.Event) {
		e.recvCh <- string(ev.Message)
		_ = pr.b.ProvideReceiveBuffer(ev.Buffer, ev.Size, ev.Priority, ev.Tag)
	})
	t.Cleanup(e.lb.Stop) // cleanups run last-in first-out: before the ports close
	la := startLoop(pr.a, nil)
	t.Cleanup(la.Stop)
	return e
}

// next returns the next message pr.b received.
func (e *errorsPair) next() string {
	e.t.Helper()
	select {
	case s := <-e.recvCh:
		return s
	case <-time.After(10 * time.Second):
		e.t.Fatal("no message")
		return ""
	}
}

// send sends msg from pr.a to port of pr.b's node with completion id.
func (e *errorsPair) send(c *completions, msg string, size uint8, pri gm.Priority, port, id int) {
	e.t.Helper()
	if err := e.a.SendWithCallback([]byte(msg), size, len(msg), pri, e.bn, port, c.cb, id); err != nil {
		e.t.Fatal(err)
	}
}

// TestIntegrationErrors produces every send error status with a real
// scenario and recovers from each with ResumeSending or DropSends. Each
// subtest opens its own pair on one cluster, with a short timeout only
// where it expects that timeout to fire.
func TestIntegrationErrors(t *testing.T) {
	cl := netns.New(t, netns.Options{Hosts: 2})
	const progress = 500 * time.Millisecond // for the subtests that expect SendTimedOut
	const liveness = time.Second            // for those that expect SendTargetNodeUnreachable

	t.Run("TimedOutThenResume", func(t *testing.T) {
		pr := newErrorsPair(t, cl, progress, 0)
		c := newCompletions()
		start := time.Now()
		pr.send(c, "one", 6, gm.LowPriority, 4, 1)
		pr.send(c, "two", 6, gm.LowPriority, 4, 2)
		pr.send(c, "three", 6, gm.LowPriority, 4, 3)
		expect(t, c.wait(t, 1, 10*time.Second), completion{1, gm.SendTimedOut})
		if el := time.Since(start); el < progress*4/5 {
			t.Fatalf("timed out after %v, progress timeout is %v", el, progress)
		}
		for i := 0; i < 4; i++ {
			if err := pr.b.ProvideReceiveBuffer(make([]byte, 56), 6, gm.LowPriority, 0); err != nil {
				t.Fatal(err)
			}
		}
		// Nothing may move until ResumeSending (an absence: no condition
		// to poll for).
		time.Sleep(50 * time.Millisecond)
		if len(c.snapshot()) != 1 || len(pr.recvCh) != 0 {
			t.Fatal("the disabled stream moved")
		}
		if err := pr.a.ResumeSending(gm.LowPriority, pr.bn, 4, c.cb, 100); err != nil {
			t.Fatal(err)
		}
		expect(t, c.wait(t, 4, 10*time.Second), completion{1, gm.SendTimedOut}, completion{100, gm.Success}, completion{2, gm.Success}, completion{3, gm.Success})
		if a, b := pr.next(), pr.next(); a != "two" || b != "three" {
			t.Fatalf("got %q %q", a, b)
		}
	})

	t.Run("TimedOutThenDrop", func(t *testing.T) {
		pr := newErrorsPair(t, cl, progress, 0)
		c := newCompletions()
		pr.send(c, "x1", 7, gm.HighPriority, 4, 1)
		pr.send(c, "x2", 7, gm.HighPriority, 4, 2)
		expect(t, c.wait(t, 1, 10*time.Second), completion{1, gm.SendTimedOut})
		if err := pr.a.DropSends(gm.HighPriority, pr.bn, 4, c.cb, 100); err != nil {
			t.Fatal(err)
		}
		expect(t, c.wait(t, 3, 10*time.Second), completion{1, gm.SendTimedOut}, completion{2, gm.SendDropped}, completion{100, gm.Success})
		_ = pr.b.ProvideReceiveBuffer(make([]byte, 120), 7, gm.HighPriority, 0)
		pr.send(c, "x3", 7, gm.HighPriority, 4, 3)
		if cs := c.wait(t, 4, 10*time.Second); cs[3] != (completion{3, gm.Success}) {
			t.Fatalf("%v", cs)
		}
		if s := pr.next(); s != "x3" {
			t.Fatalf("got %q", s)
		}
	})

	t.Run("Rejected", func(t *testing.T) {
		pr := newErrorsPair(t, cl, 0, 0)
		if err := pr.b.SetAcceptableSizes(gm.LowPriority, 1<<6); err != nil {
			t.Fatal(err)
		}
		c := newCompletions()
		pr.send(c, "big", 8, gm.LowPriority, 4, 1)
		pr.send(c, "held", 8, gm.LowPriority, 4, 2)
		expect(t, c.wait(t, 1, 10*time.Second), completion{1, gm.SendRejected})
		if err := pr.b.SetAcceptableSizes(gm.LowPriority, ^uint64(0)); err != nil {
			t.Fatal(err)
		}
		_ = pr.b.ProvideReceiveBuffer(make([]byte, 248), 8, gm.LowPriority, 0)
		if err := pr.a.ResumeSending(gm.LowPriority, pr.bn, 4, c.cb, 100); err != nil {
			t.Fatal(err)
		}
		expect(t, c.wait(t, 3, 10*time.Second), completion{1, gm.SendRejected}, completion{100, gm.Success}, completion{2, gm.Success})
		if s := pr.next(); s != "held" {
			t.Fatalf("got %q", s)
		}
	})

	t.Run("PortClosed", func(t *testing.T) {
		// The generous progress timeout matters for "late" below: it
		// waits for a buffer until the port closes, which must be
		// reported as SendTargetPortClosed however slow the machine.
		pr := newErrorsPair(t, cl, 0, 0)
		c := newCompletions()
		pr.send(c, "nobody", 5, gm.LowPriority, 7, 1)
		pr.send(c, "held", 5, gm.LowPriority, 7, 2)
		expect(t, c.wait(t, 1, 10*time.Second), completion{1, gm.SendTargetPortClosed})
		if err := pr.a.DropSends(gm.LowPriority, pr.bn, 7, c.cb, 100); err != nil {
			t.Fatal(err)
		}
		expect(t, c.wait(t, 3, 10*time.Second), completion{1, gm.SendTargetPortClosed}, completion{2, gm.SendDropped}, completion{100, gm.Success})
		// The port opens: the stream works.
		p7 := openPort(t, pr.c.Hosts[1], 7, testConfig(pr.c.Hosts[1], pr.mapf))
		_ = p7.ProvideReceiveBuffer(make([]byte, 24), 5, gm.LowPriority, 0)
		pr.send(c, "hello7", 5, gm.LowPriority, 7, 3)
		var e *gm.Event
		waitFor(t, 10*time.Second, "message on port 7", func() bool {
			e = p7.Receive()
			if e.Type == gm.SentTokensEvent {
				p7.Unknown(e)
			}
			return e.Type.IsRecv()
		})
		if string(e.Message) != "hello7" {
			t.Fatalf("got %q", e.Message)
		}
		if cs := c.wait(t, 4, 10*time.Second); cs[3] != (completion{3, gm.Success}) {
			t.Fatalf("%v", cs)
		}
		// Closing it again while a send is outstanding: the sender is
		// told. p7 has no buffer left: wait until it refused the message
		// (NackNoBuffer), so that the send is known to wait for a buffer
		// of this incarnation of the port when it closes.
		nacks := pr.a.Stats().NacksReceived
		pr.send(c, "late", 5, gm.LowPriority, 7, 4)
		waitFor(t, 10*time.Second, "port 7 to refuse the late message", func() bool { return pr.a.Stats().NacksReceived > nacks })
		p7.Close()
		cs := c.wait(t, 5, 10*time.Second)
		if cs[4] != (completion{4, gm.SendTargetPortClosed}) {
			t.Fatalf("%v", cs)
		}
		_ = pr.a.DropSends(gm.LowPriority, pr.bn, 7, c.cb, 101)
		c.wait(t, 6, 10*time.Second)
	})

	t.Run("LinkDownUnreachable", func(t *testing.T) {
		pr := newErrorsPair(t, cl, 0, liveness)
		h1 := pr.c.Hosts[1]
		if err := h1.LinkDown(0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h1.LinkUp(0) }) // for the next subtests if this one fails
		c := newCompletions()
		start := time.Now()
		_ = pr.b.ProvideReceiveBuffer(make([]byte, 24), 5, gm.HighPriority, 0)
		pr.send(c, "lost", 5, gm.HighPriority, 4, 1)
		pr.send(c, "held", 5, gm.HighPriority, 4, 2)
		expect(t, c.wait(t, 1, 15*time.Second), completion{1, gm.SendTargetNodeUnreachable})
		// Not before the liveness timeout; the upper bound only catches a
		// timeout that does not follow the configuration (the default is
		// 30 s) and leaves room for a loaded machine.
		if el := time.Since(start); el < liveness*9/10 || el > 10*liveness {
			t.Fatalf("unreachable after %v (liveness %v)", el, liveness)
		}
		if err := h1.LinkUp(0); err != nil {
			t.Fatal(err)
		}
		if err := pr.a.ResumeSending(gm.HighPriority, pr.bn, 4, c.cb, 100); err != nil {
			t.Fatal(err)
		}
		expect(t, c.wait(t, 3, 15*time.Second), completion{1, gm.SendTargetNodeUnreachable}, completion{100, gm.Success}, completion{2, gm.Success})
		if s := pr.next(); s != "held" {
			t.Fatalf("got %q", s)
		}
	})

	t.Run("NoPortOpenOnHost", func(t *testing.T) {
		pr := newErrorsPair(t, cl, 0, liveness)
		pr.lb.Stop()
		pr.b.Close()
		c := newCompletions()
		start := time.Now()
		pr.send(c, "void", 5, gm.LowPriority, 4, 1)
		expect(t, c.wait(t, 1, 15*time.Second), completion{1, gm.SendTargetNodeUnreachable})
		t.Logf("unreachable after %v (liveness %v)", time.Since(start), liveness)
	})
}

// TestIntegrationTokens exhausts the receive tokens, then the send tokens
// (held until their callbacks run in Unknown, which nobody calls yet).
// The receive tokens come first: a message that lands in a buffer returns
// its token, so with sends outstanding the 254th provide could find a
// token freed by a message that arrived while the first 253 were being
// provided (it did on a loaded machine).
func TestIntegrationTokens(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	if pr.a.NumSendTokens() != 61 || pr.a.NumReceiveTokens() != 253 {
		t.Fatalf("tokens %d %d", pr.a.NumSendTokens(), pr.a.NumReceiveTokens())
	}
	for i := 0; i < 253; i++ {
		if err := pr.b.ProvideReceiveBuffer(make([]byte, 8), 4, gm.LowPriority, 0); err != nil {
			t.Fatalf("provide %d: %v", i, err)
		}
	}
	if err := pr.b.ProvideReceiveBuffer(make([]byte, 8), 4, gm.LowPriority, 0); !errors.Is(err, gm.ErrNoReceiveToken) {
		t.Fatalf("254th provide: %v", err)
	}
	c := newCompletions()
	msg := []byte("12345678")
	for i := 0; i < 61; i++ {
		if err := pr.a.SendWithCallback(msg, 4, 8, gm.LowPriority, pr.bn, 4, c.cb, i); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	err := pr.a.SendWithCallback(msg, 4, 8, gm.LowPriority, pr.bn, 4, c.cb, 61)
	if !errors.Is(err, gm.ErrNoSendToken) {
		t.Fatalf("62nd send: %v", err)
	}
	t.Logf("62nd send: %v", err)
	la := startLoop(pr.a, nil)
	defer la.Stop()
	got := 0
	waitFor(t, 10*time.Second, "61 messages", func() bool {
		for {
			e := pr.b.Receive()
			if e.Type == gm.NoRecvEvent {
				return got == 61
			}
			if e.Type.IsRecv() {
				got++
			}
		}
	})
	for _, x := range c.wait(t, 61, 10*time.Second) {
		if x.st != gm.Success {
			t.Fatal(x)
		}
	}
	waitFor(t, 10*time.Second, "tokens back", func() bool { return pr.a.FreeSendTokens() == 61 })
	if pr.b.FreeReceiveTokens() != 61 {
		t.Fatalf("receive tokens free %d, want 61 (buffers handed back)", pr.b.FreeReceiveTokens())
	}
}
