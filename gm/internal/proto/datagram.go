package proto

import (
	"errors"
	"fmt"

	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

// Datagrams: gm_datagram_send. A datagram is one DATAGRAM frame, sent at
// once and never acknowledged, retransmitted or ordered; the receiver
// delivers it as an ordinary receive event if a buffer of its size and
// priority is provided, and drops it (counted) otherwise.
//
// Datagrams must not be delivered twice, even when a frame is replayed on
// the wire (with a cluster key a host without the key cannot forge one,
// but it can replay a sealed frame unchanged). So every datagram a port
// sends carries a 64-bit counter in its session and sequence number fields
// (session = high 32 bits; docs/PROTOCOL.md, section 7.7): a port's counter
// starts at a value its owner chooses (the gm package: the wall-clock time
// of the port's open in nanoseconds, so a later incarnation of the port
// starts above everything an earlier one sent) and grows by one per
// datagram. A receiver keeps, per source (node, port), the highest counter
// it accepted and which of the 64 below it it accepted, and drops a
// datagram whose counter it accepted already or that is 64 or more below
// the highest (as IPsec's anti-replay window). Datagrams pass the checks
// every frame of a peer passes (the target node and port, a source node of
// the node map whose MAC sent the frame, and the link's cluster key).

// DatagramWindow is how far below the highest counter accepted from a
// source a datagram may still be accepted (reordered).
const DatagramWindow = 64

// ErrDatagramNotSent means the link refused the datagram's frame (its
// transmit ring was full, or the link is down); nothing was sent and no
// token is taken.
var ErrDatagramNotSent = errors.New("gm: the link did not take the datagram (transmit ring full or link down): send it again later")

// dgState is the datagram state of an engine (lazily made).
type dgState struct {
	next uint64               // the counter of the next datagram sent
	win  map[uint32]*dgWindow // per source node<<8 | port
	hdr  wire.HeaderFields    // the header being built
	buf  []byte               // the frame being built
	last *dgWindow            // the window of key (one lookup per burst)
	key  uint32               // the key of last
}

// dgWindow is the anti-replay window of one source port.
type dgWindow struct {
	high uint64 // the highest counter accepted; 0: none yet
	bits uint64 // bit i: counter high-i was accepted
}

func (e *Engine) dg() *dgState {
	if e.dgram == nil {
		e.dgram = &dgState{win: map[uint32]*dgWindow{}, next: uint64(e.random32())<<32 | 1}
	}
	return e.dgram
}

// SetDatagramCounter sets the counter of the next datagram this engine
// sends (0 is replaced by 1). It must grow across incarnations of the
// port for receivers to accept the datagrams of a new one at once (see
// the datagram notes).
func (e *Engine) SetDatagramCounter(c uint64) { e.dg().next = max(c, 1) }

// Datagram sends msg[:length] to (node, port) as one DATAGRAM frame of
// size class size and priority pri (gm_datagram_send). It takes a send
// token; the completion (StatusSuccess: the frame was handed to the link)
// is queued at once and comes back from PopCompletion with cb and ctx.
// Errors, with nothing sent and no token taken: ErrSize, ErrPriority,
// ErrPort, ErrLength (length < 0, > len(msg), > the size class's maximum,
// or more than one frame's payload, DatagramMax), ErrNode,
// ErrNoSendToken, and ErrDatagramNotSent wrapping the link's error.
func (e *Engine) Datagram(now Time, msg []byte, size uint8, length int, pri uint8, node uint32, port uint8, cb, ctx any) error {
	if err := checkSend(msg, size, length, pri, port); err != nil {
		return err
	}
	if length > e.DatagramMax() {
		return ErrLength
	}
	p := e.peer(node)
	if p == nil || !e.resolve(p) {
		return ErrNode
	}
	if !e.sendTokens.TryAcquire() {
		return ErrNoSendToken
	}
	d := e.dg()
	var fl wire.Flags
	if pri != 0 {
		fl = wire.FlagHigh
	}
	c := d.next
	d.hdr = wire.HeaderFields{
		Type: wire.TypeDatagram, TargetPort: port, SourcePort: e.cfg.Port, Flags: fl, Size: size,
		TargetNode: node, SourceNode: e.cfg.NodeID, Session: uint32(c >> 32), Seq: uint32(c), MsgLen: uint32(length),
	}
	d.buf = wire.AppendFrame(d.buf[:0], p.mac, e.cfg.MAC, e.cfg.EtherType, &d.hdr, msg[:length])
	if err := e.out.Send(d.buf); err != nil {
		e.sendTokens.Release()
		return fmt.Errorf("%w: %w", ErrDatagramNotSent, err)
	}
	d.next++
	if d.next == 0 {
		d.next = 1
	}
	e.stats.DatagramsSent++
	i := e.allocRec()
	e.recs[i] = sendRec{cb: cb, ctx: ctx, next: -1}
	e.lastNow = now
	e.complete(i, StatusSuccess)
	return nil
}

// DatagramMax is the longest datagram: one frame's payload.
func (e *Engine) DatagramMax() int { return e.cfg.SegLen }

// onDatagram receives a DATAGRAM frame of peer p, source port sp (input
// checked the addressing and the source).
func (e *Engine) onDatagram(p *peer, sp, pri uint8, h wire.Header) {
	plen, size := uint32(h.PayloadLen()), h.Size()
	c := uint64(h.Session())<<32 | uint64(h.Seq())
	if c == 0 || h.MsgLen() != plen || h.Offset() != 0 || size < token.MinMessageSize || size > token.MaxSize ||
		plen > uint32(token.MaxLengthForSize(size)) {
		e.stats.Malformed++
		return
	}
	d := e.dg()
	key := p.node<<8 | uint32(sp)
	w := d.last
	if w == nil || d.key != key {
		if w = d.win[key]; w == nil {
			w = &dgWindow{}
			d.win[key] = w
		}
		d.last, d.key = w, key
	}
	if !w.accept(c) {
		e.stats.DatagramsReplayed++
		return
	}
	slot, ok := e.pools.Take(pri, size)
	if ok && !e.pools.Acceptable(pri, size) { // gm_set_acceptable_sizes refuses it
		e.pools.Return(slot)
		ok = false
	}
	if !ok {
		e.stats.DatagramsNoBuffer++
		return
	}
	if int(plen) > len(e.pools.Buffer(slot).Buf) { // cannot happen: a buffer holds its size class
		e.pools.Return(slot)
		e.stats.DatagramsNoBuffer++
		return
	}
	b := e.pools.Release(slot)
	copy(b.Buf, h.Payload())
	ev := e.pushEvent()
	t := uint8(EventRecv)
	if pri != 0 {
		t++
	}
	if sp == e.cfg.Port {
		t += 2
	}
	*ev = Event{Type: t, Priority: pri, Size: size, Tag: b.Tag, SenderPort: sp, SenderNode: p.node, Length: plen, Buffer: b.Buf, dgram: true}
	e.stats.DatagramsReceived++
	e.stats.Delivered++
}

// accept reports whether counter c is new to w, and notes it.
func (w *dgWindow) accept(c uint64) bool {
	switch {
	case w.high == 0 || c > w.high:
		if d := c - w.high; w.high == 0 || d >= 64 {
			w.bits = 1
		} else {
			w.bits = w.bits<<d | 1
		}
		w.high = c
		return true
	case w.high-c >= DatagramWindow:
		return false
	}
	bit := uint64(1) << (w.high - c)
	if w.bits&bit != 0 {
		return false
	}
	w.bits |= bit
	return true
}
