package gm_test

import (
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
)

// TestIntegrationPortFilter: a port's ring holds its own frames, and those
// of the closed ports only while it is the lowest-numbered open port of
// its unit (the one that answers for them): another port's traffic never
// enters it. When the answering port closes, the next one takes over, and
// sends to closed ports still fail at once with SendTargetPortClosed. The
// test follows the filters through PortInfo.RxPorts.
func TestIntegrationPortFilter(t *testing.T) {
	cl := netns.New(t, netns.Options{Hosts: 2})
	pr := pairOn(t, cl, nil) // a: host 0 port 2; b: host 1 port 4
	h1 := cl.Hosts[1]
	q := openPort(t, h1, 2, testConfig(h1, pr.mapf)) // below b: q answers for closed ports
	var got int
	lb := startLoop(pr.b, func(e *gm.Event) {
		got++
		_ = pr.b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	})
	defer lb.Stop()
	la := startLoop(pr.a, nil)
	defer la.Stop()
	for range 8 {
		if err := pr.b.ProvideReceiveBuffer(make([]byte, 1<<10), 10, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
	}
	// b learns within a map poll that q opened below it, and narrows its
	// filter to its own port.
	waitRxPorts(t, pr.b, []int{4}, 10*time.Second)
	qBefore := q.Info().Link.RxFrames

	const n = 300
	c := newCompletions()
	msg := make([]byte, 1000)
	for i := range n {
		for {
			err := pr.a.SendWithCallback(msg, 10, len(msg), gm.LowPriority, pr.bn, 4, c.cb, i)
			if err == nil {
				break
			}
			time.Sleep(time.Millisecond) // no send token free yet
		}
	}
	for _, cp := range c.wait(t, n, 30*time.Second) {
		if cp.st != gm.Success {
			t.Fatalf("send %d: %v", cp.id, cp.st)
		}
	}
	if qRx := q.Info().Link.RxFrames - qBefore; qRx != 0 {
		t.Errorf("port 2 read %d frames of port 4's stream of %d messages; want 0", qRx, n)
	}
	if bRx := pr.b.Info().Link.RxFrames; bRx < n {
		t.Errorf("port 4 read %d frames, want at least %d", bRx, n)
	}

	// A closed port is answered by q, the lowest open port.
	sendClosed := func(port, id int) {
		t.Helper()
		cc := newCompletions()
		if err := pr.a.SendWithCallback(msg[:8], 4, 8, gm.LowPriority, pr.bn, port, cc.cb, id); err != nil {
			t.Fatal(err)
		}
		if cs := cc.wait(t, 1, 10*time.Second); cs[0].st != gm.SendTargetPortClosed {
			t.Fatalf("send to closed port %d: %v, want SendTargetPortClosed", port, cs[0].st)
		}
	}
	sendClosed(7, 1)
	// q closes: b is the lowest open port now, and widens its filter to
	// the closed ports within a map poll.
	q.Close()
	waitRxPorts(t, pr.b, allPortsBut(), 10*time.Second)
	sendClosed(9, 2)
	sendClosed(2, 3)
}
