package proto

import (
	"bytes"
	"testing"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// gotWatch counts the GOT frames on n by stream kind, and the GOT
// transfers started on the reply stream (first frames that are not
// retransmissions).
type gotWatch struct {
	reply, prio, starts int
}

func (w *gotWatch) see(f []byte) {
	h := wire.FrameHeader(f)
	if h.Type() != wire.TypeGot {
		return
	}
	if h.Flags()&wire.FlagReply == 0 {
		w.prio++
		return
	}
	w.reply++
	if h.Offset() == 0 && h.Flags()&wire.FlagRetransmit == 0 {
		w.starts++
	}
}

// getAll issues one get of each length in lens from a, at successive
// offsets of ptr, and waits for all of them; it fails the test unless each
// completes once, with success and the target's bytes. It returns the
// completions' count so far.
func getAll(t *testing.T, n *simnet, a *Engine, mem []byte, ptr uint64, lens []int, pri uint8, comps *[]completion) {
	t.Helper()
	base := len(*comps)
	bufs := make([][]byte, len(lens))
	offs := make([]int, len(lens))
	off := 0
	for i, l := range lens {
		bufs[i], offs[i] = make([]byte, l), off
		if err := a.Get(n.now, ptr+uint64(off), bufs[i], l, pri, 2, 4, nil, base+i); err != nil {
			t.Fatal(err)
		}
		off += l + 1
	}
	waitComps(t, n, a, comps, base+len(lens), 10*time.Second)
	seen := map[int]bool{}
	for _, c := range (*comps)[base:] {
		i := c.id - base
		if c.st != StatusSuccess || seen[i] || i < 0 || i >= len(lens) {
			t.Fatalf("get completions %+v", (*comps)[base:])
		}
		seen[i] = true
		if !bytes.Equal(bufs[i], mem[offs[i]:offs[i]+lens[i]]) {
			t.Fatalf("get %d (%d bytes) holds other bytes than the target's", i, lens[i])
		}
	}
}

// TestGetWhileSendsDisabled: the target's stream to the requester is
// disabled after a send error (the requester refuses the message's size
// class), with another message held behind it. Gets of both priorities
// are served meanwhile, on the reply stream, and leave the disabled stream
// as it is: its held message goes only when the target's application
// resumes, and gm_drop_sends on the stream does not reach the replies.
func TestGetWhileSendsDisabled(t *testing.T) {
	n := newSimnet(t, 21)
	a, b, mem, ptr := rdmaPair(t, n, 10_000, true)
	var w gotWatch
	n.lose = func(f []byte) bool { w.see(f); return false }
	if err := a.Pools().SetAcceptable(0, 0); err != nil { // no size class at priority 0
		t.Fatal(err)
	}
	var ca, cb []completion
	if err := b.Send(n.now, []byte("refused"), 5, 7, 0, 1, 2, nil, 100); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, b, &cb, 1, time.Second)
	if cb[0] != (completion{100, StatusSendRejected}) {
		t.Fatalf("b's completions %+v, want the send rejected", cb)
	}
	s := b.tx(b.peer(1), 2, 0)
	if !s.disabled {
		t.Fatal("b's stream to a is not disabled after the rejected send")
	}
	if err := b.Send(n.now, []byte("held"), 5, 4, 0, 1, 2, nil, 101); err != nil {
		t.Fatal(err)
	}

	getAll(t, n, a, mem, ptr, []int{0, 1, 92, 1000, 3000}, 0, &ca)
	getAll(t, n, a, mem, ptr, []int{500, 7}, 1, &ca)
	if !s.disabled || s.qLen != 1 || len(cb) != 1 {
		t.Fatalf("b's disabled stream changed: disabled %v, queued %d, completions %+v", s.disabled, s.qLen, cb)
	}
	if w.prio != 0 || w.reply == 0 {
		t.Fatalf("GOT frames: %d on the priority streams, %d on the reply stream", w.prio, w.reply)
	}

	// gm_drop_sends while gets are being served: the held message is
	// dropped, the replies are not.
	bufs := [][]byte{make([]byte, 2000), make([]byte, 2000)}
	for i, buf := range bufs {
		if err := a.Get(n.now, ptr+uint64(i*2000), buf, 2000, 0, 2, 4, nil, 200+i); err != nil {
			t.Fatal(err)
		}
	}
	n.run(time.Second, func() bool { return queuedReplies(b) > 0 })
	if err := b.Drop(n.now, 0, 1, 2, nil, 102); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &ca, len(ca)+2, 5*time.Second)
	for _, c := range ca[len(ca)-2:] {
		if c.st != StatusSuccess || !bytes.Equal(bufs[c.id-200], mem[(c.id-200)*2000:(c.id-199)*2000]) {
			t.Fatalf("get after gm_drop_sends: %+v", c)
		}
	}
	drainCompletions(b, &cb)
	if len(cb) != 3 || cb[1] != (completion{101, StatusSendDropped}) || cb[2] != (completion{102, StatusSuccess}) {
		t.Fatalf("b's completions %+v, want the held send dropped and the marker", cb)
	}
}

// queuedReplies returns the number of replies queued on e's reply streams.
func queuedReplies(e *Engine) int {
	k := 0
	for _, p := range e.peers {
		if p == nil {
			continue
		}
		for port := range p.tx {
			if s := p.tx[port][replyPri]; s != nil {
				k += s.qLen
			}
		}
	}
	return k
}

// TestGetWhileSendsStalled: the target's application has filled its send
// queue to the requester with messages the requester has no receive
// buffer for, so the stream probes and holds them (no send token left).
// Gets are served meanwhile; their replies do not wait behind the held
// messages, which are still held afterwards and delivered, in order, once
// the requester provides buffers.
func TestGetWhileSendsStalled(t *testing.T) {
	n := newSimnet(t, 22)
	a := n.add(1, 2, nil)
	b := n.add(2, 4, func(c *Config) { c.ProgressTimeout = time.Hour; c.SendTokens = MaxSendTokens })
	mem := pattern(100_000, 5)
	ptr, err := b.RegisterMemory(mem)
	if err != nil {
		t.Fatal(err)
	}
	b.AllowRemoteAccess()
	var w gotWatch
	n.lose = func(f []byte) bool { w.see(f); return false }
	var ca, cb []completion
	sent := 0
	for ; ; sent++ {
		if err := b.Send(n.now, []byte{byte(sent)}, 5, 1, 0, 1, 2, nil, sent); err != nil {
			if err != ErrNoSendToken {
				t.Fatal(err)
			}
			break
		}
	}
	s := b.tx(b.peer(1), 2, 0)
	n.run(time.Second, func() bool { return s.noBuf })
	if sent != MaxSendTokens || s.qLen != sent {
		t.Fatalf("b queued %d sends (stream holds %d), want %d", sent, s.qLen, MaxSendTokens)
	}

	getAll(t, n, a, mem, ptr, []int{1, 100, 10_000, 50_000}, 0, &ca)
	getAll(t, n, a, mem, ptr, []int{64, 4096}, 1, &ca)
	if drainCompletions(b, &cb); len(cb) != 0 || s.qLen != sent || !s.noBuf {
		t.Fatalf("b's held sends changed: completions %+v, queued %d, noBuf %v", cb, s.qLen, s.noBuf)
	}
	if w.prio != 0 {
		t.Fatalf("%d GOT frames went on b's priority stream", w.prio)
	}

	r := &receiver{e: a}
	for range sent {
		if err := a.Provide(make([]byte, 8), 5, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	n.run(10*time.Second, func() bool { r.poll(); drainCompletions(b, &cb); return len(cb) >= sent && len(r.got) >= sent })
	for i, m := range r.got {
		if len(m.data) != 1 || m.data[0] != byte(i) || cb[i] != (completion{i, StatusSuccess}) {
			t.Fatalf("message %d is %v (completion %+v): out of order or corrupt", i, m.data, cb[i])
		}
	}
}

// TestGetReplyLostExactlyOnce loses the target's first GOT frames and the
// acknowledgements of the GET: the requester sends the GET again, the
// target serves it once (one GOT transfer), resends the lost reply frames,
// and the get completes once with the target's bytes. Nothing reaches the
// get's buffer after its completion.
func TestGetReplyLostExactlyOnce(t *testing.T) {
	for _, size := range []int{10, 1000} {
		n := newSimnet(t, 23)
		a, b, mem, ptr := rdmaPair(t, n, 2000, true)
		var w gotWatch
		lostGot, lostAck := 0, 0
		n.lose = func(f []byte) bool {
			w.see(f)
			h := wire.FrameHeader(f)
			switch {
			case h.Type() == wire.TypeGot && lostGot < 3:
				lostGot++
				return true
			case h.SourceNode() == 2 && h.Flags()&wire.FlagReply == 0 && lostAck < 4 &&
				(h.Type() == wire.TypeAck || h.Flags()&wire.FlagAckValid != 0):
				lostAck++
				return true
			}
			return false
		}
		var ca []completion
		buf := make([]byte, size)
		if err := a.Get(n.now, ptr+7, buf, size, 0, 2, 4, nil, 1); err != nil {
			t.Fatal(err)
		}
		waitComps(t, n, a, &ca, 1, 5*time.Second)
		if ca[0] != (completion{1, StatusSuccess}) || !bytes.Equal(buf, mem[7:7+size]) {
			t.Fatalf("size %d: get %+v, data equal %v", size, ca[0], bytes.Equal(buf, mem[7:7+size]))
		}
		if lostGot != 3 || lostAck == 0 || a.Stats().DataRetransmitted == 0 || b.Stats().Duplicates == 0 {
			t.Fatalf("size %d: lost %d GOT frames and %d acks, %d retransmitted GETs, %d duplicates at the target: the test did not lose what it means to",
				size, lostGot, lostAck, a.Stats().DataRetransmitted, b.Stats().Duplicates)
		}
		clear(buf)
		runIdle(n)
		if drainCompletions(a, &ca); len(ca) != 1 {
			t.Fatalf("size %d: completions %+v, want one", size, ca)
		}
		if w.starts != 1 {
			t.Fatalf("size %d: the target started %d GOT transfers, want 1", size, w.starts)
		}
		if !bytes.Equal(buf, make([]byte, size)) {
			t.Fatalf("size %d: the get's buffer was written after its completion", size)
		}
	}
}

// TestGetWithoutSepReply: a GET without FlagSepReply (a requester that
// predates reply streams; the flag is cleared in flight) is answered on
// the target's stream of the GET's priority, as before the flag, and the
// get completes. A GET that has the flag but meets a target that ignores
// it (the same frames, seen from the other side) is answered the same way.
func TestGetWithoutSepReply(t *testing.T) {
	n := newSimnet(t, 24)
	a, _, mem, ptr := rdmaPair(t, n, 5000, true)
	var w gotWatch
	n.lose = func(f []byte) bool {
		w.see(f)
		if h := wire.FrameHeader(f); h.Type() == wire.TypeGet {
			h.SetFlags(h.Flags() &^ wire.FlagSepReply)
			h.UpdateCRC()
		}
		return false
	}
	var ca []completion
	getAll(t, n, a, mem, ptr, []int{5, 1200}, 1, &ca)
	if w.reply != 0 || w.prio == 0 {
		t.Fatalf("GOT frames: %d on the reply stream, %d on the priority stream", w.reply, w.prio)
	}
}

// TestReplyStreamRefusesOthers: a frame of the reply stream (FlagReply)
// that is not a GOT or a control frame (a message, put, get or datagram)
// is malformed: dropped and counted, never delivered.
func TestReplyStreamRefusesOthers(t *testing.T) {
	n := newSimnet(t, 25)
	a := n.add(1, 2, nil)
	_ = a.Provide(make([]byte, 32), 5, 0, 0)
	_ = a.Provide(make([]byte, 32), 5, 1, 0)
	for _, typ := range []wire.Type{wire.TypeData, wire.TypeDataFirst, wire.TypePut, wire.TypeGet, wire.TypeDatagram} {
		for _, fl := range []wire.Flags{wire.FlagReply, wire.FlagReply | wire.FlagHigh} {
			before := a.Stats().Malformed
			hf := wire.HeaderFields{Type: typ, TargetPort: 2, SourcePort: 4, Flags: fl, Size: 5,
				TargetNode: 1, SourceNode: 2, Session: 9, Seq: 1, MsgLen: 8}
			payload := make([]byte, 8)
			f := wire.AppendFrame(nil, mac(1), mac(2), wire.EtherType, &hf, payload)
			a.Input(n.now, f)
			a.Tick(n.now)
			if a.Stats().Malformed != before+1 {
				t.Errorf("%v with %v: not counted malformed", typ, fl)
			}
			var ev Event
			if a.PopEvent(&ev) {
				t.Errorf("%v with %v: delivered %+v", typ, fl, ev)
			}
		}
	}
}
