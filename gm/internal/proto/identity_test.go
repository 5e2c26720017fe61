package proto

import (
	"encoding/binary"
	"testing"
	"time"
)

// TestIdentityChange swaps the node ids of two hosts (B and C) in the node
// map while A and B exchange messages in both directions: everything in
// flight to or from the changed identities completes with an error status
// or was delivered to the right host before the change; nothing reaches the
// wrong host; after Resume, A's sends to node 2 reach C, the host that now
// has that id.
func TestIdentityChange(t *testing.T) {
	n := newSimnet(t, 5)
	// The node map: node id -> MAC, shared by every engine (as the map
	// file is by every host).
	idMAC := map[uint32][6]byte{1: mac(1), 2: mac(2), 3: mac(3)}
	resolve := func(c *Config) {
		c.Resolve = func(id uint32) ([6]byte, bool) { m, ok := idMAC[id]; return m, ok }
	}
	a := n.add(1, 2, resolve)
	b := n.add(2, 2, resolve) // MAC 2
	c := n.add(3, 2, resolve) // MAC 3
	host := map[*Engine]byte{a: 'A', b: 'B', c: 'C'}
	ra, rb, rc := &receiver{e: a}, &receiver{e: b}, &receiver{e: c}
	for _, e := range []*Engine{a, b, c} {
		for i := 0; i < 40; i++ {
			_ = e.Provide(make([]byte, 512), 9, 0, 0)
		}
	}
	// A message names its sender host and a sequence number.
	msg := func(from *Engine, seq int) []byte {
		m := make([]byte, 300)
		m[0] = host[from]
		binary.BigEndian.PutUint16(m[1:], uint16(seq))
		return m
	}
	var ca, cb, cc []completion
	poll := func() {
		ra.poll()
		rb.poll()
		rc.poll()
		drainCompletions(a, &ca)
		drainCompletions(b, &cb)
		drainCompletions(c, &cc)
	}
	const count = 20
	for i := 0; i < count; i++ {
		if err := a.Send(n.now, msg(a, i), 9, 300, 0, 2, 2, nil, i); err != nil {
			t.Fatal(err)
		}
		if err := b.Send(n.now, msg(b, i), 9, 300, 0, 1, 2, nil, i); err != nil {
			t.Fatal(err)
		}
	}
	n.run(time.Second, func() bool { poll(); return len(rb.got) >= 5 && len(ra.got) >= 5 })
	if len(ca) == count || len(cb) == count {
		t.Fatalf("nothing left in flight at the change: %d %d", len(ca), len(cb))
	}

	// The map swaps B's and C's ids; every host takes it.
	idMAC[2], idMAC[3] = mac(3), mac(2)
	b.SetNodeID(3)
	c.SetNodeID(2)
	now := n.now
	a.ResetChanged(now, StatusTargetNodeUnreached, func(node uint32) bool { return node == 2 || node == 3 })
	b.ResetAll(now, StatusTargetNodeUnreached)
	c.ResetAll(now, StatusTargetNodeUnreached)
	for _, e := range []*Engine{a, b, c} {
		e.InvalidatePeers()
	}
	gotA, gotB := len(ra.got), len(rb.got)
	// Let what was in flight arrive (or not) and every send complete.
	n.run(5*time.Second, func() bool { poll(); return len(ca) == count && len(cb) == count })
	for _, x := range []struct {
		name  string
		comps []completion
		rcv   *receiver
		from  byte
		seen  int // delivered before the change
		after bool
	}{{"A->B", ca, rb, 'A', gotB, false}, {"B->A", cb, ra, 'B', gotA, false}} {
		failed := 0
		for i, cm := range x.comps {
			switch cm.st {
			case StatusSuccess:
				// Delivered to the right host before the change.
				if cm.id >= x.seen {
					t.Errorf("%s: message %d completed with success but was not delivered before the change", x.name, cm.id)
				}
			case StatusTargetNodeUnreached:
				failed++
			default:
				t.Errorf("%s: completion %d: status %d", x.name, i, cm.st)
			}
		}
		if failed == 0 {
			t.Errorf("%s: no send failed", x.name)
		}
	}
	// Nothing was delivered after the change; before it, in order, from the
	// right host.
	if len(ra.got) != gotA || len(rb.got) != gotB || len(rc.got) != 0 {
		t.Fatalf("delivered after the change: A %d->%d, B %d->%d, C %d", gotA, len(ra.got), gotB, len(rb.got), len(rc.got))
	}
	check := func(name string, got []received, from byte, node uint32) {
		for i, g := range got {
			if g.data[0] != from || int(binary.BigEndian.Uint16(g.data[1:])) != i || g.ev.SenderNode != node {
				t.Fatalf("%s: message %d: from %c seq %d node %d", name, i, g.data[0], binary.BigEndian.Uint16(g.data[1:]), g.ev.SenderNode)
			}
		}
	}
	check("at B", rb.got, 'A', 1)
	check("at A", ra.got, 'B', 2)
	if a.Stats().PeerResets == 0 || b.Stats().PeerResets == 0 {
		t.Fatalf("no peer reset counted")
	}

	// The failed streams are disabled until the application resumes them.
	// Then A's sends to node 2 reach C, the host the map now names, and
	// B (now node 3) reaches A.
	if err := a.Resume(n.now, 0, 2, 2, nil, -1); err != nil {
		t.Fatal(err)
	}
	if err := b.Resume(n.now, 0, 1, 2, nil, -1); err != nil {
		t.Fatal(err)
	}
	ca, cb = nil, nil
	for i := 0; i < count; i++ {
		if err := a.Send(n.now, msg(a, 100+i), 9, 300, 0, 2, 2, nil, i); err != nil {
			t.Fatal(err)
		}
		if err := b.Send(n.now, msg(b, 100+i), 9, 300, 0, 1, 2, nil, i); err != nil {
			t.Fatal(err)
		}
	}
	n.run(5*time.Second, func() bool {
		poll()
		return countOK(ca) == count && countOK(cb) == count && len(rc.got) == count && len(ra.got) == gotA+count
	})
	for i, g := range rc.got {
		if g.data[0] != 'A' || int(binary.BigEndian.Uint16(g.data[1:])) != 100+i || g.ev.SenderNode != 1 {
			t.Fatalf("at C: message %d: from %c seq %d node %d", i, g.data[0], binary.BigEndian.Uint16(g.data[1:]), g.ev.SenderNode)
		}
	}
	for i, g := range ra.got[gotA:] {
		if g.data[0] != 'B' || int(binary.BigEndian.Uint16(g.data[1:])) != 100+i || g.ev.SenderNode != 3 {
			t.Fatalf("at A: message %d: from %c seq %d node %d", i, g.data[0], binary.BigEndian.Uint16(g.data[1:]), g.ev.SenderNode)
		}
	}
	if len(rb.got) != gotB {
		t.Fatalf("B received %d messages after the change", len(rb.got)-gotB)
	}
}

// countOK counts the successful completions of messages (not markers).
func countOK(cs []completion) int {
	k := 0
	for _, c := range cs {
		if c.st == StatusSuccess && c.id >= 0 {
			k++
		}
	}
	return k
}

// TestSourceMAC: a frame whose source MAC is not one the node map gives its
// claimed source node is not taken (an impostor, or a host whose id the
// map changed); one from any of the node's MACs (rails) is.
func TestSourceMAC(t *testing.T) {
	n := newSimnet(t, 6)
	sources := func(c *Config) {
		c.Sources = func(node uint32, dst *[MaxSources][6]byte) int {
			dst[0], dst[1] = mac(int(node)), mac(int(node)+100) // two rails
			return 2
		}
		// Frames to node 1 go to its second rail.
		c.Resolve = func(id uint32) ([6]byte, bool) {
			if id == 1 {
				return mac(101), true
			}
			return mac(int(id)), id >= 1 && id <= 9
		}
	}
	b := n.add(2, 2, sources)
	rb := &receiver{e: b}
	for i := 0; i < 4; i++ {
		_ = b.Provide(make([]byte, 512), 9, 0, 0)
	}
	imp := n.add(1, 2, func(c *Config) { c.MAC = mac(7) }) // claims node 1
	if err := imp.Send(n.now, pattern(10, 1), 9, 10, 0, 2, 2, nil, 1); err != nil {
		t.Fatal(err)
	}
	for n.step() && n.now < 10*time.Second {
		rb.poll()
	}
	if len(rb.got) != 0 || b.Stats().OpensReceived != 0 || b.Stats().Misaddressed == 0 {
		t.Fatalf("impostor: %d delivered, %d OPENs taken, %d misaddressed", len(rb.got), b.Stats().OpensReceived, b.Stats().Misaddressed)
	}
	n.engines = n.engines[:1]
	a := n.add(1, 2, func(c *Config) { c.MAC = mac(101) }) // node 1's second rail
	var ca []completion
	if err := a.Send(n.now, pattern(10, 2), 9, 10, 0, 2, 2, nil, 2); err != nil {
		t.Fatal(err)
	}
	n.run(time.Second, func() bool { rb.poll(); drainCompletions(a, &ca); return len(ca) == 1 && len(rb.got) == 1 })
	if ca[0].st != StatusSuccess || rb.got[0].ev.SenderNode != 1 {
		t.Fatalf("%+v %+v", ca, rb.got[0].ev)
	}
}
