package mapper

import (
	"fmt"
	"testing"
	"time"

	"github.com/ethergm/ethergm/nodemap"
)

// TestChaos runs seeded random trouble on 40 dual-rail hosts for 20 s of
// virtual time (5% loss, 2% duplication; mapper restarts with and without
// their state, rail cuts with and without carrier, partitions), then
// repairs everything: the network must converge again, and every host
// keeps the id it had in the first map.
func TestChaos(t *testing.T) {
	for seed := range uint64(chaosSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			n := newSim(t, 1000+seed)
			n.loss, n.dup = 0.05, 0.02
			for i := range 40 {
				level := uint8(1)
				if i%5 == 0 {
					level = 0
				}
				n.add(fmt.Sprintf("c%02d", i), level, 0, 1)
			}
			startAll(n)
			mustConverge(t, n, 3*time.Second)
			first := ids(n.hosts)
			var part map[*simHost]int
			end := n.now + 20*time.Second
			for n.now < end {
				n.run(n.now + time.Duration(50+n.rng.IntN(400))*time.Millisecond)
				h := n.hosts[n.rng.IntN(len(n.hosts))]
				switch n.rng.IntN(6) {
				case 0:
					if h.alive {
						h.kill()
					} else {
						if n.rng.IntN(3) == 0 {
							h.state = State{}
						}
						h.start()
					}
				case 1, 2:
					r := n.rng.IntN(2)
					h.setLink(r, !h.plug[r], n.rng.IntN(2) == 0)
				case 3:
					if part == nil {
						part = map[*simHost]int{}
						for _, x := range n.hosts {
							part[x] = n.rng.IntN(2)
						}
						n.blocked = func(a, b *simHost) bool { return part[a] != part[b] }
					} else {
						part, n.blocked = nil, nil
					}
				}
			}
			// Repair.
			n.blocked = nil
			n.loss, n.dup = 0.01, 0.01
			for _, h := range n.hosts {
				for r := range h.plug {
					if !h.plug[r] {
						h.setLink(r, true, true)
					}
				}
				if !h.alive {
					h.start()
				}
			}
			mustConverge(t, n, 5*time.Second)
			n.run(n.now + time.Second) // every MAC heard again
			if !converged(n.hosts) {
				t.Fatalf("lost convergence:\n%s", why(n.hosts))
			}
			after := ids(n.hosts)
			seen := map[nodemap.NodeID]string{}
			for _, h := range n.hosts {
				if after[h.name] != first[h.name] {
					t.Errorf("%s: id %d -> %d", h.name, first[h.name], after[h.name])
				}
				if o, dup := seen[after[h.name]]; dup {
					t.Errorf("id %d for %s and %s", after[h.name], o, h.name)
				}
				seen[after[h.name]] = h.name
				if got := len(h.m.Map().Routes()); got != 2*(len(n.hosts)-1) {
					t.Errorf("%s: %d routes, want %d", h.name, got, 2*(len(n.hosts)-1))
				}
			}
			t.Logf("leader %s, map %d", n.leader().name, n.leader().m.cur.version)
		})
	}
}

// chaosSeeds is the number of seeds TestChaos runs.
var chaosSeeds = 3
