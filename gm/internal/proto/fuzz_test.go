package proto

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

// The engine fuzz target. A small world on a simnet (in order, lossless
// unless the input says otherwise):
//
//	a  node 1 port 2   peer of b; registered regions, remote access allowed
//	c  node 1 port 3   second port on a's host (same MAC)
//	b  node 2 port 2   registered regions, remote access allowed (or not)
//
// is set up with buffers of several size classes and both priorities and
// with traffic in both directions (sends of several sizes, puts and a get
// each way, a send from c), then run for a number of steps the input
// chooses, so that receive streams, reassembly, transfers, get-reply
// records and send streams all hold state. The rest of the input is a
// program of operations on the target (b, or a): hostile frames built
// from fields (with a valid CRC, so that they pass every check of the link
// and of wire.ParseFrame), where a zero byte picks the choice closest to a
// legitimate frame of a live stream (see craft); legitimate frames
// (queued or already delivered) mutated or replayed; raw bytes; delivery,
// loss and reordering of the engines' own frames; ticks at advancing
// virtual times; and application calls (events, completions, sends, puts,
// gets, Resume, Drop, Close, regions, buffers).
//
// Invariants: nothing panics; afterwards every engine can still be driven
// (Tick, Pump, PopEvent, PopCompletion, Dump); and fresh traffic still
// flows: a new node (fuzzCheckNode, which no hostile frame names) delivers
// a message to a and to b, b delivers one to c over a stream of its own
// (resumed if it failed), and b delivers one to a over the attacked stream
// once its backlog is gone (dropped with Drop if the stream failed).

// fuzzCheckNode is the node of the engine that checks, at the end, that
// the targets still receive. Hostile frames never come from it.
const fuzzCheckNode = 7

// fuzzCheckSize is the size class of the check messages; no other traffic
// uses it, so the buffers provided for them are theirs.
const fuzzCheckSize = 9

// fuzzTokenReserve is how many send tokens the application calls of the
// input leave free, so that the check at the end can drop and send.
const fuzzTokenReserve = 8

// fuzzIn reads the fuzz input; past its end it returns zeros.
type fuzzIn struct {
	b []byte
	i int
}

func (f *fuzzIn) more() bool { return f.i < len(f.b) }

func (f *fuzzIn) u8() uint8 {
	if f.i >= len(f.b) {
		return 0
	}
	v := f.b[f.i]
	f.i++
	return v
}

func (f *fuzzIn) u16() uint16 { return uint16(f.u8())<<8 | uint16(f.u8()) }
func (f *fuzzIn) u32() uint32 { return uint32(f.u16())<<16 | uint32(f.u16()) }
func (f *fuzzIn) u64() uint64 { return uint64(f.u32())<<32 | uint64(f.u32()) }

// delta returns a small signed offset.
func (f *fuzzIn) delta() uint32 { return uint32(int32(int8(f.u8()))) }

// take returns up to n bytes of the input.
func (f *fuzzIn) take(n int) []byte {
	n = min(n, len(f.b)-f.i)
	v := f.b[f.i : f.i+n]
	f.i += n
	return v
}

type fuzzWorld struct {
	t       *testing.T
	n       *simnet
	a, b, c *Engine
	ptrA    uint64 // a's region
	ptrA2   uint64 // a's second region (replaced by an application call)
	ptrB    uint64
	ptrB2   uint64
	hist    [][]byte // legitimate frames delivered, newest last (bounded)
}

// fuzzBufs are the (size, priority) pools provided on a, b and c: three
// buffers each.
var fuzzBufs = []struct{ size, pri uint8 }{
	{3, 0}, {5, 0}, {5, 1}, {7, 0}, {8, 0}, {8, 1}, {10, 1}, {11, 0}, {12, 0},
}

func (w *fuzzWorld) provide(e *Engine) {
	for _, p := range fuzzBufs {
		for i := 0; i < 3; i++ {
			if err := e.Provide(make([]byte, token.MaxLengthForSize(p.size)), p.size, p.pri, p.size); err != nil {
				w.t.Fatal(err)
			}
		}
	}
	// A buffer shorter than its size class allows.
	if err := e.Provide(make([]byte, 50), 8, 0, 1); err != nil {
		w.t.Fatal(err)
	}
}

func newFuzzWorld(t *testing.T, in *fuzzIn) *fuzzWorld {
	cfgSel := in.u8()
	n := newSimnet(t, 1)
	if cfgSel&1 != 0 {
		n.slots = 4 // zero copy through a small ring whose kicks sometimes fail
	}
	window := [4]int{0, 4, 16, 64}[cfgSel>>1&3]
	mod := func(c *Config) {
		c.Window = window
		c.AnswerClosed = func(p uint8) bool { return p == 5 }
	}
	w := &fuzzWorld{t: t, n: n}
	w.a = n.add(1, 2, mod)
	w.b = n.add(2, 2, mod)
	w.c = n.add(1, 3, mod)
	var err error
	memA, memB := pattern(4096, 1), pattern(4096, 2)
	if w.ptrA, err = w.a.RegisterMemory(memA); err != nil {
		t.Fatal(err)
	}
	if w.ptrB, err = w.b.RegisterMemory(memB); err != nil {
		t.Fatal(err)
	}
	if w.ptrB2, err = w.b.RegisterMemory(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if w.ptrA2, err = w.a.RegisterMemory(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	w.a.AllowRemoteAccess()
	if cfgSel&8 == 0 {
		w.b.AllowRemoteAccess()
	}
	w.provide(w.a)
	w.provide(w.b)
	w.provide(w.c)

	now := n.now
	// a -> b
	_ = w.a.Send(now, nil, 3, 0, 0, 2, 2, nil, nil)
	_ = w.a.Send(now, pattern(20, 3), 5, 20, 1, 2, 2, nil, nil)
	_ = w.a.Send(now, pattern(200, 4), 8, 200, 0, 2, 2, nil, nil)
	_ = w.a.Put(now, pattern(2500, 5), w.ptrB+100, 2500, 0, 2, 2, nil, nil)
	_ = w.a.Put(now, pattern(300, 13), w.ptrB+2000, 300, 0, 2, 2, nil, nil) // overlaps the first
	_ = w.a.Send(now, pattern(3000, 6), 12, 3000, 0, 2, 2, nil, nil)
	_ = w.a.Get(now, w.ptrB+50, make([]byte, 1500), 1500, 1, 2, 2, nil, nil)
	_ = w.a.Send(now, pattern(1000, 7), 10, 1000, 1, 2, 2, nil, nil)
	_ = w.c.Send(now, pattern(150, 8), 8, 150, 0, 2, 2, nil, nil)
	// b -> a
	_ = w.b.Send(now, pattern(100, 9), 7, 100, 0, 1, 2, nil, nil)
	_ = w.b.Get(now, w.ptrA+1000, make([]byte, 1200), 1200, 0, 1, 2, nil, nil)
	_ = w.b.Send(now, pattern(1500, 10), 11, 1500, 0, 1, 2, nil, nil)
	_ = w.b.Put(now, pattern(500, 11), w.ptrA, 500, 1, 1, 2, nil, nil)
	_ = w.b.Send(now, pattern(20, 12), 5, 20, 1, 1, 2, nil, nil)

	for k := int(in.u8()); k > 0; k-- {
		if !w.step() {
			break
		}
	}
	return w
}

// step delivers the next legitimate frame (or runs the next timer),
// remembering the frame for replays.
func (w *fuzzWorld) step() bool {
	if len(w.n.queue) > 0 {
		if len(w.hist) == 64 {
			w.hist = append(w.hist[:0], w.hist[32:]...)
		}
		w.hist = append(w.hist, w.n.queue[0])
	}
	return w.n.step()
}

func (w *fuzzWorld) engines() []*Engine { return []*Engine{w.a, w.b, w.c} }

func streamsOf(e *Engine, node uint32, port, pri uint8) (*rxStream, *txStream) {
	if int(node) >= len(e.peers) || e.peers[node] == nil || port >= wire.NumPorts || pri >= numStreams {
		return nil, nil
	}
	p := e.peers[node]
	return p.rx[port][pri], p.tx[port][pri]
}

// fuzzTypes are the frame types craft chooses from (index 0: the data
// type that fits the frame's place in its message).
var fuzzTypes = []wire.Type{
	0, wire.TypeData, wire.TypeDataFirst, wire.TypeDataMiddle, wire.TypeDataLast,
	wire.TypeAck, wire.TypeNack, wire.TypePut, wire.TypeGet, wire.TypeGot,
	wire.TypeDatagram, wire.TypeScout, wire.TypeOpen, wire.TypeOpenAck,
}

// formulaSeq is the initial sequence number a session had before the
// session handshake (session * 0x9E3779B1): what a forger who read an old
// version of the protocol would try.
func formulaSeq(sess uint32) uint32 { return sess * 0x9E3779B1 }

// craft builds a hostile frame for target (whose legitimate peer on the
// same ports is node peer) from the input. Each field takes one or a few
// input bytes; a zero byte selects the choice closest to a legitimate
// frame (the stream's live session, the frame that fits the stream's next
// expected place, a size class with a free buffer, the region's pointer),
// others stray from it: other places and segment lengths, nudged or
// arbitrary values, edge sizes.
func (w *fuzzWorld) craft(in *fuzzIn, target *Engine, peer uint32) []byte {
	var h wire.HeaderFields
	if k := int(in.u8()) % (len(fuzzTypes) + 1); k < len(fuzzTypes) {
		h.Type = fuzzTypes[k]
	} else {
		h.Type = wire.Type(in.u8()) // anything, valid or not
	}
	sel := in.u8()
	switch sel & 7 {
	case 0, 1, 2, 3:
		h.SourceNode = peer
	case 4:
		h.SourceNode = 3 // a node nobody runs
	case 5:
		h.SourceNode = 0
	case 6:
		h.SourceNode = uint32(in.u8())
	case 7:
		h.SourceNode = [4]uint32{maxNodes - 1, maxNodes, ^uint32(0), in.u32()}[in.u8()&3]
	}
	if h.SourceNode == fuzzCheckNode {
		h.SourceNode++
	}
	switch sel >> 3 & 3 {
	case 0, 1:
		h.SourcePort = 2
	case 2:
		h.SourcePort = 3
	case 3:
		h.SourcePort = in.u8()
	}
	h.TargetNode = target.cfg.NodeID
	h.TargetPort = target.cfg.Port
	switch sel >> 5 {
	case 5:
		h.TargetPort = 5 // answered as closed
	case 6:
		h.TargetPort = in.u8()
	case 7:
		h.TargetNode = in.u32()
	}
	fl := in.u8()
	h.Flags = wire.Flags(fl & 0x0F)
	if fl&0x10 != 0 {
		h.Flags |= wire.Flags(in.u16())
	}
	if fl&0x20 != 0 {
		h.Flags |= wire.FlagReply // the reply stream (reply.go)
	}
	if fl&0x40 != 0 {
		h.Flags |= wire.FlagSepReply
	}
	pri := framePri(h.Flags)
	rs, ts := streamsOf(target, h.SourceNode, h.SourcePort, pri)
	ctl := h.Type == wire.TypeAck || h.Type == wire.TypeNack

	// Session: the live one of the stream the frame belongs to (the send
	// stream for ACK and NACK), of the other direction, a fresh or a
	// retired one, or anything.
	switch ms := in.u8(); ms % 5 {
	case 0, 1:
		live := rs != nil && rs.valid
		if ctl == (ms == 0) {
			live = ts == nil && live
		}
		if live {
			h.Session = rs.session
		} else if ts != nil {
			h.Session = ts.session
		} else {
			h.Session = in.u32() | 1
		}
	case 2:
		h.Session = in.u32() | 1
	case 3:
		// A session the stream left, or the one it confirmed and waits
		// for.
		if rs != nil && rs.pendSess != 0 && ms&8 != 0 {
			h.Session = rs.pendSess
		} else if rs != nil {
			h.Session = rs.retired[0].sess
		}
	case 4:
		h.Session = in.u32()
	}
	fresh := rs == nil || !rs.valid || rs.session != h.Session

	seg := uint32(target.cfg.SegLen)
	if h.Type.HasRemoteAddr() {
		seg -= wire.RemoteAddrLen
	} else if rs != nil && rs.segLen > 0 {
		seg = rs.segLen
	}
	// The place of the frame: k frames into a message that starts where
	// the stream accepts one, or (odd pm) free.
	pm := in.u8()
	var m *rxMsg
	first := formulaSeq(h.Session) // the session's first sequence number, as far as known
	if rs != nil && rs.pendSess != 0 && h.Session == rs.pendSess {
		first = rs.pendSeq
	}
	base := first
	if !fresh {
		base = rs.rcvNxt
	}
	switch pm >> 1 & 3 {
	case 1:
		if rs != nil && rs.mLen > 0 {
			last := &rs.msgs[(rs.mHead+rs.mLen-1)%rxMsgs]
			base = last.start + last.nseg
		}
	case 2:
		if rs != nil && rs.mLen > 0 {
			m = &rs.msgs[(rs.mHead+int(in.u8())%rs.mLen)%rxMsgs]
			base = m.start
			if m.segLen > 0 {
				seg = m.segLen
			}
		}
	case 3:
		base = first
	}
	switch pm >> 3 & 3 {
	case 1:
		seg = uint32(target.cfg.SegLen)
	case 2:
		seg = uint32(target.cfg.SegLen) - wire.RemoteAddrLen
	case 3:
		seg = uint32(in.u8()) + 1
	}
	k := uint32(in.u8() & 31)
	if ctl && ts != nil {
		base, k = ts.una, 0
		if pm&0x40 != 0 {
			base = ts.hiSent
		}
	}
	h.Seq = base + k
	h.Offset = k * seg

	// Size class: one with a free buffer of the frame's priority, the
	// message's, or one of the edge values.
	sizes := [...]uint8{0, 2, 3, 4, 5, 7, 8, 10, 11, 12, 31, 32, 0xFF, in.u8()}
	if sb := in.u8(); sb != 0 {
		h.Size = sizes[int(sb-1)%len(sizes)]
	} else if m != nil && m.kind == 0 {
		h.Size = m.size
	} else {
		var free []uint8
		for _, b := range fuzzBufs {
			if b.pri == pri && target.pools.Len(pri, b.size) > 0 {
				free = append(free, b.size)
			}
		}
		h.Size = 8
		if len(free) > 0 {
			h.Size = free[int(in.u8())%len(free)]
		}
	}
	// Message length: j segments + r, the message's, or an edge value.
	lens := [...]uint32{
		0, 1, seg - 1, seg, seg + 1, 150, 1500, 3000,
		uint32(token.MaxLengthForSize(h.Size)), uint32(token.MaxLengthForSize(h.Size)) + 1,
		^uint32(0), 1 << 31, 1<<31 - 8, uint32(in.u16()), in.u32(),
	}
	if mb := in.u8(); mb != 0 {
		h.MsgLen = lens[int(mb-1)%len(lens)]
	} else if m != nil {
		h.MsgLen = m.msgLen
	} else {
		nb := in.u8()
		h.MsgLen = uint32(max(0, int(nb&7)*int(seg)+int(nb>>3&3)-1))
		if nb&0x80 != 0 {
			h.MsgLen = min(h.MsgLen, uint32(token.MaxLengthForSize(h.Size)))
		}
	}
	// Payload length: what the frame's place leaves of the message.
	plen := int(seg)
	if h.Offset < h.MsgLen {
		plen = int(min(h.MsgLen-h.Offset, seg))
	}
	if h.Type == wire.TypeGet {
		h.Offset, plen = 0, wire.RemoteAddrLen
	}
	if h.Type == 0 {
		nseg := (uint64(h.MsgLen) + uint64(seg) - 1) / uint64(seg)
		switch {
		case nseg <= 1 && k == 0:
			h.Type = wire.TypeData
		case k == 0:
			h.Type = wire.TypeDataFirst
		case uint64(k) == nseg-1:
			h.Type = wire.TypeDataLast
		default:
			h.Type = wire.TypeDataMiddle
		}
	}
	if pm&1 != 0 {
		// Free: the fields stray from the frame's place.
		switch d := in.delta(); pm >> 5 {
		case 0:
			h.Seq += d
		case 1:
			h.Offset += d
		case 2:
			plen = max(0, plen+int(int32(d)))
		case 3:
			h.MsgLen += d
		case 4:
			h.Seq += uint32(in.u16())
		case 5:
			h.Offset = in.u32()
		case 6:
			h.Seq = in.u32()
		case 7:
			plen = [...]int{0, 1, 8, 91, 92, 99, 100, 101, 1500, 2100}[d%10]
		}
	}
	plen = min(plen, 2100)
	ma := in.u8()
	switch ma & 3 {
	case 0:
		if ts != nil {
			h.Ack = ts.una - 1 + in.delta()
		}
	case 1:
		if ts != nil {
			h.Ack = ts.hiSent - 1 + in.delta()
		}
	case 2:
		if rs != nil && h.Type == wire.TypeOpen {
			h.Ack = rs.session // the OPEN names the session the stream follows
		} else if rs != nil {
			h.Ack = rs.rcvNxt - 1
		}
	case 3:
		h.Ack = in.u32()
	}
	h.Status = [8]uint8{1, 2, 3, 4, 0, 5, 0xFF, in.u8()}[ma>>2&7]

	if h.Type.HasRemoteAddr() {
		var getID uint64 // the target's oldest pending get
		if rd := target.rdma; rd != nil {
			for id := range rd.gets {
				if getID == 0 || uint64(id) < getID {
					getID = uint64(id)
				}
			}
		}
		ptr, ptr2 := w.ptrB, w.ptrB2
		if target == w.a {
			ptr, ptr2 = w.ptrA, w.ptrA2
		}
		switch ra := in.u8(); ra & 15 {
		case 0:
			switch {
			case m != nil && m.kind != 0 && target.rdma != nil && m.slot < len(target.rdma.rx):
				h.RemoteAddr = target.rdma.rx[m.slot].raddr
			case h.Type == wire.TypeGot:
				h.RemoteAddr = getID << RegionShift
			default:
				h.RemoteAddr = ptr + uint64(in.u8())
			}
		case 1:
			h.RemoteAddr = ptr + 4096 - uint64(in.u8())
		case 2:
			h.RemoteAddr = ptr | offMask
		case 3:
			h.RemoteAddr = ptr2 + uint64(in.u8())
		case 4:
			h.RemoteAddr = getID<<RegionShift + uint64(in.u8())
		case 5:
			h.RemoteAddr = 0
		case 6:
			h.RemoteAddr = uint64(in.u32()) << RegionShift
		case 7:
			h.RemoteAddr = ptr + uint64(in.u16()%4200)
		default:
			h.RemoteAddr = in.u64()
		}
	}
	// The payload: a few input bytes, repeated; a GET's is a pointer into
	// the requester's memory.
	payload := make([]byte, plen)
	if seed := in.take(int(in.u8() % 9)); len(seed) > 0 {
		for i := range payload {
			payload[i] = seed[i%len(seed)]
		}
	}
	if h.Type == wire.TypeGet && plen >= 8 {
		binary.BigEndian.PutUint64(payload, w.ptrA+uint64(in.u8()))
	}
	src := mac(int(h.SourceNode))
	if h.SourceNode > 255 {
		src = mac(0x42)
	}
	return wire.AppendFrame(nil, target.cfg.MAC, src, target.cfg.EtherType, &h, payload)
}

// mutate returns a copy of a legitimate frame (queued or already
// delivered) with one field changed, its CRC updated.
func (w *fuzzWorld) mutate(in *fuzzIn) []byte {
	pool := len(w.n.queue) + len(w.hist)
	if pool == 0 {
		return nil
	}
	k := int(in.u16()) % pool
	var f []byte
	if k < len(w.n.queue) {
		f = bytes.Clone(w.n.queue[k])
		if in.u8()&1 != 0 {
			// Lost in favour of its mutation.
			w.n.queue = append(w.n.queue[:k], w.n.queue[k+1:]...)
		}
	} else {
		f = bytes.Clone(w.hist[k-len(w.n.queue)])
	}
	h := wire.Header(f[wire.EthHeaderLen:])
	fields := []struct{ off, n int }{
		{wire.OffType, 1}, {wire.OffTargetPort, 1}, {wire.OffSourcePort, 1}, {wire.OffFlags, 2},
		{wire.OffSize, 1}, {wire.OffStatus, 1}, {wire.OffTargetNode, 4}, {wire.OffSourceNode, 4},
		{wire.OffSession, 4}, {wire.OffSeq, 4}, {wire.OffAck, 4}, {wire.OffMsgLen, 4},
		{wire.OffOffset, 4}, {wire.OffPayloadLen, 2}, {wire.OffRemoteAddr, 8}, {wire.HeaderLen, 1},
	}
	for r := in.u8()&3 + 1; r > 0; r-- {
		fd := fields[int(in.u8())%len(fields)]
		if fd.off+fd.n > len(h) {
			continue
		}
		b := h[fd.off : fd.off+fd.n]
		switch m := in.u8(); m & 3 {
		case 0: // small increment of the last byte's word
			v := uint64(0)
			for _, x := range b {
				v = v<<8 | uint64(x)
			}
			v += uint64(int64(int8(m)) >> 2)
			for i := len(b) - 1; i >= 0; i-- {
				b[i] = byte(v)
				v >>= 8
			}
		case 1:
			b[len(b)-1] ^= 1 << (m >> 2 & 7)
		default:
			copy(b, in.take(len(b)))
		}
	}
	if sn := h.SourceNode(); sn == fuzzCheckNode {
		h.SetSourceNode(sn + 1)
	}
	if cut := int(in.u8() & 0x3F); cut > 0 && in.u8()&1 != 0 && cut < len(f) {
		f = f[:len(f)-cut]
	}
	if len(h) >= wire.HeaderLen {
		h.UpdateCRC()
	}
	return f
}

// inject gives frame f to every engine whose MAC it is addressed to.
func (w *fuzzWorld) inject(f []byte) {
	if len(f) < 6 {
		return
	}
	if h, err := wire.ParseFrame(f, wire.EtherType); err == nil && h.SourceNode() == fuzzCheckNode {
		return
	}
	for _, e := range w.engines() {
		if e.cfg.MAC == [6]byte(f[0:6]) {
			e.Input(w.n.now, f)
		}
	}
}

var fuzzTicks = [8]time.Duration{0, time.Microsecond, 50 * time.Microsecond, time.Millisecond,
	5 * time.Millisecond, 30 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond}

// app runs an application call on e, whose peer is (node, port 2).
func (w *fuzzWorld) app(in *fuzzIn, e *Engine, node uint32) {
	now := w.n.now
	op := in.u8()
	pri := op >> 7
	if op&15 >= 2 && op&15 <= 6 && e.SendTokens().Free() <= fuzzTokenReserve {
		return // the check at the end needs some
	}
	ptr := w.ptrA // the peer's region
	if e == w.a {
		ptr = w.ptrB
	}
	switch op & 15 {
	case 0:
		var ev Event
		for e.PopEvent(&ev) {
			if ev.Type != EventSentTokens && ev.Buffer != nil && op&0x10 == 0 {
				_ = e.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag)
			}
		}
	case 1:
		for {
			if _, _, _, ok := e.PopCompletion(); !ok {
				break
			}
		}
	case 2:
		_ = e.Resume(now, pri, node, 2, nil, nil)
	case 3:
		_ = e.Drop(now, pri, node, 2, nil, nil)
	case 4:
		l := int(in.u8())
		_ = e.Send(now, pattern(l, l), 8, l, pri, node, 2, nil, nil)
	case 5:
		l := int(in.u16() % 400)
		_ = e.Put(now, pattern(l, 1), ptr+uint64(in.u8()), l, pri, node, 2, nil, nil)
	case 6:
		l := int(in.u16() % 400)
		_ = e.Get(now, ptr+uint64(in.u8()), make([]byte, l), l, pri, node, 2, nil, nil)
	case 7:
		e.Pump(now)
	case 8:
		e.Close(now)
	case 9:
		// Replace e's second region: transfers to the old one are
		// refused, the rest of one being received is discarded.
		p2 := &w.ptrB2
		if e == w.a {
			p2 = &w.ptrA2
		}
		_ = e.DeregisterMemory(*p2)
		if p, err := e.RegisterMemory(make([]byte, 100)); err == nil {
			*p2 = p
		}
	case 10:
		if e.Pools().Tokens().Free() > 16 {
			b := fuzzBufs[int(in.u8())%len(fuzzBufs)]
			_ = e.Provide(make([]byte, int(in.u8())), b.size, b.pri, 0)
		}
	case 11:
		e.AllowRemoteAccess()
	case 12:
		var ev Event
		if e.PeekEvent() != nil {
			e.PopEvent(&ev)
		}
	}
}

// run executes the operations of the input.
func (w *fuzzWorld) run(in *fuzzIn) {
	for ops := 0; ops < 300 && in.more(); ops++ {
		op := in.u8()
		target, peer := w.b, uint32(1)
		if op&0x80 != 0 {
			target, peer = w.a, 2
		}
		switch op & 0x7F % 12 {
		case 0, 1, 2:
			f := w.craft(in, target, peer)
			target.Input(w.n.now, f)
			if op&0x40 != 0 {
				target.Tick(w.n.now)
			}
		case 3, 4:
			w.inject(w.mutate(in))
		case 5:
			f := bytes.Clone(in.take(int(in.u8())))
			if len(f) >= wire.MinFrameLen && in.u8()&1 != 0 {
				copy(f, target.cfg.MAC[:])
				binary.BigEndian.PutUint16(f[12:], wire.EtherType)
				f[wire.EthHeaderLen+wire.OffVersion] = wire.Version
			}
			w.inject(f)
		case 6:
			for k := in.u8()&15 + 1; k > 0 && w.step(); k-- {
			}
		case 7:
			w.n.now += fuzzTicks[in.u8()&7]
			for _, e := range w.engines() {
				e.Tick(w.n.now)
			}
		case 8:
			w.app(in, target, peer)
		case 9:
			// Replay a legitimate frame as it was.
			if len(w.hist) > 0 {
				w.inject(w.hist[int(in.u8())%len(w.hist)])
			}
		case 10:
			// Lose the next legitimate frame.
			if len(w.n.queue) > 0 {
				w.n.queue = w.n.queue[1:]
			}
		case 11:
			// Reorder: the next legitimate frame goes later.
			if q := w.n.queue; len(q) > 1 {
				k := 1 + int(in.u8())%(len(q)-1)
				f := q[0]
				copy(q, q[1:k+1])
				q[k] = f
			}
		}
	}
}

// drive checks that every engine still works through its whole API.
func (w *fuzzWorld) drive() {
	now := w.n.now
	for _, e := range w.engines() {
		e.Tick(now)
		e.Pump(now)
		var ev Event
		for e.PopEvent(&ev) {
		}
		for {
			if _, _, _, ok := e.PopCompletion(); !ok {
				break
			}
		}
		_ = e.Dump(now)
		_, _, _ = e.NextDeadline(), e.Busy(), e.Stats()
		_, _ = e.PendingGets(), e.Completions()
	}
}

type fuzzCheck struct{ node, port, pri int }

// check verifies that fresh traffic still flows (see the top of the
// file). It fails the test if it does not within a generous bound.
func (w *fuzzWorld) check() {
	n := w.n
	d := n.add(fuzzCheckNode, 2, nil)
	msgD := pattern(300, 70)
	msgBC := pattern(301, 71)
	msgBA := pattern(302, 72)
	for _, x := range []struct {
		e   *Engine
		pri uint8
	}{{w.a, 1}, {w.b, 0}, {w.c, 0}, {w.a, 0}} {
		if err := x.e.Provide(make([]byte, token.MaxLengthForSize(fuzzCheckSize)), fuzzCheckSize, x.pri, 99); err != nil {
			w.t.Fatal(err)
		}
	}
	if err := d.Send(n.now, msgD, fuzzCheckSize, len(msgD), 0, 2, 2, nil, nil); err != nil {
		w.t.Fatal(err)
	}
	if err := d.Send(n.now, msgD, fuzzCheckSize, len(msgD), 1, 1, 2, nil, nil); err != nil {
		w.t.Fatal(err)
	}
	var peersB []*peer // b's peers (b.peers may be long: hostile node ids)
	for _, p := range w.b.peers {
		if p != nil {
			peersB = append(peersB, p)
		}
	}
	got := map[string]int{}
	sentBA, sentBC, okBC, okBA, okD := false, false, false, false, 0
	end := n.now + 20*time.Second
	for steps := 0; ; steps++ {
		// Take every event; re-provide buffers; note the check messages.
		for _, e := range append(w.engines(), d) {
			var ev Event
			for e.PopEvent(&ev) {
				if ev.Type == EventSentTokens {
					continue
				}
				if ev.dgram {
					// A forged DATAGRAM: without a cluster key datagrams
					// carry no secret (docs/SECURITY.md), unlike messages.
					_ = e.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag)
					continue
				}
				if ev.Size == fuzzCheckSize {
					var m []byte
					if ev.FastLen > 0 {
						m = ev.Fast[:ev.FastLen]
					} else if int(ev.Length) <= len(ev.Buffer) {
						m = ev.Buffer[:ev.Length]
					}
					switch {
					case ev.SenderNode == fuzzCheckNode && bytes.Equal(m, msgD):
						okD++
					case e == w.c && ev.SenderNode == 2 && bytes.Equal(m, msgBC):
						got["bc"]++
					case e == w.a && ev.SenderNode == 2 && bytes.Equal(m, msgBA):
						got["ba"]++
					default:
						w.t.Fatalf("unexpected check message at node %d port %d from node %d: %x", e.cfg.NodeID, e.cfg.Port, ev.SenderNode, m)
					}
				}
				if ev.Buffer != nil {
					_ = e.Provide(ev.Buffer, ev.Size, ev.Priority, ev.Tag)
				}
			}
			for {
				_, ctx, st, ok := e.PopCompletion()
				if !ok {
					break
				}
				if e != w.b {
					if e == d && st != StatusSuccess {
						w.t.Fatalf("check node's send: status %d\n%s", st, n.dump())
					}
					continue
				}
				switch c, _ := ctx.(fuzzCheck); {
				case c == fuzzCheck{1, 3, 0} && st == StatusSuccess:
					okBC = true
				case c == fuzzCheck{1, 2, 0} && st == StatusSuccess:
					okBA = true
				case c == fuzzCheck{1, 3, 0}:
					sentBC = false // failed: send it again once resumed
				case c == fuzzCheck{1, 2, 0}:
					sentBA = false
				}
			}
		}
		// As an application must, release b's streams that failed: the
		// stream to c by resuming it, every other by dropping its sends.
		for _, p := range peersB {
			for port := range p.tx {
				for pri, s := range p.tx[port] {
					if s == nil || !s.disabled {
						continue
					}
					if p.node == 1 && port == 3 && pri == 0 {
						_ = w.b.Resume(n.now, 0, 1, 3, nil, nil)
					} else {
						_ = w.b.Drop(n.now, uint8(pri), p.node, uint8(port), nil, nil)
					}
				}
			}
		}
		// b -> c over a stream of its own.
		if _, s := streamsOf(w.b, 1, 3, 0); !sentBC && (s == nil || !s.disabled) {
			if err := w.b.Send(n.now, msgBC, fuzzCheckSize, len(msgBC), 0, 1, 3, nil, fuzzCheck{1, 3, 0}); err == nil {
				sentBC = true
			}
		}
		// b -> a over the attacked stream, once its backlog is gone.
		if _, s := streamsOf(w.b, 1, 2, 0); !sentBA && (s == nil || s.qLen == 0 && !s.disabled) {
			if err := w.b.Send(n.now, msgBA, fuzzCheckSize, len(msgBA), 0, 1, 2, nil, fuzzCheck{1, 2, 0}); err == nil {
				sentBA = true
			}
		}
		if okD == 2 && okBC && okBA && got["bc"] >= 1 && got["ba"] >= 1 {
			return
		}
		if n.now > end || steps > 200_000 || !w.step() {
			w.t.Fatalf("fresh traffic stuck after the hostile input (check node delivered %d/2, b->c %v/%d, b->a %v/%d)%s",
				okD, okBC, got["bc"], okBA, got["ba"], n.dump())
		}
	}
}

// fuzzEngineInput runs one input.
func fuzzEngineInput(t *testing.T, data []byte) {
	in := &fuzzIn{b: data}
	w := newFuzzWorld(t, in)
	w.run(in)
	w.drive()
	w.check()
}

// craftSeed encodes an operation that crafts a frame into b (into a if
// toA) the way craft reads it, for the stream's live session with no
// flags but fl: type index t (fuzzTypes; 0 = the data type that fits),
// place mode pm, frame k of its message, size selector sb (0 = a size
// with a free buffer), length selector mb (0 = nb: j segments + r),
// ack/status selector ma.
func craftSeed(toA bool, t, fl, pm, k, sb, mb, nb, ma byte) []byte {
	op := byte(0)
	if toA {
		op = 0x80
	}
	b := []byte{op, t, 0, fl, 0, pm, k, 0, sb}
	if sb == 0 {
		b = append(b, 0)
	}
	b = append(b, 0, 0, 0, 0, 0, 0, mb)
	if mb == 0 {
		b = append(b, nb)
	}
	if pm&1 != 0 {
		b = append(b, 1)
	}
	return append(b, ma, 0, 0, 0, 0, 0)
}

// fuzzSeeds are inputs that reach each kind of frame, the edge sizes and
// every operation. Each starts with the configuration byte and the number
// of legitimate steps before the program.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	add := func(cfg, steps byte, ops ...[]byte) {
		b := []byte{cfg, steps}
		for _, op := range ops {
			b = append(b, op...)
		}
		seeds = append(seeds, b)
	}
	// Every type, the edge size classes and message lengths, to b and a.
	for t := byte(0); t <= byte(len(fuzzTypes)); t++ {
		for _, sb := range []byte{0, 1, 13, 12} { // free, 0, 0xFF, 32
			for _, mb := range []byte{0, 11, 12, 10} { // 2 segs, ^0, 1<<31, max+1
				add(0, 60, craftSeed(false, t, 0, 0, 0, sb, mb, 2|1<<3, 0))
			}
		}
		add(6, 30, craftSeed(true, t, 1, 0, 1, 0, 0, 3|2<<3, 0))
	}
	// A message's frames in place, beyond its end, and strayed.
	for _, k := range []byte{0, 1, 2, 3, 7, 31} {
		for _, pm := range []byte{0, 2, 4, 6, 8, 16, 24} {
			add(0, 80, craftSeed(false, 0, 0, pm, k, 0, 0, 2|1<<3, 0))
		}
	}
	for x := byte(0); x < 8; x++ {
		add(2, 40, craftSeed(false, 0, 0, 1|x<<5, 1, 0, 0, 3|1<<3, 0))
		add(2, 40, craftSeed(false, 7, 0, 1|x<<5, 1, 0, 0, 3|1<<3, 0))
	}
	// Acks and nacks on the send streams, every reason.
	for st := byte(0); st < 8; st++ {
		add(0, 20, craftSeed(false, 6, 0, 0, 0, 0, 0, 0, st<<2))
		add(4, 20, craftSeed(true, 6, 1, 0x40, 0, 0, 0, 0, st<<2|1))
		add(0, 20, craftSeed(false, 5, 8, 0, 0, 0, 0, 0, st<<2|3))
	}
	// The other operations: mutated, raw, steps, ticks, application calls,
	// replays, loss and reordering.
	add(0, 30, []byte{3, 0, 0, 1, 9, 2, 0}, []byte{4, 5, 1, 3, 9, 1, 0})
	add(1, 50, []byte{3, 1, 1, 2, 10, 0, 0}, []byte{6, 15}, []byte{9, 3})
	add(0, 10, append([]byte{5, 80}, bytes.Repeat([]byte{0x42}, 80)...), []byte{1})
	add(0, 10, append([]byte{5, 60}, make([]byte, 60)...), []byte{1})
	for a := byte(0); a < 13; a++ {
		add(8, 40, []byte{8, a, 50, 7}, []byte{8, a | 0x80, 1, 2}, []byte{0x88, a, 3, 4}, []byte{6, 15}, []byte{7, 6})
	}
	add(0, 100, []byte{10}, []byte{10}, []byte{11, 3}, []byte{6, 15}, []byte{7, 7}, []byte{7, 7}, []byte{6, 15})
	add(0, 255, []byte{7, 5}, []byte{7, 6}, []byte{7, 7}, []byte{7, 7}, []byte{6, 15}, []byte{6, 15})
	return seeds
}

// FuzzEngineInput feeds hostile frames, mutated and replayed legitimate
// ones, raw bytes, ticks and application calls to engines with live state
// (see the top of the file for the world and the invariants).
func FuzzEngineInput(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzEngineInput(t, data)
	})
}

// TestDataFrameBeyondMessage: a non-first DATA frame that opens a new
// message (its first frame missing) must fall inside that message: here
// the stream learned a 100-byte segment length, and a DATA_MIDDLE at
// offset 300 of a 200-byte message (its place follows from the offset)
// would be copied past the end of the 248-byte buffer.
func TestDataFrameBeyondMessage(t *testing.T) {
	n := newSimnet(t, 9)
	b := n.add(2, 2, nil)
	_ = b.Provide(make([]byte, 248), 8, 0, 0)
	_ = b.Provide(make([]byte, 248), 8, 0, 0)
	const sess = 0x1234567
	seq := handshake(t, n, b, 1, 2, 0, sess, 0).Seq()
	frame := func(typ wire.Type, seq, off, plen uint32) []byte {
		h := wire.HeaderFields{Type: typ, TargetPort: 2, SourcePort: 2, TargetNode: 2, SourceNode: 1,
			Session: sess, Seq: seq, MsgLen: 200, Offset: off, Size: 8}
		return wire.AppendFrame(nil, mac(2), mac(1), b.cfg.EtherType, &h, make([]byte, plen))
	}
	b.Input(n.now, frame(wire.TypeDataFirst, seq, 0, 100))
	b.Input(n.now, frame(wire.TypeDataLast, seq+1, 100, 100))
	if b.Pending() != 1 {
		t.Fatalf("%d events, want the message", b.Pending())
	}
	malformed := b.Stats().Malformed
	b.Input(n.now, frame(wire.TypeDataMiddle, seq+2+3, 300, 100))
	if b.Stats().Malformed != malformed+1 {
		t.Fatalf("malformed %d, want %d", b.Stats().Malformed, malformed+1)
	}
	b.Tick(n.now)
}
