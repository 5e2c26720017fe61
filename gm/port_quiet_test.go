package gm_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/gm/link/linktest"
)

// countingLink is a linktest.Link that counts its reads, Recv and
// RecvOwned (the rest are linktest's). The count is atomic: the port's
// progress goroutine reads the link too.
type countingLink struct {
	*linktest.Link
	recvs atomic.Int64
}

func (c *countingLink) Recv(frames [][]byte) int {
	c.recvs.Add(1)
	return c.Link.Recv(frames)
}

// RecvOwned is the read a port's rails make (link.Endpoint's): without
// it the embedded Link's would run, uncounted, and the test below could
// not fail.
func (c *countingLink) RecvOwned(frames [][]byte) int {
	c.recvs.Add(1)
	return c.Link.RecvOwned(frames)
}

// TestFakeQuietPolls: a Receive on a quiet port does not read the link
// after a poll that found nothing (most turns of a polling loop answer
// from a few loads), yet a frame that arrives is delivered by the very
// next Receive, and a due alarm within a turn of quiet polls.
func TestFakeQuietPolls(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	var cl *countingLink
	a := n.open(t, 0, 2, nil)
	b := n.open(t, 1, 4, func(c *gm.Config) {
		open := c.OpenLink
		c.OpenLink = func(ifname string, cfg *link.Config) (link.Endpoint, error) {
			ep, err := open(ifname, cfg)
			if err != nil {
				return nil, err
			}
			cl = &countingLink{Link: ep.(*linktest.Link)}
			return cl, nil
		}
	})
	size := gm.MinSizeForLength(8)
	if err := b.ProvideReceiveBuffer(make([]byte, 8), size, gm.HighPriority, 0); err != nil {
		t.Fatal(err)
	}
	// The first message opens the session; once it is acknowledged, a
	// message's one frame leaves in the send call.
	sent := false
	if err := a.SendWithCallback([]byte("hello..."), size, 8, gm.HighPriority, b.NodeID(), 4,
		func(*gm.Port, any, gm.Status) { sent = true }, nil); err != nil {
		t.Fatal(err)
	}
	got := false
	for end := time.Now().Add(5 * time.Second); !sent || !got; time.Sleep(20 * time.Microsecond) {
		if time.Now().After(end) {
			t.Fatalf("first message: sent %v, received %v", sent, got)
		}
		if e := a.Receive(); e.Type != gm.NoRecvEvent {
			a.Unknown(e)
		}
		if e := b.Receive(); e.Type.IsRecv() {
			got = true
			if err := b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag); err != nil {
				t.Fatal(err)
			}
		} else if e.Type != gm.NoRecvEvent {
			b.Unknown(e)
		}
	}
	recvs := func() int { return int(cl.recvs.Load()) }

	quiet := func() {
		t.Helper()
		for i := 0; i < 5; i++ {
			if e := b.Receive(); e.Type != gm.NoRecvEvent {
				b.Unknown(e)
			}
		}
	}
	for round := 0; round < 3; round++ {
		quiet()
		const polls = 320
		before := recvs()
		for i := 0; i < polls; i++ {
			if e := b.Receive(); e.Type != gm.NoRecvEvent {
				t.Fatalf("round %d poll %d: event %v on a quiet port", round, i, e.Type)
			}
		}
		// One full poll in 16, plus the progress goroutine's drains (one
		// per millisecond at most, when the test is slow).
		if got := recvs() - before; got > polls/4 {
			t.Fatalf("round %d: %d quiet polls read the link %d times", round, polls, got)
		}
		// A message sent now (linktest delivers at once) is the next
		// poll's event.
		msg := []byte{byte(round), 1, 2, 3, 4, 5, 6, 7}
		if err := a.SendWithCallback(msg, size, len(msg), gm.HighPriority, b.NodeID(), 4, nil, nil); err != nil {
			t.Fatal(err)
		}
		e := b.Receive()
		if !e.Type.IsRecv() || string(e.Message) != string(msg) {
			t.Fatalf("round %d: the poll after the send returned %v %x", round, e.Type, e.Message)
		}
		if err := b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			if e := a.Receive(); e.Type != gm.NoRecvEvent {
				a.Unknown(e)
			}
		}
	}

	// An alarm that becomes due during quiet polls fires within a turn of
	// them (16 polls), not only when the progress goroutine ticks.
	quiet()
	var al gm.Alarm
	fired := false
	b.SetAlarm(&al, 1, func(any) { fired = true }, nil)
	time.Sleep(50 * time.Microsecond)
	for i := 0; i < 16 && !fired; i++ {
		e := b.Receive()
		switch e.Type {
		case gm.AlarmEvent:
			b.Unknown(e)
		case gm.NoRecvEvent:
		default:
			t.Fatalf("event %v", e.Type)
		}
	}
	if !fired {
		t.Fatal("an alarm due for 50 µs did not fire within 16 polls")
	}
}
