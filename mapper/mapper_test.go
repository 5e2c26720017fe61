package mapper

import (
	"fmt"
	"testing"
	"time"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

func startAll(n *simnet) {
	for _, h := range n.hosts {
		h.start()
	}
}

// startConverged adds count level-1 hosts named format (with their index)
// on bridges, starts every host of n and waits until they converge.
func startConverged(t *testing.T, n *simnet, count int, format string, bridges ...int) {
	t.Helper()
	for i := range count {
		n.add(fmt.Sprintf(format, i), 1, bridges...)
	}
	startAll(n)
	mustConverge(t, n, 2*time.Second)
}

func mustConverge(t *testing.T, n *simnet, limit Time) Time {
	t.Helper()
	start := n.now
	if !n.runUntil(n.now+limit, func() bool { return converged(n.live()) }) {
		t.Fatalf("not converged %v after %v:\n%s", limit, start, why(n.live()))
	}
	return n.now - start
}

func TestOneBridge(t *testing.T) {
	n := newSim(t, 1)
	for i := range 4 {
		n.add(fmt.Sprintf("h%d", i), 1, 0)
	}
	startAll(n)
	d := mustConverge(t, n, 2*time.Second)
	t.Logf("4 hosts configured after %v", d)
	l := n.leader()
	if l != n.hosts[3] {
		t.Fatalf("leader %s, want h3 (highest MAC)", l.name)
	}
	m := n.hosts[0].m.Map()
	if m.Len() != 4 || m.Version == 0 || m.Mapper != n.hosts[3].macs[0] {
		t.Fatalf("map %s", m.Format())
	}
	for _, h := range n.hosts {
		self := h.m.cur.self
		for _, o := range n.hosts {
			if o == h {
				continue
			}
			e, _ := h.m.Map().ByMAC(o.macs[0])
			rs := h.m.Map().RoutesTo(e.ID)
			if len(rs) != 1 || rs[0].Local != h.macs[0] || rs[0].Peer != o.macs[0] {
				t.Fatalf("%s (node %d) routes to %s: %v", h.name, self, o.name, rs)
			}
		}
	}
}

// TestLevels: level 0 never maps; the highest level wins over MACs.
func TestLevels(t *testing.T) {
	n := newSim(t, 2)
	n.add("a", 2, 0)
	n.add("b", 1, 0)
	n.add("c", 0, 0)
	n.add("d", 1, 0)
	startAll(n)
	mustConverge(t, n, 2*time.Second)
	if l := n.leader(); l.name != "a" {
		t.Fatalf("leader %s, want a (level 2)", l.name)
	}
	n.hosts[0].kill()
	mustConverge(t, n, 3*time.Second)
	if l := n.leader(); l.name != "d" {
		t.Fatalf("leader %s, want d (level 1, highest MAC)", l.name)
	}
	n2 := newSim(t, 3)
	n2.add("x", 0, 0)
	n2.add("y", 0, 0)
	startAll(n2)
	n2.run(3 * time.Second)
	for _, h := range n2.hosts {
		if h.m.Map() != nil || h.m.leading() {
			t.Fatalf("%s: level-0 hosts made a map", h.name)
		}
	}
}

// routeSet returns h's routes to o as "local-rail>peer-rail" strings.
func routeSet(h, o *simHost) []string {
	m := h.m.Map()
	e, ok := m.ByMAC(o.macs[0])
	if !ok {
		return []string{"absent"}
	}
	var out []string
	for _, r := range m.RoutesTo(e.ID) {
		lr, pr := -1, -1
		for i, mac := range h.macs {
			if mac == r.Local {
				lr = i
			}
		}
		for i, mac := range o.macs {
			if mac == r.Peer {
				pr = i
			}
		}
		out = append(out, fmt.Sprintf("%d>%d", lr, pr))
	}
	return out
}

func TestTopologies(t *testing.T) {
	type host struct {
		name    string
		bridges []int
	}
	tests := []struct {
		name   string
		hosts  []host
		routes map[string]string // "a-b": routes of a to b
	}{
		{"two rails two bridges", []host{{"a", []int{0, 1}}, {"b", []int{0, 1}}, {"c", []int{0, 1}}},
			map[string]string{"a-b": "[0>0 1>1]", "c-a": "[0>0 1>1]"}},
		{"single rail among dual", []host{{"a", []int{0, 1}}, {"b", []int{0, 1}}, {"s", []int{0}}},
			map[string]string{"a-s": "[0>0]", "s-a": "[0>0]", "a-b": "[0>0 1>1]"}},
		{"crossed rails", []host{{"a", []int{0, 1}}, {"b", []int{1, 0}}, {"c", []int{0, 1}}},
			map[string]string{"a-b": "[0>1 1>0]", "b-a": "[0>1 1>0]", "a-c": "[0>0 1>1]"}},
		{"one bridge dual rail", []host{{"a", []int{0, 0}}, {"b", []int{0, 0}}},
			map[string]string{"a-b": "[0>0 1>1]"}},
		{"peer on some rails", []host{{"a", []int{0, 1, 2}}, {"b", []int{0, 1, 3}}, {"c", []int{3}}},
			map[string]string{"a-b": "[0>0 1>1]", "b-c": "[2>0]", "c-b": "[0>2]", "a-c": "absent-routes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newSim(t, 4)
			byName := map[string]*simHost{}
			for _, h := range tt.hosts {
				byName[h.name] = n.add(h.name, 1, h.bridges...)
			}
			startAll(n)
			if tt.name == "peer on some rails" {
				// c shares no segment with the leader (b has the highest
				// MAC? no: c does); make b the leader with a higher level.
				byName["b"].level = 2
				for _, h := range n.hosts {
					h.kill()
				}
				for _, h := range n.hosts {
					h.start()
				}
			}
			mustConverge(t, n, 3*time.Second)
			for k, want := range tt.routes {
				var a, b string
				fmt.Sscanf(k[:1]+" "+k[2:], "%s %s", &a, &b)
				got := fmt.Sprint(routeSet(byName[a], byName[b]))
				if want == "absent-routes" {
					want = "[]"
				}
				if got != want {
					t.Errorf("routes %s→%s = %s, want %s", a, b, got, want)
				}
			}
		})
	}
}

// TestScale maps hundreds of hosts with long names on two rails with loss
// and duplication, all started within 100 ms (the startup burst), and
// 1,024 dual-rail hosts started over 1 s (a cluster booting), then counts
// the frames of a steady state: O(1) per follower, O(N) for the mapper in
// charge (checkSteadyFrames).
func TestScale(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hosts  int
		rails  int
		spread Time // hosts start over spread, in random order
		long   bool // 128-byte names
	}{
		{"256", 256, 2, 100 * time.Millisecond, true},
		{"320", 320, 1, 100 * time.Millisecond, true},
		{"1024", 1024, 2, time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("short")
			}
			if raceEnabled {
				// Fewer hosts; run without -race for the full size.
				tc.hosts /= 4
				if tc.hosts > 128 {
					tc.hosts = 128
				}
			}
			n := newSim(t, 5)
			n.loss, n.dup = 0.01, 0.01
			for i := range tc.hosts {
				name := fmt.Sprintf("host-%04d-", i)
				for tc.long && len(name) < nodemap.MaxHostNameLen {
					name += "x"
				}
				bridges := []int{0, 1}[:tc.rails]
				n.add(name, 1, bridges...)
			}
			order := n.rng.Perm(tc.hosts)
			for k, i := range order {
				n.run(Time(k) * tc.spread / Time(tc.hosts))
				n.hosts[i].start()
			}
			d := mustConverge(t, n, 5*time.Second)
			var versions uint64
			for _, h := range n.hosts {
				versions += h.m.counters.Remaps
			}
			t.Logf("%d hosts × %d rails started over %v, 1%% loss, 1%% dup: fully configured %v after the last start (virtual), %d map versions",
				tc.hosts, tc.rails, tc.spread, d, versions)
			if d > 2*time.Second {
				t.Errorf("configured after %v, goal 2s", d)
			}
			n.loss, n.dup = 0, 0
			n.run(n.now + 500*time.Millisecond)
			checkSteadyFrames(t, n, tc.rails, 4)
		})
	}
}

// checkSteadyFrames counts the mapper frames every host sends and
// receives over intervals verification intervals once nothing changes:
// a follower sends its SCOUT to the mapper in charge and hears the
// mapper's, one frame each way per rail per interval; the mapper in
// charge broadcasts one per rail and hears one from every other host per
// rail. No map version is made meanwhile.
func checkSteadyFrames(t *testing.T, n *simnet, rails, intervals int) {
	t.Helper()
	l := n.leader()
	if l == nil {
		t.Fatalf("no mapper in charge:\n%s", why(n.live()))
	}
	v := l.m.cur.version
	before := n.snapshot()
	n.run(n.now + Time(intervals)*DefaultVerifyInterval)
	after := n.snapshot()
	most := (intervals + 1) * rails // a round may fall on either edge
	maxSent, maxRecv := 0, 0
	for _, h := range n.live() {
		sent, recv := after.sent[h.i]-before.sent[h.i], after.recv[h.i]-before.recv[h.i]
		if h == l {
			others := len(n.live()) - 1
			if sent > most || recv > (intervals+1)*rails*others || recv < (intervals-1)*rails*others {
				t.Errorf("mapper in charge %s sent %d and received %d frames in %d intervals (%d hosts, %d rails)",
					h.name, sent, recv, intervals, others+1, rails)
			}
			t.Logf("mapper in charge: %.1f frames sent, %.1f received per interval (%d hosts × %d rails)",
				float64(sent)/float64(intervals), float64(recv)/float64(intervals), others+1, rails)
			continue
		}
		if sent > most || recv > most {
			t.Errorf("follower %s sent %d and received %d frames in %d intervals, want at most %d each",
				h.name, sent, recv, intervals, most)
		}
		maxSent, maxRecv = max(maxSent, sent), max(maxRecv, recv)
	}
	t.Logf("followers: at most %.2f frames sent and %.2f received per rail per interval",
		float64(maxSent)/float64(intervals*rails), float64(maxRecv)/float64(intervals*rails))
	if l.m.cur.version != v || !converged(n.live()) {
		t.Fatalf("map moved in a steady state: %d -> %d\n%s", v, l.m.cur.version, why(n.live()))
	}
}

// TestTakeover kills the mapper in charge: another takes over, ids stay.
func TestTakeover(t *testing.T) {
	n := newSim(t, 6)
	startConverged(t, n, 16, "h%02d", 0, 1)
	before := ids(n.hosts)
	old := n.leader()
	v := old.m.cur.version
	old.kill()
	d := mustConverge(t, n, 3*time.Second)
	t.Logf("leader killed: new map configured everywhere after %v", d)
	if d > 2*time.Second {
		t.Errorf("takeover took %v, goal 2s", d)
	}
	nl := n.leader()
	if nl == old || nl.m.cur.version <= v {
		t.Fatalf("leader %s version %d (old %d)", nl.name, nl.m.cur.version, v)
	}
	after := ids(n.live())
	for name, id := range after {
		if before[name] != id {
			t.Errorf("%s: id %d -> %d", name, before[name], id)
		}
	}
	// The old leader's id stays reserved.
	m := nl.m.Map()
	if e, ok := m.ByMAC(old.macs[0]); !ok || e.ID != before[old.name] || len(m.RoutesTo(e.ID)) != 0 {
		t.Errorf("old leader in map: %+v %v", e, ok)
	}
	// It comes back with its state: it leads again, ids unchanged.
	old.start()
	mustConverge(t, n, 3*time.Second)
	if n.leader() != old {
		t.Fatalf("leader %s after the old one came back", n.leader().name)
	}
	for name, id := range ids(n.hosts) {
		if before[name] != id {
			t.Errorf("after return %s: id %d -> %d", name, before[name], id)
		}
	}
}

// TestRailCut unplugs a rail with and without carrier loss.
func TestRailCut(t *testing.T) {
	for _, tell := range []bool{true, false} {
		t.Run(fmt.Sprint("carrier=", tell), func(t *testing.T) {
			n := newSim(t, 7)
			startConverged(t, n, 8, "h%d", 0, 1)
			v := n.hosts[0].m.cur.version
			victim := n.hosts[2]
			victim.setLink(1, false, tell)
			cut := n.now
			ok := n.runUntil(n.now+3*time.Second, func() bool {
				if !converged(n.hosts) || n.hosts[0].m.cur.version == v {
					return false
				}
				for _, h := range n.hosts {
					if h != victim && len(routeSet(h, victim)) != 1 {
						return false
					}
				}
				return true
			})
			if !ok {
				t.Fatalf("no remap after rail cut:\n%s routes h0→victim %v", why(n.hosts), routeSet(n.hosts[0], victim))
			}
			t.Logf("rail cut noticed, new map configured everywhere after %v", n.now-cut)
			if n.now-cut > 2*time.Second {
				t.Errorf("took %v, goal 2s", n.now-cut)
			}
			if got := fmt.Sprint(routeSet(n.hosts[0], victim)); got != "[0>0]" {
				t.Errorf("routes to victim %s", got)
			}
			e, _ := n.hosts[0].m.Map().ByMAC(victim.macs[0])
			if len(e.MACs) != 2 {
				t.Errorf("victim entry %+v", e)
			}
			// Plug it back.
			v = n.hosts[0].m.cur.version
			victim.setLink(1, true, tell)
			ok = n.runUntil(n.now+3*time.Second, func() bool {
				return converged(n.hosts) && n.hosts[0].m.cur.version != v && len(routeSet(n.hosts[0], victim)) == 2
			})
			if !ok {
				t.Fatalf("no remap after rail back:\n%s", why(n.hosts))
			}
		})
	}
}

// TestPartitionHeal splits the network, lets each side map (with a new
// host on each side), and heals it.
func TestPartitionHeal(t *testing.T) {
	n := newSim(t, 8)
	startConverged(t, n, 10, "h%d", 0)
	before := ids(n.hosts)
	side := func(h *simHost) int { return h.i % 2 }
	n.blocked = func(a, b *simHost) bool { return side(a) != side(b) }
	var sideA, sideB []*simHost
	for _, h := range n.hosts {
		if side(h) == 0 {
			sideA = append(sideA, h)
		} else {
			sideB = append(sideB, h)
		}
	}
	if !n.runUntil(n.now+4*time.Second, func() bool { return converged(sideA) && converged(sideB) }) {
		t.Fatalf("sides did not converge:\nA\n%sB\n%s", why(sideA), why(sideB))
	}
	// A new host on each side.
	na := n.add("newA", 1, 0)
	nb := n.add("newB", 1, 0)
	na.start()
	nb.start()
	sideA, sideB = append(sideA, na), append(sideB, nb)
	n.blocked = func(a, b *simHost) bool { return side(a) != side(b) }
	if !n.runUntil(n.now+4*time.Second, func() bool {
		return converged(sideA) && converged(sideB) && sideA[0].m.Map().Len() == 11 && sideB[0].m.Map().Len() == 11
	}) {
		t.Fatalf("sides did not take the new hosts:\nA\n%sB\n%s\n%s", why(sideA), why(sideB), sideA[0].m.Map().Format())
	}
	n.blocked = nil
	healed := n.now
	if !n.runUntil(n.now+4*time.Second, func() bool { return converged(n.hosts) && n.hosts[0].m.Map().Len() == 12 }) {
		t.Fatalf("not healed:\n%s", why(n.hosts))
	}
	t.Logf("healed in %v", n.now-healed)
	for name, id := range ids(n.hosts) {
		if old, ok := before[name]; ok && old != id {
			t.Errorf("%s: id %d -> %d", name, old, id)
		}
	}
	seen := map[nodemap.NodeID]string{}
	for name, id := range ids(n.hosts) {
		if o, dup := seen[id]; dup {
			t.Errorf("id %d for %s and %s", id, o, name)
		}
		seen[id] = name
	}
}

// TestRestartKeepsID restarts a follower with and without its state.
func TestRestartKeepsID(t *testing.T) {
	n := newSim(t, 9)
	startConverged(t, n, 6, "h%d", 0)
	before := ids(n.hosts)
	h := n.hosts[1]
	h.kill()
	n.run(n.now + 2*time.Second) // long enough to be declared gone
	h.state = State{}            // lost state: the leader's table keeps its id
	h.start()
	mustConverge(t, n, 2*time.Second)
	for name, id := range ids(n.hosts) {
		if before[name] != id {
			t.Errorf("%s: id %d -> %d", name, before[name], id)
		}
	}
	// A leader restarting with its state keeps versions growing.
	l := n.leader()
	v := l.m.cur.version
	l.kill()
	l.start()
	mustConverge(t, n, 3*time.Second)
	if n.leader() != l || l.m.cur.version <= v {
		t.Fatalf("leader %s version %d (was %d)", n.leader().name, l.m.cur.version, v)
	}
	for name, id := range ids(n.hosts) {
		if before[name] != id {
			t.Errorf("after leader restart %s: id %d -> %d", name, before[name], id)
		}
	}
}

// TestDuplicates: two hosts claiming one name, and one MAC.
func TestDuplicates(t *testing.T) {
	n := newSim(t, 10)
	n.add("a", 1, 0)
	n.add("b", 1, 0)
	n.add("c", 1, 0)
	startAll(n)
	mustConverge(t, n, 2*time.Second)
	before := ids(n.hosts)
	dn := n.add("b", 1, 0) // a second "b"
	dn.start()
	dm := n.add("d", 1, 0, 0) // rail 1 uses a's MAC
	dm.macs[1] = n.hosts[0].macs[0]
	dm.start()
	n.run(n.now + 2*time.Second)
	l := n.leader()
	if l == nil {
		t.Fatalf("no leader:\n%s", why(n.live()))
	}
	s := l.m.Status()
	got := fmt.Sprint(s.Duplicates)
	if len(s.Duplicates) != 2 {
		t.Fatalf("duplicates %s", got)
	}
	m := l.m.Map()
	if e, _ := m.ByHost("b"); e.MACs[0] != n.hosts[1].macs[0] {
		t.Errorf("b is %v", e)
	}
	if _, ok := m.ByMAC(dn.macs[0]); ok {
		t.Errorf("second b in the map")
	}
	if _, ok := m.ByMAC(dm.macs[0]); ok {
		t.Errorf("d (duplicate MAC) in the map")
	}
	for name, id := range ids(n.hosts[:3]) {
		if before[name] != id {
			t.Errorf("%s: id %d -> %d", name, before[name], id)
		}
	}
	t.Logf("duplicates: %s", got)
}

// TestSteadyState counts every frame of 16 dual-rail hosts over 8
// intervals once nothing changes: one SCOUT per host per rail per
// interval (a follower's to the mapper in charge), nothing else, no new
// map version; a follower hears one frame per rail per interval.
func TestSteadyState(t *testing.T) {
	n := newSim(t, 15)
	for i := range 16 {
		n.add(fmt.Sprintf("s%02d", i), uint8(i%2), 0, 1)
	}
	startAll(n)
	mustConverge(t, n, 2*time.Second)
	n.run(n.now + time.Second)
	v := n.hosts[0].m.cur.version
	before := map[wire.Type][]int{}
	for tp, c := range n.sent {
		before[tp] = append([]int(nil), c...)
	}
	const intervals = 8
	n.run(n.now + intervals*DefaultVerifyInterval)
	for tp, c := range n.sent {
		for _, h := range n.hosts {
			sent := c[h.i] - before[tp][h.i]
			want := 0
			if tp == wire.TypeScout {
				want = intervals * 2
			}
			if sent != want {
				t.Errorf("%s sent %d %v frames in %d intervals, want %d", h.name, sent, tp, intervals, want)
			}
		}
	}
	if n.hosts[0].m.cur.version != v || !converged(n.hosts) {
		t.Fatalf("map moved in a steady state: %d -> %d", v, n.hosts[0].m.cur.version)
	}
	checkSteadyFrames(t, n, 2, intervals)
}

// TestNewcomerTakesOver: a host of a higher level joins a running network
// and none of the hello replies reach it. It takes over without ever
// marking a present host absent, and ids stay.
func TestNewcomerTakesOver(t *testing.T) {
	n := newSim(t, 16)
	startConverged(t, n, 20, "r%02d", 0, 1)
	before := ids(n.hosts)
	z := n.add("z", 2, 0, 1)
	n.drop = func(_, to *simHost, f []byte) bool {
		h, err := wire.ParseFrame(f, wire.EtherType)
		return err == nil && to == z && h.Type() == wire.TypeScoutReply
	}
	marks := map[*simHost]int{}
	for _, h := range n.hosts {
		marks[h] = len(h.maps)
	}
	z.start()
	if !n.runUntil(n.now+3*time.Second, func() bool { return converged(n.hosts) && n.leader() == z }) {
		t.Fatalf("z did not take over:\n%s", why(n.hosts))
	}
	for _, h := range n.hosts {
		for _, m := range h.maps[marks[h]:] {
			for _, o := range n.hosts {
				if o == h || m.Mapper != z.macs[0] {
					continue
				}
				e, ok := m.ByMAC(o.macs[0])
				if !ok && o == z {
					continue
				}
				if !ok || len(m.RoutesTo(e.ID)) == 0 {
					t.Fatalf("%s: map %d has no route to %s", h.name, m.Version, o.name)
				}
			}
		}
	}
	for name, id := range before {
		if ids(n.hosts)[name] != id {
			t.Errorf("%s: id %d -> %d", name, id, ids(n.hosts)[name])
		}
	}
}

// TestSettled: a host is settled once the network is configured and stays
// so while nothing changes; a start, a new map and the search after the
// mapper in charge stops unsettle the hosts they concern until the network
// is configured again. Only an unsettled mapper in charge asks its driver
// to read its rings more often (RecvDelay).
func TestSettled(t *testing.T) {
	n := newSim(t, 17)
	for i := range 8 {
		n.add(fmt.Sprintf("q%d", i), 1, 0)
	}
	settled := func() (c int) {
		for _, h := range n.live() {
			if h.m.settled() {
				c++
			}
		}
		return c
	}
	startAll(n)
	n.run(n.now + DefaultVerifyInterval/5)
	if c := settled(); c != 0 {
		t.Fatalf("%d hosts settled within their startup passes", c)
	}
	mustConverge(t, n, 2*time.Second)
	n.run(n.now + DefaultVerifyInterval)
	for end := n.now + 8*DefaultVerifyInterval; n.now < end; {
		n.run(n.now + 10*time.Millisecond)
		if c := settled(); c != len(n.hosts) {
			t.Fatalf("%v: %d of %d hosts settled in a steady state:\n%s", n.now, c, len(n.hosts), why(n.live()))
		}
	}

	// A newcomer of a higher level: a new mapper in charge and a new map.
	// It reads its rings every pass until every host acknowledged its
	// map; the followers never read more often than every half interval.
	z := n.add("z", 2, 0)
	z.start()
	n.run(n.now + DefaultVerifyInterval/5)
	if z.m.settled() {
		t.Fatal("the newcomer is settled within its startup passes")
	}
	hurried := false
	n.runUntil(n.now+3*time.Second, func() bool {
		for _, h := range n.live() {
			d := h.m.RecvDelay()
			if h != z && d != DefaultVerifyInterval/2 {
				t.Fatalf("%v: follower %s: RecvDelay %v", n.now, h.name, d)
			}
			if h == z && d == DefaultVerifyInterval/5 {
				hurried = true
			}
		}
		return converged(n.live())
	})
	if !hurried {
		t.Error("the new mapper in charge never read its rings every pass while it distributed its map")
	}
	mustConverge(t, n, 3*time.Second)
	n.run(n.now + DefaultVerifyInterval)
	if c := settled(); c != len(n.hosts) {
		t.Fatalf("%d of %d hosts settled after the newcomer took over:\n%s", c, len(n.hosts), why(n.live()))
	}
	if d := z.m.RecvDelay(); d != DefaultVerifyInterval/2 {
		t.Errorf("the settled mapper in charge: RecvDelay %v, want %v", d, DefaultVerifyInterval/2)
	}

	// The mapper in charge stops: the followers search, then settle again.
	z.kill()
	searched := n.runUntil(n.now+2*time.Second, func() bool { return settled() < len(n.live()) })
	if !searched {
		t.Fatal("every host stayed settled after the mapper in charge stopped")
	}
	mustConverge(t, n, 3*time.Second)
	n.run(n.now + DefaultVerifyInterval)
	if c := settled(); c != len(n.live()) {
		t.Fatalf("%d of %d hosts settled after the takeover:\n%s", c, len(n.live()), why(n.live()))
	}
}
