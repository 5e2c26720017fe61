package proto

import (
	"bytes"
	"testing"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// TestReceiverIncarnations kills or closes a receiver that delivered
// messages whose acks were lost, and opens its port again: nothing the old
// incarnation may have delivered reaches the new one. Per way of dying:
//
//   - killed, nothing answers for the port: the head fails with
//     NODE_UNREACHABLE; after Resume the handshake with the new
//     incarnation fails the other messages sent to the old one with the
//     same status;
//   - killed, another port of the host answers for the closed port: the
//     same with PORT_CLOSED;
//   - killed and restarted at once: the new incarnation's stale-session
//     answers lead to the handshake, which fails every message sent in
//     the old one's session with PORT_CLOSED (no failure came before),
//     including those sent after the restart, which may have reached only
//     the new one (the sender cannot tell);
//   - closed: the port's last NACK tells what it delivered; those succeed,
//     the head fails with PORT_CLOSED and the rest goes to the new
//     incarnation.
//
// In every case the messages never transmitted to the old incarnation
// (and, for "closed", the ones it did not deliver) reach the new one after
// Resume, once each and in order, and succeed.
func TestReceiverIncarnations(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fail       Status // the first failure's status
		orphaned   Status // the status of the others sent to the old incarnation
		closeFirst bool
		answer     bool // another port answers for the closed one
		dead       bool // dead until the sender's stream failed
	}{
		{name: "killed", fail: StatusTargetNodeUnreached, orphaned: StatusTargetNodeUnreached, dead: true},
		{name: "killed-answered", fail: StatusTargetPortClosed, orphaned: StatusTargetPortClosed, answer: true, dead: true},
		{name: "killed-restarted", orphaned: StatusTargetPortClosed},
		{name: "closed", fail: StatusTargetPortClosed, closeFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newSimnet(t, 3)
			a := n.add(1, 2, nil)
			b := n.add(2, 2, nil)
			provide := func(e *Engine) {
				for i := 0; i < 40; i++ {
					_ = e.Provide(make([]byte, 1016), 10, 0, 0)
				}
			}
			provide(b)
			// b delivers messages 0..9; the acks of 1..9 are lost. For "closed",
			// b gets only 0..4 (the later frames are lost), and its last
			// NACK tells a so.
			lossy := false
			n.lose = func(f []byte) bool {
				h, err := wire.ParseFrame(f, wire.EtherType)
				if err != nil || !lossy {
					return false
				}
				if tc.closeFirst {
					p := h.Payload()
					return h.Type() == wire.TypeData && len(p) > 0 && p[len(p)-1] >= 5 // see msg
				}
				return h.Type() == wire.TypeAck
			}
			msg := func(i int) []byte { b := pattern(50, i); b[len(b)-1] = byte(i); return b }
			var comps []completion
			send := func(from, to int) {
				for i := from; i < to; i++ {
					if err := a.Send(n.now, msg(i), 10, 50, 0, 2, 2, nil, i); err != nil {
						t.Fatal(err)
					}
				}
			}
			old := &receiver{e: b}
			send(0, 1) // the session's first message goes alone until acknowledged
			waitComps(t, n, a, &comps, 1, time.Second)
			lossy = true
			send(1, 10)
			want := 10
			if tc.closeFirst {
				want = 5
			}
			n.run(time.Second, func() bool { old.poll(); return len(old.got) >= want })
			for len(n.queue) > 0 { // the frames in flight, not the timers
				n.step()
			}
			old.poll()
			if len(old.got) != want {
				t.Fatalf("old incarnation got %d messages, want %d", len(old.got), want)
			}
			if tc.closeFirst {
				lossy = false
				b.Close(n.now)
			}
			// b dies: removed, or replaced by a port answering for it.
			var place *Engine
			if tc.answer {
				place = n.add(2, 0, func(c *Config) { c.AnswerClosed = func(p uint8) bool { return p == 2 } })
				n.engines = n.engines[:len(n.engines)-1]
				n.replace(b, place)
			} else {
				n.remove(b)
			}
			lossy = false
			if tc.dead || tc.closeFirst {
				// The sender learns of it through a failed send.
				n.run(2*time.Second, func() bool { drainCompletions(a, &comps); return hasFailure(comps) })
			}
			send(10, 15) // held if the stream failed
			b2 := New(b.cfg, simOut{n})
			if place != nil {
				n.replace(place, b2)
			} else {
				n.engines = append(n.engines, b2)
			}
			provide(b2)
			cur := &receiver{e: b2}
			st := map[int]Status{}
			seen := 0
			n.run(5*time.Second, func() bool {
				cur.poll()
				drainCompletions(a, &comps)
				k := seen
				seen = len(comps)
				for _, c := range comps[k:] {
					if c.id < 0 {
						continue
					}
					st[c.id] = c.st
					if c.st != StatusSuccess {
						if err := a.Resume(n.now, 0, 2, 2, nil, -1); err != nil {
							t.Fatal(err)
						}
					}
				}
				return len(st) == 15
			})
			cur.poll()
			for k := 0; k < 15; k++ {
				want := StatusSuccess // never sent to the old incarnation, or not delivered by the closed one
				switch {
				case tc.closeFirst && k == 5:
					want = tc.fail // the head when the port closed
				case tc.closeFirst || (k >= 10 && tc.dead) || k == 0:
				case k == 1 && tc.fail != 0:
					want = tc.fail // the head when the receiver died
				default:
					// Delivered by the old incarnation, unacknowledged; or
					// (killed-restarted) sent in the old incarnation's
					// session before the sender knew: the new one's
					// stale-session answers do not tell whether the old
					// one had it.
					want = tc.orphaned
				}
				if st[k] != want {
					t.Fatalf("message %d: status %d, want %d (statuses %v)%s", k, st[k], want, st, n.dump())
				}
			}
			// A new message goes through.
			send(15, 16)
			n.run(time.Second, func() bool { drainCompletions(a, &comps); cur.poll(); return comps[len(comps)-1].id == 15 })
			if c := comps[len(comps)-1]; c.st != StatusSuccess {
				t.Fatalf("new message: %+v", c)
			}
			st[15] = StatusSuccess
			// The new incarnation has exactly the messages that succeeded
			// and that the old one did not deliver, in order.
			inOld := map[int]bool{}
			for _, g := range old.got {
				inOld[int(g.data[len(g.data)-1])] = true
			}
			var wantNew []int
			for k := 0; k < 16; k++ {
				if st[k] == StatusSuccess && !inOld[k] {
					wantNew = append(wantNew, k)
				}
			}
			if len(cur.got) != len(wantNew) {
				t.Fatalf("new incarnation got %d messages, want %v", len(cur.got), wantNew)
			}
			for i, g := range cur.got {
				if k := wantNew[i]; !bytes.Equal(g.data, msg(k)) {
					t.Fatalf("new incarnation's message %d is not message %d", i, k)
				}
			}
			t.Logf("old incarnation %d messages, new %d (%v), statuses %v", len(old.got), len(cur.got), wantNew, st)
		})
	}
}

func hasFailure(comps []completion) bool {
	for _, c := range comps {
		if c.st != StatusSuccess {
			return true
		}
	}
	return false
}

// TestRDMAIncarnations kills a target that acknowledged a GET without its
// reply (GOT) arriving, and took a PUT whose ack was lost, and restarts it
// at once with the same region: when the requester's handshake meets the
// new incarnation, the GET and the PUT fail with PORT_CLOSED (the PUT is
// not written again into the new incarnation's memory, whatever its
// pointers now name), and after Resume a new PUT reaches the new memory.
func TestRDMAIncarnations(t *testing.T) {
	n := newSimnet(t, 4)
	a, b, _, ptr := rdmaPair(t, n, 1000, true)
	var comps []completion
	if err := a.Put(n.now, pattern(10, 1), ptr, 10, 0, 2, 4, nil, 0); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 1, time.Second) // the session is established
	lossy := true
	n.lose = func(f []byte) bool {
		h, err := wire.ParseFrame(f, wire.EtherType)
		// b's GOT frames, and its acks after the GET's.
		return err == nil && lossy && [6]byte(f[6:12]) == mac(2) && (h.Type() == wire.TypeGot || h.Type() == wire.TypeAck && getAcked(a))
	}
	buf := make([]byte, 100)
	if err := a.Get(n.now, ptr+100, buf, 100, 0, 2, 4, nil, 1); err != nil {
		t.Fatal(err)
	}
	n.run(time.Second, func() bool { return getAcked(a) })
	put := pattern(20, 2)
	if err := a.Put(n.now, put, ptr+200, 20, 0, 2, 4, nil, 2); err != nil {
		t.Fatal(err)
	}
	for len(n.queue) > 0 {
		n.step()
	}
	lossy = false
	// b is killed; b2 opens the port and registers the same region.
	b2 := New(b.cfg, simOut{n})
	n.replace(b, b2)
	mem2 := make([]byte, 1000)
	if p2, _ := b2.RegisterMemory(mem2); p2 != ptr {
		t.Fatalf("pointer %#x, want %#x", p2, ptr)
	}
	b2.AllowRemoteAccess()
	if err := a.Send(n.now, []byte("after"), 5, 5, 0, 2, 4, nil, 3); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 4, 2*time.Second)
	want := []completion{{0, StatusSuccess}, {1, StatusTargetPortClosed}, {2, StatusTargetPortClosed}, {3, StatusTargetPortClosed}}
	for i, c := range want {
		if comps[i] != c {
			t.Fatalf("completions %+v, want %+v", comps, want)
		}
	}
	if err := a.Resume(n.now, 0, 2, 4, nil, -1); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(n.now, pattern(30, 3), ptr+500, 30, 0, 2, 4, nil, 4); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 6, 2*time.Second)
	if c := comps[5]; c != (completion{4, StatusSuccess}) {
		t.Fatalf("put after Resume: %+v", comps)
	}
	wantMem := make([]byte, 1000)
	copy(wantMem[500:], pattern(30, 3))
	if !bytes.Equal(mem2, wantMem) {
		t.Fatal("the new incarnation's memory holds more than the put sent after Resume")
	}
}

// getAcked reports whether e has a get whose request was acknowledged.
func getAcked(e *Engine) bool {
	if e.rdma == nil {
		return false
	}
	for _, op := range e.rdma.gets {
		if op.acked {
			return true
		}
	}
	return false
}
