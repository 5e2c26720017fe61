package proto

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/ethergm/ethergm/token"
)

// engineState is what an engine keeps that could grow with its peers or
// its traffic: the peer table, the peers and their streams, and the
// engine's own queues.
type engineState struct {
	table, peers, rx, tx             int // peer table length, peers, streams
	active, ackList, events, recs    int // capacities of the engine's queues
	txBufs, txFrames, txSeq, ctrlBuf int
}

func stateOf(e *Engine) engineState {
	s := engineState{
		table: len(e.peers), active: cap(e.active), ackList: cap(e.ackList), events: len(e.events), recs: len(e.recs),
		txBufs: cap(e.txBufs), txFrames: cap(e.txFrames), txSeq: cap(e.txSeq), ctrlBuf: cap(e.ctrlBuf),
	}
	for _, p := range e.peers {
		if p == nil {
			continue
		}
		s.peers++
		for port := range p.rx {
			for pri := range p.rx[port] {
				if p.rx[port][pri] != nil {
					s.rx++
				}
				if p.tx[port][pri] != nil {
					s.tx++
				}
			}
		}
	}
	return s
}

// bytes is the per-peer state of s as docs/RELIABILITY.md ("Bounds")
// counts it: 8 bytes per entry of the peer table, a peer struct per peer,
// a stream struct per (peer, port, priority) used in each direction.
func (s engineState) bytes() int {
	return 8*s.table + s.peers*int(unsafe.Sizeof(peer{})) + s.rx*int(unsafe.Sizeof(rxStream{})) + s.tx*int(unsafe.Sizeof(txStream{}))
}

// TestPeerStateBounded: one port exchanges verified messages, in both
// directions, with 260 peers (nodes 2..261, one engine each). It then keeps
// exactly one peer struct and one stream each way per peer, a peer table
// of at most twice the highest node id, and queues of the sizes its tokens
// set; a second, longer exchange with every peer changes none of it.
// Every message arrives once, in order, with its content and sender.
func TestPeerStateBounded(t *testing.T) {
	const peers = 260
	macOf := func(id uint32) [6]byte { return [6]byte{2, 0, 0, byte(id >> 16), byte(id >> 8), byte(id)} }
	mod := func(c *Config) {
		c.MAC = macOf(c.NodeID)
		c.Resolve = func(id uint32) ([6]byte, bool) { return macOf(id), id >= 1 && id <= peers+1 }
		c.ProgressTimeout, c.LivenessTimeout = 20*time.Second, 20*time.Second
	}
	size := token.MinSizeForLength(12)
	n := newSimnet(t, 23)
	hub := n.add(1, 2, func(c *Config) { mod(c); c.SendTokens = MaxSendTokens })
	hr := &receiver{e: hub}
	for range 200 {
		if err := hub.Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	ends := make([]*Engine, peers)
	rs := make([]*receiver, peers)
	for i := range ends {
		ends[i] = n.add(uint32(i+2), 2, func(c *Config) { mod(c); c.RecvTokens = 16; c.SendTokens = 16 })
		rs[i] = &receiver{e: ends[i]}
		for range 16 {
			if err := ends[i].Provide(make([]byte, token.MaxLengthForSize(size)), size, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	msg := func(from, to, k uint32) []byte {
		b := make([]byte, 12)
		binary.BigEndian.PutUint32(b, from)
		binary.BigEndian.PutUint32(b[4:], to)
		binary.BigEndian.PutUint32(b[8:], k)
		return b
	}
	// check verifies the messages received since the last call: message k
	// of each sender is the next one expected from it, with its content.
	hubNext := make(map[uint32]uint32)
	endNext := make([]uint32, peers)
	hubSeen, endSeen := 0, make([]int, peers)
	check := func() {
		for _, g := range hr.got[hubSeen:] {
			from := g.ev.SenderNode
			if want := msg(from, 1, hubNext[from]); string(g.data) != string(want) || g.ev.SenderPort != 2 {
				t.Fatalf("hub got %x from %d:%d, want %x", g.data, from, g.ev.SenderPort, want)
			}
			hubNext[from]++
		}
		hubSeen = len(hr.got)
		for i, r := range rs {
			for _, g := range r.got[endSeen[i]:] {
				if want := msg(1, uint32(i+2), endNext[i]); string(g.data) != string(want) || g.ev.SenderNode != 1 || g.ev.SenderPort != 2 {
					t.Fatalf("node %d got %x from %d:%d, want %x", i+2, g.data, g.ev.SenderNode, g.ev.SenderPort, want)
				}
				endNext[i]++
			}
			endSeen[i] = len(r.got)
		}
	}
	var base uint32
	exchange := func(msgs uint32) {
		t.Helper()
		for i, e := range ends {
			for k := base; k < base+msgs; k++ {
				if err := e.Send(n.now, msg(uint32(i+2), 1, k), size, 12, 0, 1, 2, nil, int(k)); err != nil {
					t.Fatalf("node %d send %d: %v", i+2, k, err)
				}
			}
		}
		total := peers * int(msgs)
		sent, hubDone, endDone, steps := 0, 0, 0, 0
		var comps []completion
		n.run(120*time.Second, func() bool {
			// The hub is served at every step; the peers (which have a
			// receive buffer and a send token for every message of an
			// exchange) every 256 steps, which keeps the test fast.
			steps++
			for sent < total && hub.SendTokens().Free() > 0 {
				i, k := sent%peers, base+uint32(sent/peers)
				if err := hub.Send(n.now, msg(1, uint32(i+2), k), size, 12, 0, uint32(i+2), 2, nil, sent); err != nil {
					t.Fatalf("hub send %d: %v", sent, err)
				}
				sent++
			}
			hr.poll()
			comps = comps[:0]
			drainCompletions(hub, &comps)
			for _, c := range comps {
				if c.st != StatusSuccess {
					t.Fatalf("hub send %d: %v", c.id, c.st)
				}
			}
			hubDone += len(comps)
			if steps%256 != 0 && !(sent == total && hubDone == total) {
				return false
			}
			for i, e := range ends {
				rs[i].poll()
				comps = comps[:0]
				drainCompletions(e, &comps)
				for _, c := range comps {
					if c.st != StatusSuccess {
						t.Fatalf("node %d send %d: %v", i+2, c.id, c.st)
					}
				}
				endDone += len(comps)
			}
			check()
			return hubDone == total && endDone == total && len(hr.got) == hubSeen && hubSeen == int(base+msgs)*peers &&
				func() bool {
					for i := range endNext {
						if endNext[i] != base+msgs {
							return false
						}
					}
					return true
				}()
		})
		base += msgs
	}

	exchange(2)
	first := stateOf(hub)
	t.Logf("after exchanging with %d peers: %+v, %d bytes of per-peer state (%d per peer)", peers, first, first.bytes(), first.bytes()/peers)
	if first.peers != peers || first.rx != peers || first.tx != peers {
		t.Fatalf("%d peers, %d receive and %d send streams; want %d of each", first.peers, first.rx, first.tx, peers)
	}
	if first.table > 2*(peers+1+16) {
		t.Errorf("peer table of %d entries for node ids up to %d", first.table, peers+1)
	}
	if first.active > 2*peers || first.ackList > 2*peers {
		t.Errorf("active list capacity %d, ack list %d: more than two per stream", first.active, first.ackList)
	}
	cfg := hub.Config()
	if first.events != cfg.RecvTokens+cfg.SendTokens+8 || first.recs > cfg.SendTokens+ReplySlots {
		t.Errorf("event queue %d (want %d), send records %d (want at most %d)", first.events, cfg.RecvTokens+cfg.SendTokens+8, first.recs, cfg.SendTokens+ReplySlots)
	}
	exchange(6)
	if second := stateOf(hub); second != first {
		t.Errorf("state grew with traffic: %+v after the first exchange, %+v after the second", first, second)
	}
}

// TestPeerTableCapped: the peer table is indexed by node id and grows by
// doubling, but never beyond the node id space (1<<20 entries, 8 MiB),
// whatever order the ids come in.
func TestPeerTableCapped(t *testing.T) {
	e := New(Config{NodeID: 1, Port: 2, MAC: mac(1)}, simOut{newSimnet(t, 1)})
	for _, id := range []uint32{3, 700_000, maxNodes - 1} {
		if e.peer(id) == nil {
			t.Fatalf("no peer for node %d", id)
		}
		if len(e.peers) <= int(id) || len(e.peers) > maxNodes {
			t.Fatalf("after node %d: peer table of %d entries, want %d..%d", id, len(e.peers), id+1, maxNodes)
		}
	}
	if e.peer(maxNodes) != nil || e.peer(0) != nil {
		t.Fatal("a peer for node 0 or beyond the node id space")
	}
}
