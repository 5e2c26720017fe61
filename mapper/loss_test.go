package mapper

import (
	"testing"
	"time"
)

// slowRings runs n for d with h slow: frozen for 4/5 of every startup
// pass (not long enough for a stall: its timers are never a pass late),
// its receive rings holding ring frames meanwhile, so that the frames
// that come later in each freeze are dropped.
func slowRings(n *simnet, h *simHost, ring int, d Time) {
	h.ring = ring
	pass := h.m.pass
	for end := n.now + d; n.now < end; {
		h.freeze(pass * 4 / 5)
		n.run(n.now + pass)
	}
	h.ring = 0
}

// TestLossyRings: a mapper whose receive rings drop frames (a slow host
// on a saturated machine: the kernel drops what a full ring cannot take)
// cannot tell the peers whose SCOUTs it dropped from peers that left.
// Told of the loss (FramesLost), the mapper in charge maps no host absent
// and makes no new version, and the network stays configured with the
// same map everywhere. The same run with the loss hidden from the mapper
// must map hosts absent (new versions): the scenario really drops the
// SCOUTs of some hosts for longer than the liveness window.
func TestLossyRings(t *testing.T) {
	for _, hide := range []bool{false, true} {
		name := "reported"
		if hide {
			name = "hidden"
		}
		t.Run(name, func(t *testing.T) {
			n := newSim(t, 21)
			startConverged(t, n, 16, "h%02d", 0)
			n.run(n.now + time.Second + 25*time.Millisecond)
			l := n.leader()
			v := l.m.Map().Version
			from := map[*simHost]int{}
			for _, h := range n.hosts {
				from[h] = len(h.maps)
			}
			l.hideLoss = hide
			slowRings(n, l, 1, 3*time.Second)
			n.run(n.now + 2*time.Second)
			remapped := false
			for _, h := range n.hosts {
				if got := h.m.Map().Version; got != v || len(h.maps) != from[h] {
					remapped = true
					if !hide {
						t.Errorf("%s: map version %d, want %d, %d maps installed: nothing changed but the mapper's rings dropped frames",
							h.name, got, v, len(h.maps)-from[h])
					}
				}
			}
			if hide {
				if !remapped {
					t.Fatal("with the loss hidden, the mapper in charge made no new version: the test drops too little")
				}
				return
			}
			if l.m.counters.LossWindows == 0 {
				t.Error("no loss window counted")
			}
			if st := l.m.Status(); st.Counters.LossWindows != l.m.counters.LossWindows {
				t.Errorf("Status().Counters.LossWindows = %d, want %d", st.Counters.LossWindows, l.m.counters.LossWindows)
			}
			if !converged(n.hosts) {
				t.Fatalf("not converged:\n%s", why(n.hosts))
			}
		})
	}
}

// TestLossyRingsLeft: lost frames keep a peer alive for at most
// forgetIntervals without a frame of its own: a host that leaves while the
// mapper in charge keeps losing frames is mapped absent all the same.
func TestLossyRingsLeft(t *testing.T) {
	n := newSim(t, 21)
	startConverged(t, n, 16, "h%02d", 0)
	n.run(n.now + time.Second + 25*time.Millisecond)
	l := n.leader()
	gone := n.hosts[3]
	gone.kill()
	slowRings(n, l, 1, (forgetIntervals+8)*l.m.interval)
	if l.m.counters.LossWindows == 0 {
		t.Fatal("no loss window counted")
	}
	for _, e := range l.m.cur.entries {
		if e.macs[0] == gone.macs[0] && !e.absent() {
			t.Fatalf("%s left %v ago while %s lost frames, and is present in its map, version %d",
				gone.name, (forgetIntervals+8)*l.m.interval, l.name, l.m.cur.version)
		}
	}
}
