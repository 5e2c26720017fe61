package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns/relay"
)

// kind is what a fault does.
type kind int

const (
	killRecv   kind = iota // kill -9 a receiving process, restart it later
	killSend               // kill -9 a sending process, restart it later
	killMapper             // kill -9 a gm_mapper, restart it later
	killLeader             // kill -9 the mapper in charge, restart it later
	cutRail                // ip link set down a host's rail, up later
	partition              // move some hosts' switch ports to other bridges, back later
	impair                 // impair a relayed rail, clear it later
	numKinds
)

var kindNames = [numKinds]string{"kill-recv", "kill-send", "kill-mapper", "kill-leader", "cut-rail", "partition", "impair"}

func (k kind) String() string { return kindNames[k] }

// weights of the kinds in the schedule.
var weights = [numKinds]int{4, 3, 2, 2, 3, 2, 3}

// fault is one step of the schedule: at offset At from the start, do Kind
// to Hosts (one host, or the hosts cut off by a partition) for Dur, then
// undo it.
type fault struct {
	At, Dur time.Duration
	Kind    kind
	Hosts   []int
	Rail    int
	Imp     relay.Impairment
}

func (f fault) String() string {
	s := fmt.Sprintf("%v +%v %v hosts %v", f.At.Round(time.Millisecond), f.Dur.Round(time.Millisecond), f.Kind, f.Hosts)
	switch f.Kind {
	case cutRail, impair:
		s += fmt.Sprintf(" rail %d", f.Rail)
	}
	if f.Kind == impair {
		s += fmt.Sprintf(" drop %.3f dup %.3f reorder %.3f corrupt %.4f jitter %v", f.Imp.Drop, f.Imp.Duplicate, f.Imp.Reorder, f.Imp.Corrupt, f.Imp.Jitter)
	}
	return s
}

// makePlan returns the schedule of a run: faults from the seed alone, each
// over by length. A resource (a host's receiver, sender, mapper, rail or
// relay; the partition) has at most one fault at a time; faults of
// different resources overlap.
func makePlan(seed int64, length time.Duration, hosts int, relayed []int, rails int) []fault {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e656d65736973))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	busy := map[string]time.Duration{} // resource -> free from
	var total int
	for _, w := range weights {
		total += w
	}
	var plan []fault
	for at := between(200*time.Millisecond, time.Second); at < length-time.Second; at += between(300*time.Millisecond, 1200*time.Millisecond) {
		for range 4 { // a few tries to find a free resource
			w := rng.IntN(total)
			k := kind(0)
			for ; w >= weights[k]; k++ {
				w -= weights[k]
			}
			f := fault{At: at, Kind: k}
			h := rng.IntN(hosts)
			var res string
			switch k {
			case killRecv, killSend, killMapper:
				f.Dur = between(100*time.Millisecond, 3*time.Second)
				f.Hosts = []int{h}
				res = fmt.Sprintf("%v %d", k, h)
			case killLeader:
				f.Dur = between(100*time.Millisecond, 3*time.Second)
				res = "leader"
			case cutRail:
				f.Dur = between(500*time.Millisecond, 5*time.Second)
				f.Hosts, f.Rail = []int{h}, rng.IntN(rails)
				res = fmt.Sprintf("rail %d %d", h, f.Rail)
			case partition:
				// Most partitions are shorter than the peers' liveness
				// timeout (streams stall and go on), some longer (they
				// fail).
				f.Dur = between(time.Second, 6*time.Second)
				if rng.IntN(4) == 0 {
					f.Dur = between(12*time.Second, 20*time.Second)
				}
				n := 1 + rng.IntN(max(hosts/2-1, 1))
				f.Hosts = rng.Perm(hosts)[:n]
				slices.Sort(f.Hosts)
				res = "partition"
			case impair:
				f.Dur = between(time.Second, 6*time.Second)
				h = relayed[rng.IntN(len(relayed))]
				f.Hosts, f.Rail = []int{h}, 1
				f.Imp = relay.Impairment{Drop: 0.15 * rng.Float64()}
				if rng.IntN(2) == 0 {
					f.Imp.Duplicate = 0.03 * rng.Float64()
				}
				if rng.IntN(2) == 0 {
					f.Imp.Reorder, f.Imp.ReorderGap = 0.05*rng.Float64(), 1+rng.IntN(4)
				}
				if rng.IntN(2) == 0 {
					f.Imp.Corrupt = 0.005 * rng.Float64()
				}
				if rng.IntN(2) == 0 {
					f.Imp.Jitter = time.Duration(rng.Int64N(int64(time.Millisecond)))
				}
				res = fmt.Sprintf("relay %d", h)
			}
			// Kills of mappers and of the leader share the mappers.
			if k == killMapper || k == killLeader {
				if busy["leader"] > at || busy["mappers"] > at && k == killLeader {
					continue
				}
			}
			if busy[res] > at {
				continue
			}
			f.Dur = min(f.Dur, length-at)
			busy[res] = at + f.Dur + 200*time.Millisecond
			if k == killMapper {
				busy["mappers"] = max(busy["mappers"], busy[res])
			}
			plan = append(plan, f)
			break
		}
	}
	return plan
}

func formatPlan(plan []fault) string {
	var b strings.Builder
	for _, f := range plan {
		fmt.Fprintf(&b, "  %v\n", f)
	}
	return b.String()
}

// TestPlanFromSeed: a schedule depends on the seed alone (a failing run is
// repeated from its seed), covers every kind of fault, keeps within its
// length and never faults one resource twice at a time.
func TestPlanFromSeed(t *testing.T) {
	a := makePlan(7, 5*time.Minute, 8, []int{1, 4, 6}, 2)
	b := makePlan(7, 5*time.Minute, 8, []int{1, 4, 6}, 2)
	if formatPlan(a) != formatPlan(b) {
		t.Fatal("two plans of seed 7 differ")
	}
	if c := makePlan(8, 5*time.Minute, 8, []int{1, 4, 6}, 2); formatPlan(a) == formatPlan(c) {
		t.Fatal("seeds 7 and 8 gave the same plan")
	}
	var seen [numKinds]int
	for i, f := range a {
		seen[f.Kind]++
		if f.At+f.Dur > 5*time.Minute || f.Dur <= 0 {
			t.Errorf("fault %v outside the run", f)
		}
		for _, g := range a[:i] {
			if g.At+g.Dur <= f.At || g.Kind != f.Kind && !(f.Kind == partition || g.Kind == partition) {
				continue
			}
			if f.Kind == partition && g.Kind == partition || slices.Equal(f.Hosts, g.Hosts) && f.Rail == g.Rail && f.Kind == g.Kind {
				t.Errorf("faults overlap on one resource: %v and %v", g, f)
			}
		}
	}
	for k, n := range seen {
		if n == 0 {
			t.Errorf("no %v fault in 5 minutes", kind(k))
		}
	}
}
