package gm_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/gm/link/linktest"
)

// TestFakeReceiveWindow: a port whose link holds few received frames
// advertises half of them as its receive window, and a sender with the
// default window keeps no more in flight to it: its ring never overflows
// (a burst of the default window would: linktest delivers a batch at once).
func TestFakeReceiveWindow(t *testing.T) {
	const ring = 40
	n := newFakeNet(t, 2, 1)
	a := n.open(t, 0, 2, nil)
	open := n.hub.Opener(n.macs, 0)
	b := n.open(t, 1, 2, func(c *gm.Config) {
		c.OpenLink = func(ifname string, lc *link.Config) (link.Endpoint, error) {
			ep, err := open(ifname, lc)
			if err == nil {
				ep.(*linktest.Link).SetRxFrames(ring)
			}
			return ep, err
		}
	})
	msg := pattern(300000, 3)
	size := gm.MinSizeForLength(len(msg))
	for i := range 3 {
		if err := b.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(size)), size, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
		comps := newCompletions()
		if err := a.SendWithCallback(msg, size, len(msg), gm.LowPriority, 2, 2, comps.cb, i); err != nil {
			t.Fatal(err)
		}
		la := startLoop(a, nil)
		got, _ := recvOne(t, b, 10*time.Second)
		if !bytes.Equal(got, msg) {
			t.Fatalf("message %d differs", i)
		}
		if c := comps.wait(t, 1, 10*time.Second); c[0].st != gm.Success {
			t.Fatalf("send %d: %v", i, c[0].st)
		}
		la.Stop()
	}
	if d := b.LinkStats().KernelDrops; d != 0 {
		t.Errorf("the receiver's ring of %d frames dropped %d", ring, d)
	}
	// A frame the ring dropped comes back as a loss or go-back resend; a
	// timeout alone can fire on a loaded machine (race detector, two
	// cores) with nothing lost, so it is not evidence of an overflow.
	if st := a.Stats(); st.RetransmitsLoss != 0 || st.RetransmitsGoBack != 0 {
		t.Errorf("data frames resent for loss: %d by selective ack, %d by go-back (%d by timeout)",
			st.RetransmitsLoss, st.RetransmitsGoBack, st.RetransmitsTimeout)
	}
}
