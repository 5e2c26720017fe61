package proto

import (
	"bytes"
	"testing"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// handshake plays the sender of stream (node, port, pri) -> e: it gives e
// an OPEN proposing session sess in place of prev (0: none), takes e's
// OPEN_ACK out of n's queue and returns it. The new session's first
// sequence number is its Seq.
func handshake(t testing.TB, n *simnet, e *Engine, node uint32, port, pri uint8, sess, prev uint32) wire.Header {
	t.Helper()
	var fl wire.Flags
	if pri != 0 {
		fl = wire.FlagHigh
	}
	h := wire.HeaderFields{Type: wire.TypeOpen, TargetPort: e.cfg.Port, SourcePort: port, Flags: fl,
		TargetNode: e.cfg.NodeID, SourceNode: node, Session: sess, Ack: prev}
	e.Input(n.now, wire.AppendFrame(nil, e.cfg.MAC, mac(int(node)), e.cfg.EtherType, &h, nil))
	for i, f := range n.queue {
		r, err := wire.ParseFrame(f, e.cfg.EtherType)
		if err == nil && r.Type() == wire.TypeOpenAck && r.Session() == sess && r.TargetNode() == node {
			if [6]byte(f[0:6]) != mac(int(node)) {
				t.Fatalf("OPEN_ACK to %x, not to the sender's MAC in the node map", f[0:6])
			}
			n.queue = append(n.queue[:i], n.queue[i+1:]...)
			return r
		}
	}
	t.Fatalf("no OPEN_ACK for session %08x", sess)
	return nil
}

// TestForgedSessionAttack reproduces issue 12's attack. A third host that
// knows only node ids, ports, MACs and the protocol (the initial sequence
// number formula of the first version, session * 0x9E3779B1) sends frames
// to receiver A claiming sender B's id: an OPEN for a session of its own,
// then DATA frames of that session at every first sequence number it can
// guess, with a size class A has buffers for (blind injection) or one it
// has none for, with B's MAC spoofed or not. Meanwhile A has delivered B's
// message m1 whose acks were lost. Before the session handshake, A adopted
// the forged session, answered B's retransmission of m1 with
// NackStaleSession, B restarted from m1 and A delivered m1 twice (and,
// with buffers, the forged message as B's). Now: A delivers m1 and m2 once
// each and nothing of the forger, B's sends succeed without waiting for a
// timeout, and A still follows B's session.
func TestForgedSessionAttack(t *testing.T) {
	for _, v := range []struct {
		name    string
		size    uint8 // the forged message's size class
		spoofed bool  // the forger uses B's MAC as its source
	}{
		{"no-buffer", 4, false}, {"no-buffer-spoofed", 4, true},
		{"injection", 8, false}, {"injection-spoofed", 8, true},
	} {
		t.Run(v.name, func(t *testing.T) {
			n := newSimnet(t, 21)
			b := n.add(1, 2, nil) // the sender B
			a := n.add(2, 2, nil) // the receiver A
			r := &receiver{e: a}
			for i := 0; i < 4; i++ {
				_ = a.Provide(make([]byte, 248), 8, 0, 0)
			}
			dropAcks := true // A's acks to B are lost
			step := func() bool {
				if dropAcks {
					q := n.queue[:0]
					for _, f := range n.queue {
						if h, err := wire.ParseFrame(f, wire.EtherType); err == nil && h.Type() == wire.TypeAck && [6]byte(f[0:6]) == mac(1) {
							continue
						}
						q = append(q, f)
					}
					n.queue = q
				}
				return n.step()
			}
			run := func(limit Time, cond func() bool) {
				t.Helper()
				end := n.now + limit
				for !cond() {
					if n.now > end || !step() {
						t.Fatalf("condition not met%s", n.dump())
					}
				}
			}
			var comps []completion
			m1, m2 := pattern(80, 1), pattern(80, 2) // one frame each
			if err := b.Send(n.now, m1, 8, len(m1), 0, 2, 2, nil, 1); err != nil {
				t.Fatal(err)
			}
			run(Time(time.Second), func() bool { r.poll(); return len(r.got) == 1 })

			// The attack, as a blind third host can mount it.
			src := mac(0x42)
			if v.spoofed {
				src = mac(1)
			}
			forged := []byte{0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE}
			for _, sess := range []uint32{0x5eed5eed, 0x00000001, 0x9e3779b1} {
				o := wire.HeaderFields{Type: wire.TypeOpen, TargetPort: 2, SourcePort: 2, TargetNode: 2, SourceNode: 1, Session: sess}
				a.Input(n.now, wire.AppendFrame(nil, mac(2), src, wire.EtherType, &o, nil))
				for _, seq := range []uint32{formulaSeq(sess), 0, 1, sess, ^uint32(0)} {
					h := wire.HeaderFields{Type: wire.TypeData, TargetPort: 2, SourcePort: 2, TargetNode: 2, SourceNode: 1,
						Session: sess, Seq: seq, MsgLen: 8, Size: v.size}
					a.Input(n.now, wire.AppendFrame(nil, mac(2), src, wire.EtherType, &h, forged))
				}
			}
			a.Tick(n.now)

			// B's m1 is unacknowledged: it retransmits it; the acks flow
			// again; B sends m2.
			run(Time(50*time.Millisecond), func() bool { return a.Stats().Duplicates > 0 || b.Stats().NacksReceived > 0 })
			dropAcks = false
			start := n.now
			if err := b.Send(n.now, m2, 8, len(m2), 0, 2, 2, nil, 2); err != nil {
				t.Fatal(err)
			}
			run(Time(time.Second), func() bool { r.poll(); drainCompletions(b, &comps); return len(comps) == 2 })
			if el := n.now - start; el > b.cfg.LivenessTimeout/10 {
				t.Errorf("m2 completed after %v: the stream stalled", el)
			}
			// Let anything still in flight arrive.
			end := n.now + Time(100*time.Millisecond)
			for n.now < end && step() {
				r.poll()
			}
			r.poll()
			for _, c := range comps {
				if c.st != StatusSuccess {
					t.Errorf("completion %+v", c)
				}
			}
			var got [][]byte
			for _, g := range r.got {
				got = append(got, g.data)
			}
			if len(got) != 2 || !bytes.Equal(got[0], m1) || !bytes.Equal(got[1], m2) {
				t.Fatalf("A received %d messages, want m1 and m2 once each: %x", len(got), got)
			}
			rs, _ := streamsOf(a, 1, 2, 0)
			_, s := streamsOf(b, 2, 2, 0)
			if !rs.valid || rs.session != s.session {
				t.Fatalf("A follows session %08x (valid %v), B sends in %08x", rs.session, rs.valid, s.session)
			}
		})
	}
}

// TestResumeAfterLostAcks: the receiver delivers every message, but no
// answer reaches the sender, whose head send fails with
// StatusTargetNodeUnreached. After Resume, the new session's OPEN_ACK
// reports what the receiver delivered: the held messages complete
// successfully without being sent again, and none is delivered twice.
// (Before the handshake, the new session sent them again and the receiver
// delivered them a second time.)
func TestResumeAfterLostAcks(t *testing.T) {
	n := newSimnet(t, 5)
	b := n.add(1, 2, nil)
	a := n.add(2, 2, nil)
	r := &receiver{e: a}
	for i := 0; i < 8; i++ {
		_ = a.Provide(make([]byte, 248), 8, 0, 0)
	}
	var comps []completion
	if err := b.Send(n.now, pattern(50, 9), 8, 50, 0, 2, 2, nil, 9); err != nil {
		t.Fatal(err)
	}
	n.run(time.Second, func() bool { r.poll(); drainCompletions(b, &comps); return len(comps) == 1 })
	deaf := true // nothing reaches B
	n.lose = func(f []byte) bool { return deaf && [6]byte(f[0:6]) == mac(1) }
	for i := 0; i < 4; i++ {
		m := pattern(150, i)
		if err := b.Send(n.now, m, 8, len(m), 0, 2, 2, nil, i); err != nil {
			t.Fatal(err)
		}
	}
	n.run(2*time.Second, func() bool { r.poll(); drainCompletions(b, &comps); return len(comps) == 2 })
	if comps[1] != (completion{0, StatusTargetNodeUnreached}) || len(r.got) != 5 {
		t.Fatalf("completions %+v, %d messages delivered", comps, len(r.got))
	}
	deaf = false
	if err := b.Resume(n.now, 0, 2, 2, nil, 100); err != nil {
		t.Fatal(err)
	}
	n.run(time.Second, func() bool { r.poll(); drainCompletions(b, &comps); return len(comps) == 6 })
	end := n.now + Time(100*time.Millisecond)
	for n.now < end && n.step() {
	}
	r.poll()
	for _, c := range comps[2:] {
		if c.st != StatusSuccess {
			t.Fatalf("completions %+v", comps)
		}
	}
	if len(r.got) != 5 {
		t.Fatalf("%d messages delivered, want 5 (each once)", len(r.got))
	}
	for i, g := range r.got[1:] {
		if !bytes.Equal(g.data, pattern(150, i)) {
			t.Fatalf("message %d differs", i)
		}
	}
	if st := b.Stats(); st.DataSent != 9 || st.OpensSent < 2 { // 1 + 4 messages of 2 frames, none sent anew
		t.Fatalf("sender stats %+v: the held messages were sent again", st)
	}
}

// TestForgedOpenDisplacesPending: a stranger's OPENs, claiming sender B's
// id, reach receiver A between A's OPEN_ACK to B and B's first frame. They
// supersede B's pending session at A, so B's first frames are answered
// with NackStaleSession and B opens another session, leaving one that A
// never started. A tells it so (its OPEN_ACK acknowledges nothing of the
// session left): B's sends all succeed, each delivered once, and none
// fails as if A had restarted (before the fix, B failed every message sent
// in the displaced session with StatusTargetPortClosed).
func TestForgedOpenDisplacesPending(t *testing.T) {
	for _, spoofed := range []bool{false, true} {
		n := newSimnet(t, 23)
		b := n.add(1, 2, nil) // the sender B
		a := n.add(2, 2, nil) // the receiver A
		r := &receiver{e: a}
		for i := 0; i < 16; i++ {
			_ = a.Provide(make([]byte, 248), 8, 0, 0)
		}
		const count = 8
		for i := 0; i < count; i++ {
			m := pattern(80, i)
			if err := b.Send(n.now, m, 8, len(m), 0, 2, 2, nil, i); err != nil {
				t.Fatal(err)
			}
		}
		n.run(Time(time.Second), func() bool { return a.Stats().OpenAcksSent == 1 })
		src := mac(0x42)
		if spoofed {
			src = mac(1)
		}
		for _, sess := range []uint32{0x5eed5eed, 0x00000001, 0x9e3779b1} {
			o := wire.HeaderFields{Type: wire.TypeOpen, TargetPort: 2, SourcePort: 2, TargetNode: 2, SourceNode: 1, Session: sess}
			a.Input(n.now, wire.AppendFrame(nil, mac(2), src, wire.EtherType, &o, nil))
		}
		var comps []completion
		n.run(Time(5*time.Second), func() bool { r.poll(); drainCompletions(b, &comps); return len(comps) == count })
		for _, c := range comps {
			if c.st != StatusSuccess {
				t.Errorf("spoofed %v: completion %+v", spoofed, c)
			}
		}
		if len(r.got) != count {
			t.Fatalf("spoofed %v: A received %d messages, want %d", spoofed, len(r.got), count)
		}
		for i, g := range r.got {
			if !bytes.Equal(g.data, pattern(80, i)) {
				t.Fatalf("spoofed %v: message %d is %x", spoofed, i, g.data)
			}
		}
		if b.Stats().NacksReceivedStaleSession == 0 {
			t.Errorf("spoofed %v: the forged OPENs displaced nothing (the test no longer tests the case)", spoofed)
		}
	}
}
