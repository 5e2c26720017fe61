package gm_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/relay"
)

// streamCheck sends count messages of random length (up to maxLen, random
// priority) from pr.a to pr.b and checks exactly-once, in-order delivery
// per priority.
func streamCheck(t *testing.T, pr *pair, count, maxLen int, seed uint64) {
	size := gm.MinSizeForLength(maxLen)
	var mu sync.Mutex
	got := map[gm.Priority][][]byte{}
	total := 0
	lb := startLoop(pr.b, func(e *gm.Event) {
		mu.Lock()
		got[e.Priority] = append(got[e.Priority], bytes.Clone(e.Message))
		total++
		mu.Unlock()
		_ = pr.b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	})
	defer lb.Stop()
	for i := 0; i < 32; i++ {
		for pri := gm.LowPriority; pri <= gm.HighPriority; pri++ {
			if err := pr.b.ProvideReceiveBuffer(make([]byte, maxLen), size, pri, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	la := startLoop(pr.a, nil)
	defer la.Stop()
	comps := newCompletions()
	rng := rand.New(rand.NewPCG(seed, 7))
	want := map[gm.Priority][][]byte{}
	start := time.Now()
	sendEnd := start.Add(20 * time.Second)
	for i := 0; i < count; i++ {
		pri := gm.Priority(rng.IntN(2))
		m := pattern(rng.IntN(maxLen+1), uint64(i))
		want[pri] = append(want[pri], m)
		for {
			err := pr.a.SendWithCallback(m, size, len(m), pri, pr.bn, 4, comps.cb, i)
			if err == nil {
				break
			}
			if !errors.Is(err, gm.ErrNoSendToken) {
				t.Fatal(err)
			}
			if time.Now().After(sendEnd) {
				t.Fatalf("send %d: no send token for 20 s (completions so far: %d)", i, len(comps.snapshot()))
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	for _, c := range comps.wait(t, count, 20*time.Second) {
		if c.st != gm.Success {
			t.Fatalf("send %d: %v", c.id, c.st)
		}
	}
	waitFor(t, 10*time.Second, "all messages", func() bool { mu.Lock(); defer mu.Unlock(); return total >= count })
	mu.Lock()
	defer mu.Unlock()
	if total != count {
		t.Fatalf("received %d messages, want %d", total, count)
	}
	for pri, w := range want {
		for i := range w {
			if !bytes.Equal(got[pri][i], w[i]) {
				t.Fatalf("priority %d message %d differs (len %d, want %d)", pri, i, len(got[pri][i]), len(w[i]))
			}
		}
	}
	t.Logf("%d messages in %v; A %+v; B %+v", count, time.Since(start), pr.a.Stats(), pr.b.Stats())
}

// TestIntegrationImpaired checks order and exactly-once delivery through
// the relay with drops, duplicates and reordering in both directions.
func TestIntegrationImpaired(t *testing.T) {
	imp := relay.Impairment{Drop: 0.05, Duplicate: 0.05, Reorder: 0.05, ReorderGap: 3}
	c := netns.NewImpairedPair(t, relay.Config{Seed: 1, AtoB: imp, BtoA: imp, EtherType: 0x88B5})
	pr := pairOn(t, c, func(cfg *gm.Config) { cfg.ProgressTimeout = 30 * time.Second; cfg.LivenessTimeout = 30 * time.Second })
	streamCheck(t, pr, 400, 20000, 3)
	t.Logf("relay %+v %+v", c.Relay().Stats(relay.AtoB), c.Relay().Stats(relay.BtoA))
}

// TestIntegrationSenderRestart restarts the sending port mid-stream: the
// receiver notices the new session and delivers the new incarnation's
// messages in order.
func TestIntegrationSenderRestart(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	var mu sync.Mutex
	var got []string
	lb := startLoop(pr.b, func(e *gm.Event) {
		mu.Lock()
		got = append(got, string(e.Message))
		mu.Unlock()
		_ = pr.b.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	})
	defer lb.Stop()
	for i := 0; i < 16; i++ {
		_ = pr.b.ProvideReceiveBuffer(make([]byte, 3000), 12, gm.LowPriority, 0)
	}
	msg := func(gen, i int) []byte {
		b := pattern(3000, uint64(gen*1000+i))
		b[0], b[1] = byte(gen), byte(i)
		return b
	}
	for i := 0; i < 40; i++ {
		for pr.a.SendWithCallback(msg(1, i), 12, 3000, gm.LowPriority, pr.bn, 4, nil, nil) != nil {
			pr.a.Unknown(pr.a.Receive())
		}
	}
	// Restart the sender without waiting for its sends.
	pr.a.Close()
	a2 := openPort(t, pr.c.Hosts[0], 2, testConfig(pr.c.Hosts[0], pr.mapf))
	la := startLoop(a2, nil)
	defer la.Stop()
	comps := newCompletions()
	for i := 0; i < 40; i++ {
		if err := a2.SendWithCallback(msg(2, i), 12, 3000, gm.LowPriority, pr.bn, 4, comps.cb, i); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range comps.wait(t, 40, 10*time.Second) {
		if c.st != gm.Success {
			t.Fatal(c)
		}
	}
	waitFor(t, 10*time.Second, "messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, s := range got {
			if s[0] == 2 {
				n++
			}
		}
		return n == 40
	})
	mu.Lock()
	defer mu.Unlock()
	next := 0
	for _, s := range got {
		if s[0] == 2 {
			if int(s[1]) != next || s != string(msg(2, next)) {
				t.Fatalf("new incarnation message %d out of order (got %d)", next, s[1])
			}
			next++
		}
	}
	t.Logf("old incarnation delivered %d of 40, new 40 of 40", len(got)-40)
}

// TestIntegrationReceiverRestart restarts the receiving port while a
// stream runs: sends in flight fail with SendTargetPortClosed, and after
// ResumeSending the stream reaches the new incarnation in order.
func TestIntegrationReceiverRestart(t *testing.T) {
	// The sends below wait for a buffer until the receiver closes: the
	// progress timeout must not fire first, however slow the machine
	// (testConfig's is generous; say so, the test depends on it).
	pr := newPair(t, netns.Options{Hosts: 2}, withTimeouts(30*time.Second, 0))
	la := startLoop(pr.a, nil)
	defer la.Stop()
	comps := newCompletions()
	for i := 0; i < 20; i++ {
		if err := pr.a.SendWithCallback(pattern(2000, uint64(i)), 11, 2000, gm.LowPriority, pr.bn, 4, comps.cb, i); err != nil {
			t.Fatal(err)
		}
	}
	// No buffers: everything waits (the receiver refuses the first
	// message with NackNoBuffer), then the receiver restarts.
	waitFor(t, 10*time.Second, "the receiver to refuse the first message", func() bool { return pr.a.Stats().NacksReceived > 0 })
	pr.b.Close()
	b2 := openPort(t, pr.c.Hosts[1], 4, testConfig(pr.c.Hosts[1], pr.mapf))
	cs := comps.wait(t, 1, 10*time.Second)
	if cs[0] != (completion{0, gm.SendTargetPortClosed}) {
		t.Fatalf("%v", cs)
	}
	var mu sync.Mutex
	var got [][]byte
	lb := startLoop(b2, func(e *gm.Event) {
		mu.Lock()
		got = append(got, bytes.Clone(e.Message))
		mu.Unlock()
		_ = b2.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
	})
	defer lb.Stop()
	for i := 0; i < 8; i++ {
		_ = b2.ProvideReceiveBuffer(make([]byte, 2040), 11, gm.LowPriority, 0)
	}
	if err := pr.a.ResumeSending(gm.LowPriority, pr.bn, 4, comps.cb, 100); err != nil {
		t.Fatal(err)
	}
	cs = comps.wait(t, 21, 20*time.Second)
	for _, c := range cs[1:] {
		if c.st != gm.Success {
			t.Fatalf("%v", cs)
		}
	}
	waitFor(t, 10*time.Second, "19 messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 19 })
	mu.Lock()
	defer mu.Unlock()
	for i, g := range got {
		if !bytes.Equal(g, pattern(2000, uint64(i+1))) {
			t.Fatalf("message %d wrong", i)
		}
	}
}

// TestIntegrationTwoPortsOneHost checks GM loopback between two ports of
// one host and PEER events between equal port ids of two hosts.
func TestIntegrationTwoPortsOneHost(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	h0 := pr.c.Hosts[0]
	p5 := openPort(t, h0, 5, testConfig(h0, pr.mapf))
	b2 := openPort(t, pr.c.Hosts[1], 2, testConfig(pr.c.Hosts[1], pr.mapf))
	if p5.NodeID() != pr.an {
		t.Fatalf("same host, different node ids %d %d", p5.NodeID(), pr.an)
	}
	for _, p := range []*gm.Port{pr.a, p5, b2} {
		for i := 0; i < 4; i++ {
			_ = p.ProvideReceiveBuffer(make([]byte, 5000), 13, gm.HighPriority, 9)
		}
	}
	recvOne := func(p *gm.Port) *gm.Event {
		var e *gm.Event
		waitFor(t, 10*time.Second, "event", func() bool {
			e = p.Receive()
			if e.Type.IsRecv() {
				return true
			}
			p.Unknown(e)
			return false
		})
		return e
	}
	c := newCompletions()
	big := pattern(5000, 1)
	if err := pr.a.SendWithCallback(big, 13, len(big), gm.HighPriority, pr.an, 5, c.cb, 1); err != nil {
		t.Fatal(err)
	}
	e := recvOne(p5)
	if e.Type != gm.HighRecvEvent || !bytes.Equal(e.Message, big) || e.SenderPort != 2 || e.SenderNode != pr.an || e.Tag != 9 {
		t.Fatalf("%v from %d:%d", e.Type, e.SenderNode, e.SenderPort)
	}
	if err := p5.SendWithCallback([]byte("back"), 13, 4, gm.HighPriority, pr.an, 2, c.cb, 2); err != nil {
		t.Fatal(err)
	}
	e = recvOne(pr.a)
	if e.Type != gm.FastHighRecvEvent || string(e.Message) != "back" || e.SenderPort != 5 {
		t.Fatalf("%v %q", e.Type, e.Message)
	}
	// Peer send: host0 port 2 -> host1 port 2.
	if err := pr.a.SendToPeerWithCallback([]byte("peer"), 13, 4, gm.HighPriority, pr.bn, c.cb, 3); err != nil {
		t.Fatal(err)
	}
	e = recvOne(b2)
	if e.Type != gm.FastHighPeerRecvEvent || string(e.Message) != "peer" {
		t.Fatalf("%v %q", e.Type, e.Message)
	}
	buf := e.Buffer
	if m := e.Memorize(); string(m) != "peer" || &m[0] != &buf[0] {
		t.Fatalf("Memorize: %q", m)
	}
	for _, p := range []*gm.Port{pr.a, p5} {
		waitFor(t, 10*time.Second, "completions", func() bool { p.Unknown(p.Receive()); return len(c.snapshot()) >= 2 })
	}
	waitFor(t, 10*time.Second, "completions", func() bool { pr.a.Unknown(pr.a.Receive()); return len(c.snapshot()) == 3 })
}

// TestIntegrationOpenRules checks port exclusivity and reserved ports.
func TestIntegrationOpenRules(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 1})
	m := writeMap(t, c)
	h := c.Hosts[0]
	cfg := testConfig(h, m)
	p := openPort(t, h, 2, cfg)
	err := h.Do(func() error { _, err := gm.Open(h.Ifaces[0], 2, "again", cfg); return err })
	if !errors.Is(err, gm.Busy) {
		t.Fatalf("second open: %v", err)
	}
	for _, id := range []int{0, 1, 3} {
		err := h.Do(func() error { _, err := gm.Open(h.Ifaces[0], id, "r", cfg); return err })
		if !errors.Is(err, gm.PermissionDenied) {
			t.Fatalf("reserved port %d: %v", id, err)
		}
	}
	for _, id := range []int{-1, 16} {
		err := h.Do(func() error { _, err := gm.Open(h.Ifaces[0], id, "r", cfg); return err })
		if !errors.Is(err, gm.InvalidPortNumber) {
			t.Fatalf("port %d: %v", id, err)
		}
	}
	priv := *cfg
	priv.Privileged = true
	openPort(t, h, 1, &priv).Close()
	p.Close()
	openPort(t, h, 2, cfg) // free again after Close
	bad := *cfg
	bad.Host = "nosuchhost"
	err = h.Do(func() error {
		_, err := gm.Open(h.Ifaces[0], 6, "r", &bad)
		return err
	})
	if err != nil { // found by MAC instead
		t.Fatalf("open by MAC fallback: %v", err)
	}
}

// TestIntegrationNodeMap checks the name service and that a running port
// follows changes of the map file.
func TestIntegrationNodeMap(t *testing.T) {
	pr := newPair(t, netns.Options{Hosts: 2}, nil)
	p := pr.a
	if id, err := p.HostNameToNodeID("host1"); err != nil || id != 2 {
		t.Fatalf("host1: %d %v", id, err)
	}
	if id, err := p.HostNameToNodeID("host1:0"); err != nil || id != 2 {
		t.Fatalf("host1:0: %d %v", id, err)
	}
	if _, err := p.HostNameToNodeID("nosuch"); !errors.Is(err, gm.NoMatch) {
		t.Fatalf("unknown host: %v", err)
	}
	if n, err := p.NodeIDToHostName(1); err != nil || n != "host0" {
		t.Fatalf("%q %v", n, err)
	}
	mac := [6]byte(pr.c.Hosts[1].MACs[0])
	if id, err := p.UniqueIDToNodeID(mac); err != nil || id != 2 {
		t.Fatal(id, err)
	}
	if u, err := p.NodeIDToUniqueID(2); err != nil || u != mac {
		t.Fatal(u, err)
	}
	g, err := p.NodeIDToGlobalID(2)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := p.GlobalIDToNodeID(g); err != nil || id != 2 {
		t.Fatal(id, err)
	}
	if _, err := p.NodeIDToHostName(77); !errors.Is(err, gm.NoMatch) {
		t.Fatal(err)
	}
	if err := p.SendWithCallback(nil, 3, 0, gm.LowPriority, 77, 4, nil, nil); !errors.Is(err, gm.ErrUnknownNode) {
		t.Fatalf("send to unknown node: %v", err)
	}
	// Renumber host1 as node 7 and add a host: the port follows.
	data := []byte("# renumbered\n1 host0 " + pr.c.Hosts[0].MACs[0].String() + "\n7 host1 " + pr.c.Hosts[1].MACs[0].String() + "\n9 extra 02:00:00:00:00:99\n")
	if err := os.WriteFile(pr.mapf, data, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "map reload", func() bool { id, _ := p.HostNameToNodeID("extra"); return id == 9 })
	if id, _ := p.HostNameToNodeID("host1"); id != 7 {
		t.Fatalf("host1 is %d after reload", id)
	}
	_ = pr.b.ProvideReceiveBuffer(make([]byte, 8), 4, gm.LowPriority, 0)
	c := newCompletions()
	if err := p.SendWithCallback([]byte("renumber"), 4, 8, gm.LowPriority, 7, 4, c.cb, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "delivery to renumbered node", func() bool {
		e := pr.b.Receive()
		if e.Type.IsRecv() {
			return string(e.Message) == "renumber"
		}
		pr.b.Unknown(e)
		return false
	})
}
