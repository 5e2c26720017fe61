package rail

import (
	"bytes"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// The rail logic without sockets: fake links record what is sent on them
// (in one shared log, to check the order across rails) and deliver queued
// frames to Recv.

type txRecord struct {
	rail  int
	frame []byte
}

type fakeLink struct {
	link.Endpoint // nil: the methods the set does not use panic
	rail          int
	mac           [6]byte
	log           *[]txRecord
	running       bool
	sendErr       error
	slot          []byte
	queued        [][]byte
	rx            [][]byte
	kicks         int
	tx            int
	nexts         int // TxCommitNext calls
}

// The fallbacks of link.Endpoint's capabilities: a fakeLink has none.
func (l *fakeLink) Caps() link.Caps                      { return 0 }
func (l *fakeLink) Unwrap() link.Endpoint                { return nil }
func (l *fakeLink) JoinWait([]link.Endpoint) link.Waiter { return nil }
func (l *fakeLink) SendOwned(f []byte) error             { return l.Send(f) }
func (l *fakeLink) RecvOwned(frames [][]byte) int        { return l.Recv(frames) }
func (l *fakeLink) RecvIdle() bool                       { return false }

func (l *fakeLink) TxCommitNext(n int) ([]byte, error) {
	l.nexts++
	if err := l.TxCommit(n); err != nil {
		return nil, err
	}
	return l.TxSlot(), nil
}

func (l *fakeLink) out(f []byte) {
	*l.log = append(*l.log, txRecord{l.rail, bytes.Clone(f)})
	l.tx++
}

func (l *fakeLink) Send(f []byte) error {
	if l.sendErr != nil {
		return l.sendErr
	}
	l.out(f)
	return nil
}

func (l *fakeLink) SendBatch(fs [][]byte) (int, error) {
	if l.sendErr != nil {
		return 0, l.sendErr
	}
	for _, f := range fs {
		l.out(f)
	}
	l.kicks++
	return len(fs), nil
}

func (l *fakeLink) TxSlot() []byte {
	if l.slot == nil {
		l.slot = make([]byte, 9100)
	}
	return l.slot
}

func (l *fakeLink) TxCommit(n int) error {
	l.queued = append(l.queued, bytes.Clone(l.slot[:n]))
	return nil
}

func (l *fakeLink) Flush() error {
	if l.sendErr != nil {
		return l.sendErr
	}
	for _, f := range l.queued {
		l.out(f)
	}
	l.queued = nil
	l.kicks++
	return nil
}

func (l *fakeLink) Recv(frames [][]byte) int {
	n := copy(frames, l.rx)
	l.rx = l.rx[n:]
	return n
}

func (l *fakeLink) HardwareAddr() net.HardwareAddr { return l.mac[:] }
func (l *fakeLink) MTU() int                       { return testMTU }
func (l *fakeLink) Running() bool                  { return l.running }
func (l *fakeLink) Stats() link.Stats              { return link.Stats{TxFrames: uint64(l.tx)} }
func (l *fakeLink) Name() string                   { return "fake" }
func (l *fakeLink) Close() error                   { return nil }

type fakeEngine struct {
	in    [][]byte
	pumps int
}

func (e *fakeEngine) Input(_ time.Duration, f []byte) { e.in = append(e.in, bytes.Clone(f)) }
func (e *fakeEngine) Pump(time.Duration)              { e.pumps++ }

var (
	macA = [][6]byte{{2, 0, 0, 0, 1, 0}, {2, 0, 0, 0, 1, 1}}
	macB = [][6]byte{{2, 0, 0, 0, 2, 0}, {2, 0, 0, 0, 2, 1}}
	macC = [][6]byte{{2, 0, 0, 0, 3, 0}}
)

const (
	testMTU = 1500
	testSeg = testMTU - wire.HeaderLen
)

type railsHarness struct {
	rs    *Set
	links []*fakeLink
	log   []txRecord
	eng   *fakeEngine
	now   time.Duration
	m     *nodemap.Map
}

// newRailsHarness builds a two-rail set for node 1 (host "a", MACs macA in
// the order ownMACs) with peers 2 (two rails) and 3 (one rail).
func newRailsHarness(t *testing.T, ownMACs [][6]byte) *railsHarness {
	t.Helper()
	m, err := nodemap.New(0, [6]byte{}, []nodemap.Entry{
		{ID: 1, Host: "a", MACs: ownMACs},
		{ID: 2, Host: "b", MACs: macB},
		{ID: 3, Host: "c", MACs: macC},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &railsHarness{eng: &fakeEngine{}, m: m, now: time.Second}
	links := make([]link.Endpoint, 2)
	for i := range links {
		l := &fakeLink{rail: i, mac: macA[i], log: &h.log, running: true}
		h.links = append(h.links, l)
		links[i] = l
	}
	h.rs = New(links)
	h.rs.Attach(h.eng, func() time.Duration { return h.now })
	h.rs.SetMap(m, 1)
	return h
}

func frame(typ wire.Type, to, from uint32, fl wire.Flags, seq, msgLen, off uint32, plen int) []byte {
	hf := wire.HeaderFields{Type: typ, TargetPort: 4, SourcePort: 2, Flags: fl, Size: 20,
		TargetNode: to, SourceNode: from, Session: 77, Seq: seq, MsgLen: msgLen, Offset: off}
	return wire.AppendFrame(nil, [6]byte{}, [6]byte{}, wire.EtherType, &hf, make([]byte, plen))
}

// message returns the data frames of a message of nseg full segments
// starting at sequence number seq, to node to.
func message(to uint32, seq, nseg uint32) [][]byte {
	var fs [][]byte
	for k := uint32(0); k < nseg; k++ {
		typ := wire.TypeDataMiddle
		switch {
		case nseg == 1:
			typ = wire.TypeData
		case k == 0:
			typ = wire.TypeDataFirst
		case k == nseg-1:
			typ = wire.TypeDataLast
		}
		fs = append(fs, frame(typ, to, 1, 0, seq+k, nseg*testSeg, k*testSeg, testSeg))
	}
	return fs
}

func (h *railsHarness) takeLog() []txRecord {
	l := h.log
	h.log = nil
	return l
}

func seqOf(f []byte) uint32 { return wire.FrameHeader(f).Seq() }

// TestRailsStriping: chunk k of every message goes on the k-th rail after
// the stream's home rail, message starts always on the home rail, frames
// carry the MACs of their rail, and the batch keeps its order across
// rails.
func TestRailsStriping(t *testing.T) {
	h := newRailsHarness(t, macA)
	seq := uint32(1000)
	home := -1
	for _, nseg := range []uint32{1, 5, 3 * chunkFrames, chunkFrames + 1, 2} {
		fs := message(2, seq, nseg)
		seq += nseg
		for start := 0; start < len(fs); start += 64 {
			batch := fs[start:min(start+64, len(fs))]
			if n, err := h.rs.SendBatch(batch); n != len(batch) || err != nil {
				t.Fatalf("SendBatch = %d, %v", n, err)
			}
		}
		log := h.takeLog()
		if len(log) != int(nseg) {
			t.Fatalf("%d frames sent, want %d", len(log), nseg)
		}
		if home < 0 {
			home = log[0].rail
		}
		for k, rec := range log {
			if got := seqOf(rec.frame); got != seq-nseg+uint32(k) {
				t.Fatalf("message of %d: frame %d has seq %d: out of order", nseg, k, got)
			}
			want := (home + k/chunkFrames) % 2
			if rec.rail != want {
				t.Fatalf("message of %d frames: frame %d on rail %d, want %d", nseg, k, rec.rail, want)
			}
			e := wire.Ethernet(rec.frame)
			if e.Dst() != macB[rec.rail] || e.Src() != macA[rec.rail] {
				t.Fatalf("frame on rail %d: dst %x src %x", rec.rail, e.Dst(), e.Src())
			}
		}
	}
	// A retransmitted frame of a later chunk goes on the home rail.
	f := frame(wire.TypeDataMiddle, 2, 1, wire.FlagRetransmit, seq, 4*chunkFrames*testSeg, chunkFrames*testSeg, testSeg)
	if err := h.rs.Send(f); err != nil {
		t.Fatal(err)
	}
	if log := h.takeLog(); log[0].rail != home {
		t.Fatalf("retransmission on rail %d, home is %d", log[0].rail, home)
	}
	// The peer with one MAC is reached on rail 0 only.
	for _, f := range message(3, 0, 2*chunkFrames) {
		if err := h.rs.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range h.takeLog() {
		if rec.rail != 0 || wire.Ethernet(rec.frame).Dst() != macC[0] {
			t.Fatalf("frame to a one-rail peer on rail %d to %x", rec.rail, wire.Ethernet(rec.frame).Dst())
		}
	}
}

// TestRailsPairingByMapOrder: rail numbers come from this host's map
// entry: if the map lists the unit's second interface first, that
// interface pairs with the peer's first MAC.
func TestRailsPairingByMapOrder(t *testing.T) {
	h := newRailsHarness(t, [][6]byte{macA[1], macA[0]})
	for _, f := range message(2, 0, 2*chunkFrames) {
		if err := h.rs.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	used := map[int]bool{}
	for _, rec := range h.takeLog() {
		used[rec.rail] = true
		if want := macB[1-rec.rail]; wire.Ethernet(rec.frame).Dst() != want {
			t.Fatalf("link %d sent to %x, want %x", rec.rail, wire.Ethernet(rec.frame).Dst(), want)
		}
	}
	if len(used) != 2 {
		t.Fatalf("rails used: %v", used)
	}
	// Peer 3 has one MAC: rail number 0, which is link 1 here.
	if err := h.rs.Send(message(3, 0, 1)[0]); err != nil {
		t.Fatal(err)
	}
	if rec := h.takeLog()[0]; rec.rail != 1 {
		t.Fatalf("one-rail peer reached on link %d", rec.rail)
	}
}

// TestRailsAnswers: acks go in turn on the rails on which the peer sent
// frames since it was last answered there.
func TestRailsAnswers(t *testing.T) {
	h := newRailsHarness(t, macA)
	ack := func() int {
		t.Helper()
		if err := h.rs.Send(frame(wire.TypeAck, 2, 1, 0, 0, 0, 0, 0)); err != nil {
			t.Fatal(err)
		}
		return h.takeLog()[0].rail
	}
	in := func(rail int) { h.rs.heard(rail, frame(wire.TypeData, 1, 2, 0, 0, 10, 0, 10), h.now) }
	in(1)
	if r := ack(); r != 1 {
		t.Fatalf("ack on rail %d after a frame on rail 1", r)
	}
	in(0)
	in(1)
	a, b := ack(), ack()
	if a == b {
		t.Fatalf("acks on rails %d, %d after frames on both", a, b)
	}
	in(0)
	for i := 0; i < 3; i++ {
		if r := ack(); r != 0 {
			t.Fatalf("ack %d on rail %d after frames on rail 0 only", i, r)
		}
	}
}

// TestRailsInterfaceDown: a send that fails with ENETDOWN goes out on the
// other rail, which then carries every frame until the carrier returns.
func TestRailsInterfaceDown(t *testing.T) {
	h := newRailsHarness(t, macA)
	h.links[1].sendErr = &link.OpError{Op: "send", Err: syscall.ENETDOWN}
	h.links[1].running = false
	fs := message(2, 0, 3*chunkFrames)
	if n, err := h.rs.SendBatch(fs[:64]); n != 64 || err != nil {
		t.Fatalf("SendBatch = %d, %v", n, err)
	}
	for _, f := range fs[64:] {
		if err := h.rs.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	log := h.takeLog()
	if len(log) != len(fs) {
		t.Fatalf("%d frames sent, want %d", len(log), len(fs))
	}
	for i, rec := range log {
		if rec.rail != 0 || wire.Ethernet(rec.frame).Dst() != macB[0] || seqOf(rec.frame) != uint32(i) {
			t.Fatalf("frame %d: rail %d seq %d", i, rec.rail, seqOf(rec.frame))
		}
	}
	if h.rs.down != 2 || h.rs.st.downs != 1 {
		t.Fatalf("down %b downs %d", h.rs.down, h.rs.st.downs)
	}
	// The carrier returns: the next check brings the rail back.
	h.links[1].sendErr, h.links[1].running = nil, true
	h.now += carrierEvery
	h.rs.maintain(h.now)
	if h.rs.down != 0 {
		t.Fatalf("rail still down after its carrier returned")
	}
	for _, f := range message(2, 500, 2*chunkFrames) {
		h.rs.Send(f)
	}
	if log := h.takeLog(); log[len(log)-1].rail != 1-log[0].rail {
		t.Fatal("second chunk not on the other rail after the repair")
	}
}

// TestRailsSuspect: a rail on which the peer stops answering while it
// answers on the other is suspected (no more traffic to that peer), a
// probe copy goes out on it, and any frame from the peer on it brings it
// back.
func TestRailsSuspect(t *testing.T) {
	h := newRailsHarness(t, macA)
	send := func(seq uint32) {
		for _, f := range message(2, seq, 2*chunkFrames) {
			if err := h.rs.Send(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	ackOn := func(rail int) { h.rs.heard(rail, frame(wire.TypeAck, 1, 2, 0, 0, 0, 0, 0), h.now) }
	send(0)
	h.takeLog()
	// Answers on both rails: nothing suspect.
	h.now += 20 * time.Millisecond
	ackOn(0)
	ackOn(1)
	h.rs.maintain(h.now)
	if p := h.rs.peer(2); p.suspect != 0 {
		t.Fatalf("suspect %b", p.suspect)
	}
	// Only rail 0 answers from now on.
	send(1000)
	h.now += 5 * time.Millisecond
	for i := 0; i < evidenceAcks; i++ {
		ackOn(0) // too early to count
	}
	h.now += evidenceWait
	h.rs.maintain(h.now)
	if p := h.rs.peer(2); p.suspect != 0 {
		t.Fatalf("suspect %b after answers within evidenceWait", p.suspect)
	}
	for i := 0; i < evidenceAcks; i++ {
		ackOn(0)
	}
	h.now += maintEvery
	h.rs.maintain(h.now)
	// Rail 1 carried frames (a chunk of each message) and stayed silent.
	const bad, good = 1, 0
	p := h.rs.peer(2)
	if p.suspect != 1<<bad || h.rs.st.suspicions != 1 {
		t.Fatalf("suspect %b suspicions %d", p.suspect, h.rs.st.suspicions)
	}
	h.takeLog()
	// Every frame to the peer avoids the suspect rail now.
	send(2000)
	for _, rec := range h.takeLog() {
		if rec.rail != good {
			t.Fatalf("frame on suspect rail %d", rec.rail)
		}
	}
	// A probe (a copy of a recent frame) goes out on the suspect rail.
	h.now += probeEvery
	h.rs.maintain(h.now)
	log := h.takeLog()
	if len(log) != 1 || log[0].rail != bad || wire.Ethernet(log[0].frame).Dst() != macB[bad] || h.rs.st.probes != 1 {
		t.Fatalf("probe: %d frames sent (%v), probes %d", len(log), log, h.rs.st.probes)
	}
	// An answer on it revives it.
	ackOn(bad)
	if p.suspect != 0 || h.rs.st.revivals != 1 {
		t.Fatalf("suspect %b revivals %d after an answer", p.suspect, h.rs.st.revivals)
	}
	// The last working rail is never suspected.
	p.suspect = 1 << bad
	h.rs.suspectRail(p, good)
	if p.suspect != 1<<bad {
		t.Fatalf("suspect %b: both rails", p.suspect)
	}
}

// TestRailsSilence: a rail on which the peer answers nothing for
// silence while frames keep going out on it is suspected; a rail that
// merely stopped carrying frames is not.
func TestRailsSilence(t *testing.T) {
	h := newRailsHarness(t, macA)
	f := message(2, 0, 1)[0]
	h.rs.Send(f)
	r := h.takeLog()[0].rail
	h.rs.maintain(h.now)
	// Idle for long: no conclusion.
	h.now += 2 * silence
	h.rs.maintain(h.now)
	if p := h.rs.peer(2); p.suspect != 0 || p.txSince[r] != 0 {
		t.Fatalf("idle rail: suspect %b txSince %d", p.suspect, p.txSince[r])
	}
	// Retransmissions keep going out without an answer.
	for i := 0; i < 4; i++ {
		h.rs.Send(f)
		h.now += silence / 3
		h.rs.maintain(h.now)
	}
	if p := h.rs.peer(2); p.suspect != 1<<r {
		t.Fatalf("silent rail %d: suspect %b", r, p.suspect)
	}
	h.takeLog()
	h.rs.Send(f)
	if got := h.takeLog()[0].rail; got == r {
		t.Fatal("frame still on the silent rail")
	}
}

// TestRailsMerge: drain hands the engine the frames of both rings in
// stream order, reading a ring again as soon as its full batch is
// consumed, and keeps the order of each ring for other frames.
func TestRailsMerge(t *testing.T) {
	h := newRailsHarness(t, macA)
	// A stream of 300 frames striped in chunks of 32 over the two rings
	// (each ring holds more than one batch), plus acks of another stream.
	var want []uint32
	for seq := uint32(0); seq < 300; seq++ {
		f := frame(wire.TypeDataMiddle, 1, 2, 0, seq, 1<<20, seq*testSeg, testSeg)
		r := int(seq/32) % 2
		h.links[r].rx = append(h.links[r].rx, f)
		want = append(want, seq)
		if seq%50 == 0 {
			h.links[1-r].rx = append(h.links[1-r].rx, frame(wire.TypeAck, 1, 2, 0, 0, 0, 0, 0))
		}
		if seq%3 == 0 {
			// Another stream (source port 3), on ring 1 only.
			f := frame(wire.TypeData, 1, 2, 0, 5000+seq, 10, 0, 10)
			wire.FrameHeader(f).SetSourcePort(3)
			h.links[1].rx = append(h.links[1].rx, f)
		}
	}
	got, all := h.rs.Drain(h.now)
	if !all || got != 300+6+100 {
		t.Fatalf("drain = %d, %v", got, all)
	}
	var seqs []uint32
	other := uint32(5000)
	for _, f := range h.eng.in {
		switch {
		case wire.FrameHeader(f).Type() == wire.TypeAck:
		case wire.FrameHeader(f).SourcePort() == 3:
			if seqOf(f) != other {
				t.Fatalf("second stream: seq %d, want %d", seqOf(f), other)
			}
			other += 3
		default:
			seqs = append(seqs, seqOf(f))
		}
	}
	for i := range want {
		if seqs[i] != want[i] {
			t.Fatalf("frame %d to the engine has seq %d, want %d (%v)", i, seqs[i], want[i], seqs[:i+1])
		}
	}
	if h.eng.pumps < 300/pumpEvery {
		t.Fatalf("%d pumps for %d frames", h.eng.pumps, got)
	}
	// Every frame was accounted as heard on its rail.
	if p := h.rs.peer(2); p.unanswered[0] == 0 || p.unanswered[1] == 0 {
		t.Fatalf("unanswered %v", p.unanswered[:2])
	}
}

// TestRailsSlots: frames built in place in a slot of the predicted rail
// are moved to their own rail's ring when needed, and a run on one rail
// is kicked before the next run on another starts.
func TestRailsSlots(t *testing.T) {
	h := newRailsHarness(t, macA)
	fs := message(2, 0, 2*chunkFrames)
	// Every other frame is committed with TxCommitNext, whose slot the
	// next frame is built in (TxCommit and TxSlot: the links of the
	// harness have no TxCommitNext).
	var next []byte
	for i, f := range fs {
		s := next
		if s == nil {
			s = h.rs.TxSlot()
		}
		if s == nil {
			t.Fatal("no slot")
		}
		var err error
		if next = nil; i%2 == 0 {
			next, err = h.rs.TxCommitNext(copy(s, f))
			if next == nil && err == nil {
				t.Fatal("TxCommitNext lent no slot")
			}
		} else {
			err = h.rs.TxCommit(copy(s, f))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := h.rs.Flush(); err != nil {
		t.Fatal(err)
	}
	log := h.takeLog()
	if len(log) != len(fs) {
		t.Fatalf("%d frames sent", len(log))
	}
	for i, rec := range log {
		if seqOf(rec.frame) != uint32(i) || rec.rail != (log[0].rail+i/chunkFrames)%2 || wire.Ethernet(rec.frame).Src() != macA[rec.rail] {
			t.Fatalf("frame %d: seq %d rail %d", i, seqOf(rec.frame), rec.rail)
		}
	}
	if h.rs.st.moved == 0 {
		t.Fatal("no frame moved to its rail")
	}
}

// TestSetOfOneTxCommitNext: a set of one commits a frame built in place
// and lends the next slot with one call of its link's TxCommitNext (one
// lock round trip on a link.Link).
func TestSetOfOneTxCommitNext(t *testing.T) {
	fs := message(2, 0, 3)
	var log []txRecord
	l := &fakeLink{mac: macA[0], log: &log}
	s := New([]link.Endpoint{l})
	slot := s.TxSlot()
	for _, f := range fs {
		wire.Ethernet(f).SetSrc(macA[0])
		var err error
		if slot, err = s.TxCommitNext(copy(slot, f)); err != nil || slot == nil {
			t.Fatalf("TxCommitNext = %v, %v", slot, err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(log) != len(fs) || l.nexts != len(fs) {
		t.Fatalf("%d frames sent, %d TxCommitNext calls of the link", len(log), l.nexts)
	}
	for i, rec := range log {
		if !bytes.Equal(rec.frame, fs[i]) {
			t.Fatalf("frame %d changed on its way", i)
		}
	}
}

// TestSetOfOne: a set of one rail is the ordinary case of the set: it
// hands frames to its link with the destination the engine wrote (the MAC
// Resolve gave) and its own MAC as the source, drains the ring in batches
// with a Pump after each full one, sleeps until a frame arrives (the next
// Drain reads it), and uses its link whatever the link's state (it reports
// the rail down when the interface is).
func TestSetOfOne(t *testing.T) {
	var log []txRecord
	l := &fakeLink{mac: macA[0], log: &log, running: false}
	s := New([]link.Endpoint{l})
	eng := &fakeEngine{}
	s.Attach(eng, func() time.Duration { return time.Second })
	m, err := nodemap.New(0, [6]byte{}, []nodemap.Entry{{ID: 1, Host: "a", MACs: macA[:1]}, {ID: 2, Host: "b", MACs: macB}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.SetMap(m, 1)
	if s.Len() != 1 || s.MTU() != testMTU || s.MACs()[0] != macA[0] {
		t.Fatalf("Len %d MTU %d MACs %x", s.Len(), s.MTU(), s.MACs())
	}
	// The frames carry whatever destination the engine wrote.
	fs := message(2, 0, 3)
	for _, f := range fs {
		wire.Ethernet(f).SetDst([6]byte{9, 9, 9, 9, 9, 9})
		wire.Ethernet(f).SetSrc(macA[0])
	}
	if err := s.Send(fs[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SendBatch(fs[1:]); n != 2 || err != nil {
		t.Fatalf("SendBatch = %d, %v", n, err)
	}
	slot := s.TxSlot()
	if err := s.TxCommit(copy(slot, fs[2])); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(log) != 4 {
		t.Fatalf("%d frames sent, want 4", len(log))
	}
	for i, rec := range log {
		if !bytes.Equal(rec.frame, fs[min(i, 2)]) {
			t.Fatalf("frame %d changed on its way: %x", i, rec.frame[:12])
		}
	}
	// Drain: 150 frames, in two full batches and a partial one.
	for seq := uint32(0); seq < 150; seq++ {
		l.rx = append(l.rx, frame(wire.TypeDataMiddle, 1, 2, 0, seq, 1<<20, seq*testSeg, testSeg))
	}
	if got, all := s.Drain(time.Second); got != 150 || !all || len(eng.in) != 150 || eng.pumps != 2 {
		t.Fatalf("Drain = %d, %v: %d frames in, %d pumps", got, all, len(eng.in), eng.pumps)
	}
	for i, f := range eng.in {
		if seqOf(f) != uint32(i) {
			t.Fatalf("frame %d has seq %d", i, seqOf(f))
		}
	}
	// Wait returns (it reads nothing), the next Drain reads.
	l.rx = append(l.rx, frame(wire.TypeAck, 1, 2, 0, 0, 0, 0, 0))
	if err := s.Wait(time.Millisecond); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	if len(eng.in) != 150 {
		t.Fatalf("Wait read %d frames", len(eng.in)-150)
	}
	if got, all := s.Drain(time.Second); got != 1 || !all || len(eng.in) != 151 {
		t.Fatalf("Drain after Wait = %d, %v: %d frames in", got, all, len(eng.in))
	}
	// The link is down: the rail says so, and carried every frame.
	st := s.Stats()
	s.State(st)
	if len(st) != 1 || !st[0].Down || st[0].Interface != "fake" || st[0].Link.TxFrames != 4 || s.LinkStats().TxFrames != 4 {
		t.Fatalf("stats %+v", st)
	}
}

// TestSetAddresses: the set resolves nodes to MACs and lists the MACs
// their frames may come from, from the map SetMap gave: a new map changes
// both, and the rails' routing, at once.
func TestSetAddresses(t *testing.T) {
	h := newRailsHarness(t, macA)
	resolve := func(node uint32) ([6]byte, bool) {
		t.Helper()
		return h.rs.Resolve(node)
	}
	if mac, ok := resolve(1); !ok || mac != macA[0] {
		t.Fatalf("self resolves to %x, %v", mac, ok)
	}
	if mac, ok := resolve(2); !ok || mac != macB[0] {
		t.Fatalf("node 2 resolves to %x, %v", mac, ok)
	}
	if _, ok := resolve(9); ok {
		t.Fatal("a node outside the map resolves")
	}
	var src [16][6]byte
	if n := h.rs.Sources(1, src[:]); n != 2 || src[0] != macA[0] || src[1] != macA[1] {
		t.Fatalf("own sources %x", src[:n])
	}
	if n := h.rs.Sources(2, src[:]); n != 2 || src[0] != macB[0] || src[1] != macB[1] {
		t.Fatalf("sources of node 2: %x", src[:n])
	}
	if n := h.rs.Sources(9, src[:]); n != 0 {
		t.Fatalf("sources of an unknown node: %x", src[:n])
	}
	// Node 2 changes its first MAC, node 3 leaves.
	newB := [6]byte{2, 0, 0, 0, 9, 0}
	m, err := nodemap.New(0, [6]byte{}, []nodemap.Entry{
		{ID: 1, Host: "a", MACs: macA},
		{ID: 2, Host: "b", MACs: [][6]byte{newB, macB[1]}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.rs.SetMap(m, 1)
	if mac, ok := resolve(2); !ok || mac != newB {
		t.Fatalf("after the change node 2 resolves to %x, %v", mac, ok)
	}
	if _, ok := resolve(3); ok {
		t.Fatal("node 3 resolves after leaving the map")
	}
	if n := h.rs.Sources(2, src[:]); n != 2 || src[0] != newB {
		t.Fatalf("sources of node 2 after the change: %x", src[:n])
	}
	for _, f := range message(2, 0, 2*chunkFrames) {
		if err := h.rs.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range h.takeLog() {
		want := [][6]byte{newB, macB[1]}[rec.rail]
		if d := wire.Ethernet(rec.frame).Dst(); d != want {
			t.Fatalf("frame on rail %d to %x, want %x", rec.rail, d, want)
		}
	}
}
