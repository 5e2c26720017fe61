package mapper

import (
	"container/heap"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/nodemap"
)

// freeze stops h's mapper for d: a host so loaded that its driver runs
// neither its timers nor its receive loop.
func (h *simHost) freeze(d Time) {
	if h.n.now >= h.frozenUntil {
		h.frozenAt = h.n.now
	}
	h.frozenUntil = h.n.now + d
	if h.ring > 0 {
		// The driver's first look at its rings when it runs again
		// (before the late Tick, which the timer heap orders after).
		for r := range h.macs {
			h.n.seq++
			heap.Push(&h.n.frames, simFrame{at: h.frozenUntil, seq: h.n.seq, to: h, rail: r})
		}
	}
	h.schedule()
}

// checkMaps fails if a host installed, from index from[h] of its maps on,
// a map without every host of want or without a route to each of them,
// or if two different maps (hosts or routes) of one host carry one
// version.
func checkMaps(t *testing.T, hs, check []*simHost, from map[*simHost]int) {
	t.Helper()
	for _, h := range check {
		seen := map[uint32]string{}
		for _, m := range h.maps {
			f := string(m.Format())
			if g, ok := seen[m.Version]; ok && g != f {
				t.Errorf("%s installed two maps of version %d:\n%s\n%s", h.name, m.Version, g, f)
			}
			seen[m.Version] = f
		}
		for _, m := range h.maps[from[h]:] {
			for _, o := range hs {
				if o == h {
					continue
				}
				e, ok := m.ByMAC(o.macs[0])
				if !ok {
					t.Errorf("%s installed map version %d without %s:\n%s", h.name, m.Version, o.name, m.Format())
					continue
				}
				if len(m.RoutesTo(e.ID)) == 0 {
					t.Errorf("%s installed map version %d without a route to %s:\n%s", h.name, m.Version, o.name, m.Format())
				}
			}
		}
	}
}

// TestSlowHost: a mapper that stalls (CPU starvation: its timers run late
// and the frames wait in its rings) must not drop, from the map it
// installs, the peers whose frames were there all along (it was not
// looking), nor install two maps of one version. When one host stalls
// longer than the liveness window, the others rightly see it silent and
// map it absent (their maps are not checked); when the whole machine is
// slow (every host stalls, "all"), no map changes at all.
func TestSlowHost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		who   []int // hosts frozen, one after the other
		pause Time
	}{
		{"follower", []int{0}, 1500 * time.Millisecond},
		{"leader", []int{2}, 1500 * time.Millisecond},
		{"all", []int{0, 2, 1}, 2 * time.Second},
		{"all-long", []int{1, 0, 2}, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newSim(t, 7)
			startConverged(t, n, 3, "h%d", 0, 1)
			n.run(n.now + time.Second)
			from := map[*simHost]int{}
			for _, h := range n.hosts {
				from[h] = len(h.maps)
			}
			v := n.hosts[0].m.Map().Version
			for k, i := range tc.who {
				n.hosts[i].freeze(tc.pause)
				n.run(n.now + Time(k+1)*100*time.Millisecond)
			}
			n.run(n.now + tc.pause + 2*time.Second)
			var check []*simHost
			for _, i := range tc.who {
				check = append(check, n.hosts[i])
				if n.hosts[i].m.counters.Stalls == 0 {
					t.Errorf("%s: no stall counted", n.hosts[i].name)
				}
			}
			checkMaps(t, n.hosts, check, from)
			if !converged(n.hosts) {
				t.Fatalf("not converged:\n%s", why(n.hosts))
			}
			if len(tc.who) < len(n.hosts) {
				return
			}
			for _, h := range n.hosts {
				if got := h.m.Map().Version; got != v {
					t.Errorf("%s: map version %d after the stall, want %d (nothing changed)", h.name, got, v)
				}
			}
		})
	}
}

// TestSlowStart: the best mapper stalls in its startup passes, so long
// that the others give up on it and one of them maps without it; when it
// runs again, the frames that waited for it include that map. Every
// version must name one map (the same hosts and ids) on every host, and
// the network must converge with every host mapped and routed.
func TestSlowStart(t *testing.T) {
	for _, pause := range []Time{700 * time.Millisecond, 1200 * time.Millisecond, 3 * time.Second} {
		t.Run(pause.String(), func(t *testing.T) {
			n := newSim(t, 11)
			for i := range 3 {
				n.add(fmt.Sprintf("h%d", i), 1, 0, 1)
			}
			startAll(n)
			n.run(60 * time.Millisecond)
			n.hosts[2].freeze(pause)
			mustConverge(t, n, pause+3*time.Second)
			n.run(n.now + time.Second)
			byVersion := map[uint32]string{}
			for _, h := range n.hosts {
				for _, m := range h.maps {
					var b strings.Builder
					fmt.Fprintf(&b, "mapper %s\n", nodemap.FormatMAC(m.Mapper))
					for _, e := range m.Entries() {
						fmt.Fprintf(&b, "%d %s %v\n", e.ID, e.Host, e.MACs)
					}
					if g, ok := byVersion[m.Version]; ok && g != b.String() {
						t.Errorf("version %d names two maps (%s's):\n%s\n%s", m.Version, h.name, g, b.String())
					}
					byVersion[m.Version] = b.String()
				}
			}
			checkMaps(t, n.hosts, n.hosts, map[*simHost]int{
				n.hosts[0]: len(n.hosts[0].maps) - 1, n.hosts[1]: len(n.hosts[1].maps) - 1, n.hosts[2]: len(n.hosts[2].maps) - 1})
		})
	}
}
