package mapper

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// fixCRC recomputes the CRC of an EtherGM frame, if it parses far enough.
func fixCRC(f []byte) {
	if h, err := wire.ParseFrame(f, wire.EtherType); err == nil {
		h.UpdateCRC()
	}
}

// TestStaleAndMalformed replays old CONFIG frames and injects malformed,
// truncated, wrong-version and forged mapper frames: no map changes.
func TestStaleAndMalformed(t *testing.T) {
	n := newSim(t, 11)
	for i := range 5 {
		n.add(fmt.Sprintf("h%d", i), 1, 0)
	}
	var captured [][]byte
	n.tap = func(to *simHost, rail int, f []byte) {
		if h, err := wire.ParseFrame(f, wire.EtherType); err == nil && h.Type().IsMapper() {
			captured = append(captured, f)
		}
	}
	startAll(n)
	mustConverge(t, n, 2*time.Second)
	n.tap = nil
	v := n.hosts[0].m.cur.version
	n.hosts[1].kill()
	if !n.runUntil(n.now+3*time.Second, func() bool { return converged(n.live()) && n.hosts[0].m.cur.version > v }) {
		t.Fatalf("no remap:\n%s", why(n.live()))
	}
	n.run(n.now + time.Second)
	live := n.live()
	leader := n.leader()
	var victim *simHost
	for _, h := range live {
		if h != leader {
			victim = h
			break
		}
	}
	before := victim.m.Map()
	installs := len(victim.maps)

	var bad [][]byte
	// Every old mapper frame, as is.
	bad = append(bad, captured...)
	// Old CONFIGs with a version from the future but not from the leader:
	// rewritten as if another (alive) host had made them.
	for _, f := range captured {
		h, _ := wire.ParseFrame(f, wire.EtherType)
		if h.Type() != wire.TypeConfig {
			continue
		}
		g := slices.Clone(f)
		gh, _ := wire.ParseFrame(g, wire.EtherType)
		body := gh.Payload()
		binary.BigEndian.PutUint32(body[4:], 0xfffffff0)
		var other *simHost
		for _, o := range live {
			if o != leader && o != victim {
				other = o
			}
		}
		copy(body[8:14], other.macs[0][:])
		copy(g[6:12], other.macs[0][:])
		gh.UpdateCRC()
		bad = append(bad, g)
		// The same from the leader's MAC but a forged mapper id.
		g2 := slices.Clone(g)
		copy(g2[6:12], leader.macs[0][:])
		fixCRC(g2)
		bad = append(bad, g2)
		// Wrong body revision, wrong header version, truncated, bad CRC.
		g3 := slices.Clone(f)
		g3h, _ := wire.ParseFrame(g3, wire.EtherType)
		g3h.Payload()[0] = wire.MapperRev + 1
		g3h.UpdateCRC()
		bad = append(bad, g3)
		g4 := slices.Clone(f)
		g4[14] = 2
		bad = append(bad, g4, f[:len(f)-1], f[:40], f[:14], nil)
		g5 := slices.Clone(f)
		g5[len(g5)-1] ^= 1
		bad = append(bad, g5)
	}
	for _, f := range bad {
		victim.m.Input(n.now, 0, f)
		victim.m.Input(n.now, 7, f)
		victim.m.Input(n.now, -1, f)
	}
	victim.schedule()
	n.run(n.now + 2*time.Second)
	if victim.m.Map().Version != before.Version || victim.m.Map().Mapper != before.Mapper || len(victim.maps) != installs {
		t.Fatalf("map changed: %d by %x -> %d by %x (%d installs, was %d)", before.Version, before.Mapper,
			victim.m.Map().Version, victim.m.Map().Mapper, len(victim.maps), installs)
	}
	if !converged(n.live()) {
		t.Fatalf("not converged:\n%s", why(n.live()))
	}
	d := victim.m.Status().Counters.Drops
	for _, k := range []string{DropStale, DropMalformed, DropRevision, DropRail, DropForged} {
		if d[k] == 0 {
			t.Errorf("no %q drops: %v", k, d)
		}
	}
	t.Logf("drops %v", d)
}

// TestStartupTiming: 64 hosts on one bridge, fully configured within 2s
// of the last start (the goal), over several seeds.
func TestStartupTiming(t *testing.T) {
	for seed := range uint64(4) {
		n := newSim(t, 100+seed)
		n.loss = 0.01
		for i := range 64 {
			n.add(fmt.Sprintf("node%02d", i), 1, 0, 1)
		}
		for _, i := range n.rng.Perm(64) {
			n.run(n.now + time.Duration(n.rng.IntN(20))*time.Millisecond)
			n.hosts[i].start()
		}
		d := mustConverge(t, n, 3*time.Second)
		t.Logf("seed %d: 64 hosts fully configured %v after the last start", seed, d)
		if d > 2*time.Second {
			t.Errorf("seed %d: %v, goal 2s", seed, d)
		}
	}
}

func TestStateFile(t *testing.T) {
	s := State{LastVersion: 42, Hosts: []HostRecord{
		{ID: 2, Name: "b", UniqueID: nodemap.MAC{2, 0, 0, 0, 0, 2}, MACs: []nodemap.MAC{{2, 0, 0, 0, 0, 2}, {2, 1, 0, 0, 0, 2}}},
		{ID: 1, Name: "a", UniqueID: nodemap.MAC{2, 0, 0, 0, 0, 1}, MACs: []nodemap.MAC{{2, 0, 0, 0, 0, 1}}, Absent: true},
	}}
	text := string(s.Marshal())
	want := "# EtherGM mapper state: hosts file (node-id host-name mac[,mac...] present|absent)\n" +
		"version 42\n" +
		"1 a 02:00:00:00:00:01 absent\n" +
		"2 b 02:00:00:00:00:02,02:01:00:00:00:02 present\n"
	if text != want {
		t.Fatalf("Marshal:\n%s\nwant\n%s", text, want)
	}
	p, err := ParseState([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Marshal()) != text || p.LastVersion != 42 || len(p.Hosts) != 2 || p.Hosts[1].UniqueID != s.Hosts[0].UniqueID {
		t.Fatalf("round trip %+v", p)
	}
	for _, bad := range []string{
		"version x\n", "version\n", "1 a 02:00:00:00:00:01\n", "0 a 02:00:00:00:00:01 present\n",
		"1 a 02:00:00:00:00:01 present\n1 b 02:00:00:00:00:02 present\n",
		"1 a 02:00:00:00:00:01 present\n2 b 02:00:00:00:00:01 present\n",
		"1 a,b 02:00:00:00:00:01 present\n", "1 a zz present\n", "1 a 02:00:00:00:00:01 gone\n",
	} {
		if _, err := ParseState([]byte(bad)); err == nil {
			t.Errorf("ParseState(%q) succeeded", bad)
		}
	}
	if p, err := ParseState(nil); err != nil || p.LastVersion != 0 || len(p.Hosts) != 0 {
		t.Errorf("empty: %+v %v", p, err)
	}
}

func TestNewErrors(t *testing.T) {
	mac := nodemap.MAC{2, 0, 0, 0, 0, 1}
	good := Config{Host: "h", MACs: []nodemap.MAC{mac}}
	for _, mod := range []func(*Config){
		func(c *Config) { c.Host = "" },
		func(c *Config) { c.Host = "a b" },
		func(c *Config) { c.MACs = nil },
		func(c *Config) { c.MACs = []nodemap.MAC{{}} },
		func(c *Config) { c.MACs = []nodemap.MAC{{1, 0, 0, 0, 0, 1}} },
		func(c *Config) { c.MACs = []nodemap.MAC{mac, mac} },
		func(c *Config) { c.MACs = make([]nodemap.MAC, 9) },
		func(c *Config) { c.VerifyInterval = 2 * time.Second },
		func(c *Config) { c.NumPasses = -1 },
		func(c *Config) { c.MTU = 100 },
	} {
		c := good
		mod(&c)
		if _, err := New(c, &simHost{}); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
	if _, err := New(good, nil); err == nil {
		t.Error("nil Output accepted")
	}
	m, err := New(good, &simHost{})
	if err != nil || m.NextDeadline() != 0 || m.Map() != nil {
		t.Fatalf("New: %v", err)
	}
}

// TestInterfaceChange restarts a host with another interface added, then
// with its first interface replaced: new versions, the same id.
func TestInterfaceChange(t *testing.T) {
	n := newSim(t, 13)
	startConverged(t, n, 5, "h%d", 0)
	h := n.hosts[1]
	id := ids(n.hosts)[h.name]
	for step, macs := range [][]nodemap.MAC{
		{h.macs[0], simMAC(h.i, 1)},              // a rail added
		{simMAC(h.i+100, 0), simMAC(h.i+100, 1)}, // a new first interface
	} {
		v := n.hosts[0].m.cur.version
		h.kill()
		h.macs = macs
		h.bridge = []int{0, 0}
		h.plug = []bool{true, true}
		h.start()
		if !n.runUntil(n.now+3*time.Second, func() bool {
			if !converged(n.hosts) || n.hosts[0].m.cur.version == v {
				return false
			}
			e, ok := n.hosts[0].m.Map().ByHost(h.name)
			return ok && len(e.MACs) == 2 && e.MACs[0] == macs[0]
		}) {
			t.Fatalf("step %d: no new map:\n%s%s", step, why(n.hosts), n.hosts[0].m.Map().Format())
		}
		if got := ids(n.hosts)[h.name]; got != id {
			t.Fatalf("step %d: id %d -> %d", step, id, got)
		}
	}
}

// TestStatusJSON checks that Status marshals, and SetRailUp on a rail that
// does not exist is ignored.
func TestStatusJSON(t *testing.T) {
	n := newSim(t, 14)
	n.add("a", 1, 0, 1)
	n.add("b", 0, 0, 1)
	startAll(n)
	mustConverge(t, n, 2*time.Second)
	b := n.hosts[1]
	b.m.SetRailUp(5, false, n.now)
	b.m.SetRailUp(-1, false, n.now)
	js, err := json.Marshal(b.m.Status())
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mapper", "map_version", "hosts", "configured", "leader", "level", "node_id", "host", "routes", "counters", "rails"} {
		if _, ok := back[k]; !ok {
			t.Errorf("no %q in %s", k, js)
		}
	}
	s := b.m.Status()
	if s.Leader || !s.Configured || s.Hosts != 2 || s.Mapper != nodemap.FormatMAC(n.hosts[0].macs[0]) || len(s.Routes) != 2 ||
		s.Counters.FramesIn["SCOUT"] == 0 || s.Rails[1].Peers != 1 {
		t.Errorf("status %s", js)
	}
}

// TestCloneUniqueID: a second host with the same MACs (a cloned VM) and
// another name is reported, not merged, and does not make the map flap.
func TestCloneUniqueID(t *testing.T) {
	n := newSim(t, 17)
	n.add("a", 1, 0)
	n.add("b", 1, 0)
	c := n.add("c", 1, 0)
	startAll(n)
	mustConverge(t, n, 2*time.Second)
	before := ids(n.hosts)
	clone := n.add("cc", 0, 0)
	clone.macs = slices.Clone(c.macs)
	clone.start()
	n.run(n.now + time.Second)
	v := n.leader().m.cur.version
	n.run(n.now + 2*time.Second)
	l := n.leader()
	if l.m.cur.version > v+1 {
		t.Errorf("map flaps: version %d -> %d in 2s", v, l.m.cur.version)
	}
	found := false
	for _, d := range l.m.Status().Duplicates {
		if d.Kind == "mac" && d.Value == nodemap.FormatMAC(c.macs[0]) && slices.Contains(d.Names, "cc") && slices.Contains(d.Names, "c") {
			found = true
		}
	}
	if !found {
		t.Errorf("clone not reported: %+v", l.m.Status().Duplicates)
	}
	if e, ok := l.m.Map().ByMAC(c.macs[0]); !ok || e.ID != before["c"] {
		t.Errorf("c is %+v %v", e, ok)
	}
	if _, ok := l.m.Map().ByHost("cc"); ok {
		t.Error("the clone is in the map")
	}
}

// TestQuickRestart restarts a follower's mapper at once (it never looks
// gone): the leader sends it the map again, and the network is fully
// configured again with the same version and ids.
func TestQuickRestart(t *testing.T) {
	n := newSim(t, 18)
	startConverged(t, n, 6, "q%d", 0, 1)
	n.run(n.now + time.Second) // the leader may make a new version at once
	before := ids(n.hosts)
	v := n.leader().m.cur.version
	h := n.hosts[2]
	h.kill()
	h.start()
	restart := n.now
	if !n.runUntil(n.now+2*time.Second, func() bool { return converged(n.hosts) && h.m.Map() != nil }) {
		t.Fatalf("restarted host not configured:\n%s", why(n.hosts))
	}
	t.Logf("restarted follower has the map %v later (version %d, was %d)", n.now-restart, h.m.cur.version, v)
	if h.m.cur.version != v {
		t.Errorf("map version %d after the restart, want %d: a host restarted at once changes nothing", h.m.cur.version, v)
	}
	for name, id := range ids(n.hosts) {
		if before[name] != id {
			t.Errorf("%s: id %d -> %d", name, before[name], id)
		}
	}
}
