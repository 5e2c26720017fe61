package gm_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/tests/netns"
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

// TestIntegrationErrors produces every send error status with a real
// scenario and recovers from each with ResumeSending or DropSends.
func TestIntegrationErrors(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	var recv []string
	recvCh := make(chan string, 100)
	lb := startLoop(pr.b, func(e *gm.Event) {
		recvCh <- string(e.Message)
		_ = pr.b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	})
	la := startLoop(pr.a, nil)
	defer la.Stop()
	next := func() string {
		t.Helper()
		select {
		case s := <-recvCh:
			recv = append(recv, s)
			return s
		case <-time.After(5 * time.Second):
			t.Fatal("no message")
			return ""
		}
	}
	send := func(c *completions, msg string, size uint8, pri gm.Priority, port, id int) {
		t.Helper()
		if err := pr.a.SendWithCallback([]byte(msg), size, len(msg), pri, pr.bn, port, c.cb, id); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("TimedOutThenResume", func(t *testing.T) {
		c := newCompletions()
		start := time.Now()
		send(c, "one", 6, gm.LowPriority, 4, 1)
		send(c, "two", 6, gm.LowPriority, 4, 2)
		send(c, "three", 6, gm.LowPriority, 4, 3)
		expect(t, c.wait(t, 1, 5*time.Second), completion{1, gm.SendTimedOut})
		if el := time.Since(start); el < 400*time.Millisecond {
			t.Fatalf("timed out after %v, progress timeout is 500ms", el)
		}
		for i := 0; i < 4; i++ {
			if err := pr.b.ProvideReceiveBuffer(make([]byte, 56), 6, gm.LowPriority, 0); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(50 * time.Millisecond)
		if len(c.snapshot()) != 1 || len(recvCh) != 0 {
			t.Fatal("the disabled stream moved")
		}
		if err := pr.a.ResumeSending(gm.LowPriority, pr.bn, 4, c.cb, 100); err != nil {
			t.Fatal(err)
		}
		expect(t, c.wait(t, 4, 5*time.Second), completion{1, gm.SendTimedOut}, completion{100, gm.Success}, completion{2, gm.Success}, completion{3, gm.Success})
		if a, b := next(), next(); a != "two" || b != "three" {
			t.Fatalf("got %q %q", a, b)
		}
	})

	t.Run("TimedOutThenDrop", func(t *testing.T) {
		c := newCompletions()
		send(c, "x1", 7, gm.HighPriority, 4, 1)
		send(c, "x2", 7, gm.HighPriority, 4, 2)
		expect(t, c.wait(t, 1, 5*time.Second), completion{1, gm.SendTimedOut})
		if err := pr.a.DropSends(gm.HighPriority, pr.bn, 4, c.cb, 100); err != nil {
			t.Fatal(err)
		}
		expect(t, c.wait(t, 3, 5*time.Second), completion{1, gm.SendTimedOut}, completion{2, gm.SendDropped}, completion{100, gm.Success})
		_ = pr.b.ProvideReceiveBuffer(make([]byte, 120), 7, gm.HighPriority, 0)
		send(c, "x3", 7, gm.HighPriority, 4, 3)
		c.wait(t, 4, 5*time.Second)
		if s := next(); s != "x3" {
			t.Fatalf("got %q", s)
		}
	})

	t.Run("Rejected", func(t *testing.T) {
		if err := pr.b.SetAcceptableSizes(gm.LowPriority, 1<<6); err != nil {
			t.Fatal(err)
		}
		c := newCompletions()
		send(c, "big", 8, gm.LowPriority, 4, 1)
		send(c, "held", 8, gm.LowPriority, 4, 2)
		expect(t, c.wait(t, 1, 5*time.Second), completion{1, gm.SendRejected})
		if err := pr.b.SetAcceptableSizes(gm.LowPriority, ^uint64(0)); err != nil {
			t.Fatal(err)
		}
		_ = pr.b.ProvideReceiveBuffer(make([]byte, 248), 8, gm.LowPriority, 0)
		if err := pr.a.ResumeSending(gm.LowPriority, pr.bn, 4, c.cb, 100); err != nil {
			t.Fatal(err)
		}
		expect(t, c.wait(t, 3, 5*time.Second), completion{1, gm.SendRejected}, completion{100, gm.Success}, completion{2, gm.Success})
		if s := next(); s != "held" {
			t.Fatalf("got %q", s)
		}
	})

	t.Run("PortClosed", func(t *testing.T) {
		c := newCompletions()
		send(c, "nobody", 5, gm.LowPriority, 7, 1)
		send(c, "held", 5, gm.LowPriority, 7, 2)
		expect(t, c.wait(t, 1, 5*time.Second), completion{1, gm.SendTargetPortClosed})
		if err := pr.a.DropSends(gm.LowPriority, pr.bn, 7, c.cb, 100); err != nil {
			t.Fatal(err)
		}
		expect(t, c.wait(t, 3, 5*time.Second), completion{1, gm.SendTargetPortClosed}, completion{2, gm.SendDropped}, completion{100, gm.Success})
		// The port opens: the stream works.
		p7 := openPort(t, pr.c.Hosts[1], 7, testConfig(pr.c.Hosts[1], pr.mapf))
		_ = p7.ProvideReceiveBuffer(make([]byte, 24), 5, gm.LowPriority, 0)
		send(c, "hello7", 5, gm.LowPriority, 7, 3)
		var e *gm.Event
		waitFor(t, 5*time.Second, "message on port 7", func() bool {
			e = p7.Receive()
			if e.Type == gm.SentTokensEvent {
				p7.Unknown(e)
			}
			return e.Type.IsRecv()
		})
		if string(e.Message) != "hello7" {
			t.Fatalf("got %q", e.Message)
		}
		c.wait(t, 4, 5*time.Second)
		// Closing it again while a send is outstanding: the sender is told.
		send(c, "late", 5, gm.LowPriority, 7, 4)
		time.Sleep(20 * time.Millisecond) // no buffer: the send waits (NoBuffer)
		p7.Close()
		cs := c.wait(t, 5, 5*time.Second)
		if cs[4] != (completion{4, gm.SendTargetPortClosed}) {
			t.Fatalf("%v", cs)
		}
		_ = pr.a.DropSends(gm.LowPriority, pr.bn, 7, c.cb, 101)
		c.wait(t, 6, 5*time.Second)
	})

	t.Run("LinkDownUnreachable", func(t *testing.T) {
		h1 := pr.c.Hosts[1]
		if err := h1.LinkDown(0); err != nil {
			t.Fatal(err)
		}
		c := newCompletions()
		start := time.Now()
		_ = pr.b.ProvideReceiveBuffer(make([]byte, 24), 5, gm.HighPriority, 0)
		send(c, "lost", 5, gm.HighPriority, 4, 1)
		send(c, "held", 5, gm.HighPriority, 4, 2)
		expect(t, c.wait(t, 1, 10*time.Second), completion{1, gm.SendTargetNodeUnreachable})
		if el := time.Since(start); el < 900*time.Millisecond || el > 5*time.Second {
			t.Fatalf("unreachable after %v (liveness 1s)", el)
		}
		if err := h1.LinkUp(0); err != nil {
			t.Fatal(err)
		}
		if err := pr.a.ResumeSending(gm.HighPriority, pr.bn, 4, c.cb, 100); err != nil {
			t.Fatal(err)
		}
		expect(t, c.wait(t, 3, 10*time.Second), completion{1, gm.SendTargetNodeUnreachable}, completion{100, gm.Success}, completion{2, gm.Success})
		if s := next(); s != "held" {
			t.Fatalf("got %q", s)
		}
	})

	t.Run("NoPortOpenOnHost", func(t *testing.T) {
		lb.Stop()
		pr.b.Close()
		c := newCompletions()
		send(c, "void", 5, gm.LowPriority, 4, 1)
		expect(t, c.wait(t, 1, 10*time.Second), completion{1, gm.SendTargetNodeUnreachable})
	})
}

// TestIntegrationTokens exhausts the send tokens (a receiver without
// buffers holds every send) and the receive tokens.
func TestIntegrationTokens(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, func(c *gm.Config) { c.ProgressTimeout = 30 * time.Second })
	if pr.a.NumSendTokens() != 61 || pr.a.NumReceiveTokens() != 253 {
		t.Fatalf("tokens %d %d", pr.a.NumSendTokens(), pr.a.NumReceiveTokens())
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
	for i := 0; i < 253; i++ {
		if err := pr.b.ProvideReceiveBuffer(make([]byte, 8), 4, gm.LowPriority, 0); err != nil {
			t.Fatalf("provide %d: %v", i, err)
		}
	}
	if err := pr.b.ProvideReceiveBuffer(make([]byte, 8), 4, gm.LowPriority, 0); !errors.Is(err, gm.ErrNoReceiveToken) {
		t.Fatalf("254th provide: %v", err)
	}
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
	waitFor(t, time.Second, "tokens back", func() bool { return pr.a.FreeSendTokens() == 61 })
	if pr.b.FreeReceiveTokens() != 61 {
		t.Fatalf("receive tokens free %d, want 61 (buffers handed back)", pr.b.FreeReceiveTokens())
	}
}
