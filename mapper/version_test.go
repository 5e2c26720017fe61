package mapper

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// Map versions in the edge cases: two fresh mappers in a partition both
// issue version 1; hosts that hear different sets of mappers.

// hostsOf is what a map says of the hosts (ids, names, MACs), without
// this host's routes: what one (mapper, version) must always name.
func hostsOf(m *nodemap.Map) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s\n", m.Version, nodemap.FormatMAC(m.Mapper))
	for _, e := range m.Entries() {
		fmt.Fprintf(&b, "%d %s", e.ID, e.Host)
		for _, mac := range e.MACs {
			b.WriteString(" " + nodemap.FormatMAC(mac))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// checkVersions fails if a host of hs installed two maps of one version
// that name different hosts (its routes may change, its hosts may not), or
// if a version went back (InstallMap checks that).
func checkVersions(t *testing.T, hs []*simHost) {
	t.Helper()
	for _, h := range hs {
		seen := map[uint32]string{}
		for _, m := range h.maps {
			k := hostsOf(m)
			if g, ok := seen[m.Version]; ok && g != k {
				t.Errorf("%s installed two maps of version %d:\n%s\n%s", h.name, m.Version, g, k)
			}
			seen[m.Version] = k
		}
	}
}

// TestPartitionedFreshMappers: two halves of a network that cannot hear
// each other start fresh at once, so both mappers in charge issue version
// 1, with other contents. When they meet, no host may take the other
// side's version 1 for its own (it would keep a map that says another
// thing than the one its mapper distributes): the mapper that wins makes
// a version above both, every host installs it, and no host ever holds
// two maps of one version naming different hosts.
func TestPartitionedFreshMappers(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			n := newSim(t, 100+seed)
			n.loss = 0.01
			for i := range 8 {
				n.add(fmt.Sprintf("h%d", i), uint8(1+i%2), 0)
			}
			side := func(h *simHost) int { return h.i % 2 }
			n.blocked = func(a, b *simHost) bool { return side(a) != side(b) }
			var sides [2][]*simHost
			for _, h := range n.hosts {
				sides[side(h)] = append(sides[side(h)], h)
			}
			// The CONFIG frames of version 1 of side 1's mapper (levels
			// 2: it wins when the sides meet).
			var v1 [][]byte
			n.tap = func(to *simHost, rail int, f []byte) {
				h, err := wire.ParseFrameCRC(f, wire.EtherType)
				if err != nil || h.Type() != wire.TypeConfig || side(to) != 1 {
					return
				}
				if c, err := wire.ParseConfig(h.Payload()); err == nil && c.MapVersion == 1 && c.Flags == 0 {
					v1 = append(v1, slices.Clone(f))
				}
			}
			startAll(n)
			if !n.runUntil(3*time.Second, func() bool { return converged(sides[0]) && converged(sides[1]) }) {
				t.Fatalf("sides did not converge:\nA\n%sB\n%s", why(sides[0]), why(sides[1]))
			}
			n.tap = nil
			for _, s := range sides {
				if v := s[0].m.cur.version; v != 1 {
					t.Fatalf("side of %s holds version %d, want 1 (fresh mappers)", s[0].name, v)
				}
			}
			if hostsOf(sides[0][0].m.Map()) == hostsOf(sides[1][0].m.Map()) {
				t.Fatal("both sides hold one map")
			}
			var winner *simHost
			for _, h := range sides[1] {
				if h.m.leading() {
					winner = h
				}
			}
			if winner == nil || len(v1) == 0 {
				t.Fatalf("side 1: no mapper in charge, or no CONFIG of version 1 seen (%d)", len(v1))
			}
			n.blocked = nil
			// The moment a host of side 0 follows the winner while it
			// still holds its side's version 1, the winner's version 1
			// reaches it (a retry, a late or replayed frame): it must
			// not take it.
			h0 := sides[0][0]
			if !n.runUntil(n.now+2*time.Second, func() bool { return h0.m.elected == winner.macs[0] }) {
				t.Fatalf("%s does not follow %s:\n%s", h0.name, winner.name, why(n.hosts))
			}
			if h0.m.cur.version == 1 && h0.m.cur.mapper != winner.macs[0] {
				before := hostsOf(h0.m.Map())
				for _, f := range v1 {
					h0.m.Input(n.now, 0, f)
				}
				h0.schedule()
				if got := hostsOf(h0.m.Map()); got != before {
					t.Errorf("%s took the other side's version 1:\n%s\nwas\n%s", h0.name, got, before)
				}
			} else {
				t.Logf("%s already holds version %d of %s", h0.name, h0.m.cur.version, nodemap.FormatMAC(h0.m.cur.mapper))
			}
			if !n.runUntil(n.now+4*time.Second, func() bool { return converged(n.hosts) && n.hosts[0].m.Map().Len() == 8 }) {
				t.Fatalf("not healed:\n%s", why(n.hosts))
			}
			if v := n.hosts[0].m.cur.version; v < 2 {
				t.Errorf("converged on version %d, want above both sides' 1", v)
			}
			checkVersions(t, n.hosts)
		})
	}
}

// TestMappersHeardBySome: hosts that hear different sets of mappers.
// Mapper a and mapper b (b ranks higher) cannot hear each other; x hears
// both and follows b; y hears a only. In the one-way case b hears y
// (y's transmitter reaches b, b's frames do not reach y), so b counts y
// as a host of its map though y follows a: a sees x holding b's map, b
// sees y holding a's, and each makes a version above the other's, which
// the other sees again. Once nothing changes, the versions must stay put
// when the hearing is symmetric (a mapper outbids only those below it),
// and grow by at most one per mapper per maxOutbidBackoff intervals in
// the one-way case (before: one per mapper per interval).
func TestMappersHeardBySome(t *testing.T) {
	for _, tc := range []struct {
		name   string
		oneWay bool
		most   uint64 // remaps of a and b in the measured minute
	}{{"both-ways", false, 0}, {"one-way", true, 2 * uint64(64*time.Second/(maxOutbidBackoff*DefaultVerifyInterval)+1)}} {
		t.Run(tc.name, func(t *testing.T) {
			n := newSim(t, 7)
			a := n.add("a", 1, 0)
			b := n.add("b", 1, 0)
			x := n.add("x", 0, 0)
			y := n.add("y", 0, 0)
			n.blocked = func(p, q *simHost) bool {
				switch {
				case (p == a && q == b) || (p == b && q == a):
					return true
				case p == b && q == y:
					return true
				case p == y && q == b:
					return !tc.oneWay
				}
				return false
			}
			startAll(n)
			n.run(3 * time.Second)
			if x.m.cur.mapper != b.macs[0] {
				t.Fatalf("x follows %s, want b:\n%s", nodemap.FormatMAC(x.m.cur.mapper), why(n.hosts))
			}
			if y.m.cur.mapper != a.macs[0] {
				t.Fatalf("y follows %s, want a:\n%s", nodemap.FormatMAC(y.m.cur.mapper), why(n.hosts))
			}
			// The backoff reaches its bound within 127 intervals.
			n.run(n.now + 128*DefaultVerifyInterval)
			v0 := max(a.m.lastVersion, b.m.lastVersion)
			r0 := a.m.counters.Remaps + b.m.counters.Remaps
			n.run(n.now + 64*time.Second)
			v1 := max(a.m.lastVersion, b.m.lastVersion)
			r1 := a.m.counters.Remaps + b.m.counters.Remaps
			t.Logf("versions %d -> %d, %d remaps in 64 s", v0, v1, r1-r0)
			if r1-r0 > tc.most || uint64(v1-v0) > tc.most {
				t.Errorf("nothing changed, yet versions went from %d to %d (%d remaps in 64 s, want at most %d):\n%s", v0, v1, r1-r0, tc.most, why(n.hosts))
			}
			// Whoever follows whom holds that mapper's newest map.
			if x.m.cur.version != b.m.lead.version || x.m.cur.mapper != b.macs[0] {
				t.Errorf("x holds version %d, b made %d", x.m.cur.version, b.m.lead.version)
			}
			if y.m.cur.version != a.m.lead.version || y.m.cur.mapper != a.macs[0] {
				t.Errorf("y holds version %d, a made %d", y.m.cur.version, a.m.lead.version)
			}
			checkVersions(t, []*simHost{x, y})
		})
	}
}
