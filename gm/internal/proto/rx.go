package proto

import (
	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

// Input processes one received frame (already CRC-checked by the link). The
// frame is not retained. Call Tick after a batch of Input calls: it sends
// the acks and frames the input made due.
//
// A frame that completes sends (its ack) and delivers a message (a reply
// carrying the ack of its request) queues the receive event first and the
// SENT_TOKENS event after it: the receive is what a ping-pong waits for.
func (e *Engine) Input(now Time, frame []byte) {
	e.inInput = true
	e.input(now, frame)
	e.inInput = false
	if e.sentLate {
		e.sentLate = false
		e.queueSent()
	}
}

func (e *Engine) input(now Time, frame []byte) {
	e.lastNow = now
	h, err := wire.ParseFrame(frame, e.cfg.EtherType)
	if err != nil {
		e.stats.Malformed++
		return
	}
	if h.TargetNode() != e.cfg.NodeID {
		e.stats.Misaddressed++
		return
	}
	typ := h.Type()
	if tp := h.TargetPort(); tp != e.cfg.Port {
		e.stats.Misaddressed++
		if (isData(typ) || typ.HasRemoteAddr() || typ == wire.TypeOpen) && e.cfg.AnswerClosed != nil && e.cfg.AnswerClosed(tp) {
			e.ctrlBuf = wire.AppendPortClosedNack(e.ctrlBuf[:0], &e.hdr, frame, h, e.cfg.MAC, e.cfg.NodeID, e.cfg.EtherType)
			if e.out.Send(e.ctrlBuf) == nil {
				e.stats.NacksSent++
				e.stats.NacksSentPortClosed++
			}
		}
		return
	}
	sp, src := h.SourcePort(), h.SourceNode()
	var p *peer
	if int(src) < len(e.peers) {
		p = e.peers[src] // an existing peer is known (see known)
	}
	if sp >= wire.NumPorts || p == nil && !e.known(src) {
		e.stats.Misaddressed++
		return
	}
	if p == nil {
		p = e.peer(src)
	}
	if !e.fromPeer(p, wire.Ethernet(frame).Src()) {
		// Not from the host the node map gives the claimed source node
		// (another host, or one whose id the map changed).
		e.stats.Misaddressed++
		return
	}
	pri := framePri(h.Flags())
	if pri == replyPri && !replyType(typ) { // reply.go
		e.stats.Malformed++
		return
	}
	switch typ {
	case wire.TypeAck:
		if s := p.tx[sp][pri]; s != nil && s.session == h.Session() && !s.opening {
			e.onAck(now, s, h)
		} else {
			e.stats.Ignored++
		}
	case wire.TypeOpen:
		e.onOpen(p, sp, pri, h)
	case wire.TypeOpenAck:
		if s := p.tx[sp][pri]; s != nil && s.opening && !s.disabled && s.session == h.Session() {
			e.onOpenAck(now, s, h)
		} else {
			e.stats.Ignored++
		}
	case wire.TypeNack:
		if s := p.tx[sp][pri]; s != nil && s.session == h.Session() {
			e.onNack(now, s, h)
		} else {
			e.stats.Ignored++
		}
	case wire.TypeData, wire.TypeDataFirst, wire.TypeDataMiddle, wire.TypeDataLast,
		wire.TypePut, wire.TypeGet, wire.TypeGot: // rdma.go
		e.onSeq(now, p, sp, pri, frame, h)
	case wire.TypeDatagram:
		e.onDatagram(p, sp, pri, h) // datagram.go
	default:
		e.stats.Ignored++
	}
}

func isData(t wire.Type) bool {
	return t == wire.TypeData || t == wire.TypeDataFirst || t == wire.TypeDataMiddle || t == wire.TypeDataLast
}

// retiredAt returns the index of sess among the sessions rs left, or -1.
func (rs *rxStream) retiredAt(sess uint32) int {
	for i := 0; i < rs.retN; i++ {
		if rs.retired[i].sess == sess {
			return i
		}
	}
	return -1
}

// retire remembers that rs left session sess with rcvNxt next.
func (rs *rxStream) retire(sess, next uint32) {
	copy(rs.retired[1:], rs.retired[:len(rs.retired)-1])
	rs.retired[0] = retiredSession{sess, next}
	if rs.retN < len(rs.retired) {
		rs.retN++
	}
}

// supersededAt returns the index of sess among the sessions proposed to
// rs and superseded before they started, or -1.
func (rs *rxStream) supersededAt(sess uint32) int {
	for i := 0; i < rs.supN; i++ {
		if rs.superseded[i].sess == sess {
			return i
		}
	}
	return -1
}

// supersede remembers that the pending session sess, whose first sequence
// number this receiver chose as first, was never started.
func (rs *rxStream) supersede(sess, first uint32) {
	if rs.supersededAt(sess) >= 0 {
		return
	}
	copy(rs.superseded[1:], rs.superseded[:len(rs.superseded)-1])
	rs.superseded[0] = retiredSession{sess, first}
	if rs.supN < len(rs.superseded) {
		rs.supN++
	}
}

// unsupersede forgets sess as superseded: it has started.
func (rs *rxStream) unsupersede(sess uint32) {
	if i := rs.supersededAt(sess); i >= 0 {
		copy(rs.superseded[i:], rs.superseded[i+1:rs.supN])
		rs.supN--
	}
}

// leave makes rs follow no session: the current one (if any) is retired
// with what it delivered, and the messages being reassembled are abandoned.
func (e *Engine) leave(rs *rxStream) {
	if rs.valid {
		rs.retire(rs.session, rs.rcvNxt)
	}
	e.abandon(rs)
	rs.valid = false
	rs.ackState, rs.unacked, rs.dropped = ackNone, 0, false
	rs.ooo.reset()
	rs.oooAny = false
}

// onOpen answers the OPEN h of stream (p, sp, pri): a sender proposes a
// new session (h's Session) in place of a previous one (h's Ack field, 0
// if none). The answer, an OPEN_ACK, goes to the MAC the node map gives
// for the claimed sender, never to the frame's source: only the real
// sender learns the new session's first sequence number, which this
// receiver draws at random, and only a frame of the session at exactly
// that number starts the session (onSeq). So a forged OPEN cannot start a
// session, and it displaces nothing: the stream keeps following its
// current session until the new one's first frame arrives.
//
// If the OPEN names the session the stream follows, the sender leaves it:
// the stream stops there (no later frame of it is accepted) and the answer
// carries its cumulative ack, so the sender completes the messages
// delivered and sends the others again in the new session, each exactly
// once. For a session already left, the answer carries what it delivered;
// for a proposal superseded here before it started (a stray or forged
// OPEN replaced it as the pending one), an ack of nothing; for an unknown
// one (this port restarted, or the record was lost), no ack: the sender
// treats this port as a new incarnation.
func (e *Engine) onOpen(p *peer, sp, pri uint8, h wire.Header) {
	sess, prev := h.Session(), h.Ack()
	if sess == 0 || !e.resolve(p) {
		e.stats.Ignored++
		return
	}
	e.stats.OpensReceived++
	rs := e.rx(p, sp, pri)
	if (rs.valid && sess == rs.session) || rs.retiredAt(sess) >= 0 {
		return // a late copy of the OPEN of a session started (or left) already
	}
	if sess != rs.pendSess {
		if rs.pendSess != 0 {
			rs.supersede(rs.pendSess, rs.pendSeq)
		}
		if i := rs.supersededAt(sess); i >= 0 {
			// Proposed again: the same first sequence number, so that
			// whichever OPEN_ACK the sender took names it.
			rs.pendSess, rs.pendSeq = sess, rs.superseded[i].next
		} else {
			rs.pendSess, rs.pendSeq = sess, e.random32()
		}
	}
	fl := h.Flags() & streamFlags
	ack := uint32(0)
	if prev != 0 {
		if rs.valid && prev == rs.session {
			e.leave(rs)
		}
		if i := rs.retiredAt(prev); i >= 0 {
			fl |= wire.FlagAckValid
			ack = rs.retired[i].next - 1
		} else if i := rs.supersededAt(prev); i >= 0 {
			// Proposed here, superseded (by a stray or forged OPEN) and
			// never started: nothing of it was delivered.
			fl |= wire.FlagAckValid
			ack = rs.superseded[i].next - 1
		}
	}
	e.hdr = wire.HeaderFields{
		Type: wire.TypeOpenAck, TargetPort: sp, SourcePort: e.cfg.Port, Flags: fl,
		TargetNode: p.node, SourceNode: e.cfg.NodeID, Session: sess, Seq: rs.pendSeq, Ack: ack,
		MsgLen: uint32(e.cfg.RecvWindow), // the window this port takes (section 7.9)
	}
	e.ctrlBuf = wire.AppendFrame(e.ctrlBuf[:0], p.mac, e.cfg.MAC, e.cfg.EtherType, &e.hdr, nil)
	if e.out.Send(e.ctrlBuf) == nil {
		e.stats.OpenAcksSent++
	}
}

func (e *Engine) abandon(rs *rxStream) {
	for rs.mLen > 0 {
		// Return in reverse order so the pools keep their FIFO order.
		m := &rs.msgs[(rs.mHead+rs.mLen-1)%rxMsgs]
		if m.kind != 0 {
			e.rdmaAbandon(m) // rdma.go
		} else {
			e.pools.Return(m.slot)
		}
		rs.mLen--
	}
	rs.mHead = 0
}

func (e *Engine) scheduleAck(now Time, rs *rxStream, immediate bool) {
	if immediate {
		rs.ackState = ackNow
	} else if rs.ackState == ackNone {
		rs.ackState = ackDelayed
		rs.ackDue = now + e.cfg.AckDelay
	}
	if !rs.inAck {
		rs.inAck = true
		e.ackList = append(e.ackList, rs)
	}
}

// onSeq processes a frame of the sequence of stream (p, sp, pri): a
// message's (DATA, DATA_FIRST, DATA_MIDDLE, DATA_LAST) or a remote memory
// transfer's (PUT, GET, GOT; see rdma.go). Both obey the stream's rules,
// which live here once: the piggybacked ack, sessions, duplicates (each
// answered at once), the window, out-of-order frames (the selective ack
// bitmap), the frame's place among the messages being reassembled, the
// go-back and the repeated refusal, completion and the ack. What depends on
// the type is behind hooks: rdmaFrame (a transfer frame's checks), binding
// a new message to a pool buffer or to memory (dataNewMsg, rdmaNewMsg),
// placing the payload (a message's here, rdmaPlace) and completing it
// (deliver: a receive event for a message, none for a transfer).
func (e *Engine) onSeq(now Time, p *peer, sp, pri uint8, frame []byte, h wire.Header) {
	e.stats.DataReceived++
	if e.onSeqNext(now, p, sp, pri, h) {
		return
	}
	fl := h.Flags()
	typ, sess, seq := h.Type(), h.Session(), h.Seq()
	rdma := !typ.IsData() // PUT, GET or GOT
	// start tells whether the frame is the first of its message.
	start := typ == wire.TypeData || typ == wire.TypeDataFirst
	var rseg uint32
	if rdma {
		var ok bool
		if start, rseg, ok = rdmaFrame(h); !ok {
			e.stats.Malformed++
			return
		}
	}
	rs := e.rx(p, sp, pri)
	if !rs.valid || sess != rs.session {
		if rs.pendSess != 0 && sess == rs.pendSess && seq == rs.pendSeq && start {
			// The first frame of the session this receiver confirmed with
			// the sender (onOpen): the sender has the OPEN_ACK, so the
			// session is its current one. Follow it.
			e.leave(rs)
			rs.valid, rs.session, rs.isn, rs.rcvNxt = true, sess, seq, seq
			rs.pendSess = 0
			rs.unsupersede(sess)
			e.stats.SessionsStarted++
			e.trace(now, trAdopt, p.node, sp, pri, seq, sess, seq, 0, 0, 0)
		} else if rs.retiredAt(sess) >= 0 {
			// A session this stream has left (its sender proposed a newer
			// one): a late frame, whose sender has moved on or is gone and
			// ignores the answer. Should the sender still be in it (a
			// session started by a frame that guessed its first sequence
			// number), the answer makes it open a new session at once,
			// rather than fail after its liveness timeout; the OPEN_ACK
			// then reports what this one delivered. At most one answer per
			// staleNackGap.
			e.stats.StaleDropped++
			if rs.staleNackAt == 0 || now-rs.staleNackAt >= staleNackGap {
				rs.staleNackAt = now
				e.sendNack(frame, h, wire.NackStaleSession, e.cfg.Port, nil)
			}
			return
		} else {
			// A session this stream never started: the sender's stream
			// predates this port (we restarted), or its session was
			// never confirmed here (its OPEN_ACK was superseded), or the
			// frame is forged. Nothing of it is accepted; a live sender
			// opens a new session.
			e.stats.StaleDropped++
			e.sendNack(frame, h, wire.NackStaleSession, e.cfg.Port, nil)
			return
		}
	}
	if fl&wire.FlagAckValid != 0 {
		// A piggybacked ack, of the reverse stream; trusted only from a
		// frame of the session this stream follows.
		if s := p.tx[sp][pri]; s != nil && !s.disabled && !s.opening {
			s.lastHeard = now
			e.onAckValue(now, s, h.Ack())
		}
	}
	if typ == wire.TypeData && seq == rs.rcvNxt && rs.mLen == 0 && !rs.oooAny {
		e.onNext(now, rs, frame, h)
		return
	}
	d := diff(seq, rs.rcvNxt)
	if d < 0 {
		e.stats.Duplicates++
		e.scheduleAck(now, rs, true)
		return
	}
	if d >= maxWindow {
		e.stats.OutOfWindow++
		return
	}
	if seq != rs.rcvNxt && rs.ooo.get(seq) {
		// A duplicate beyond a gap: answer it too (the sender's
		// retransmission timeout probes with its newest unacknowledged
		// frame, which the receiver may have).
		e.stats.Duplicates++
		e.scheduleAck(now, rs, true)
		return
	}
	var m *rxMsg
	for i := 0; i < rs.mLen; i++ {
		x := &rs.msgs[(rs.mHead+i)%rxMsgs]
		if uint32(diff(seq, x.start)) < x.nseg {
			m = x
			break
		}
	}
	if m == nil {
		next := rs.rcvNxt
		if rs.mLen > 0 {
			last := &rs.msgs[(rs.mHead+rs.mLen-1)%rxMsgs]
			next = last.start + last.nseg
		}
		// The segment length (if known) from which a later frame locates
		// the start of a message whose first frame is missing: the
		// stream's for a message, the frame's for a transfer.
		seg := rs.segLen
		if rdma {
			seg = rseg
		}
		startSeq := seq
		if !start && seg > 0 && h.Offset()%seg == 0 {
			// The message's first frame is missing; its place follows
			// from the offset and the segment length.
			startSeq = seq - h.Offset()/seg
		}
		if startSeq != next || (!start && startSeq == seq) || rs.mLen == rxMsgs {
			e.stats.OutOfWindow++
			if startSeq != next && rs.lastNackSeq == next && (rs.lastNackReason == wire.NackNoBuffer || rs.lastNackReason == wire.NackRejected) {
				// A frame of a message after one we refused: the sender
				// rewinds to the refused message when it gets the nack,
				// so asking it to go back would only repeat frames. A
				// retransmission (a timeout's probe) means the nack may
				// have been lost: repeat it.
				if fl&wire.FlagRetransmit != 0 {
					e.sendNackSeq(frame, h, rs.lastNackReason, e.cfg.Port, rs, next)
				}
				return
			}
			// A frame of a message whose first frame is missing: drop it
			// and ask the sender to go back.
			if !rs.dropped {
				e.trace(now, trDropGoBack, p.node, sp, pri, rs.isn, seq, rs.rcvNxt, 0, 0, 0)
			}
			rs.dropped = true
			e.scheduleAck(now, rs, true)
			return
		}
		if rdma {
			m = e.rdmaNewMsg(rs, frame, h, startSeq)
		} else {
			m = e.dataNewMsg(rs, frame, h, startSeq)
		}
		if m == nil {
			return
		}
	}
	if rdma {
		if !e.rdmaPlace(now, rs, m, seq, h, start) {
			return
		}
	} else {
		// A message's payload goes to its buffer, or for a short message
		// of one frame to the copy its event carries.
		plen := uint32(h.PayloadLen())
		off, ok := m.fits(seq, h, plen, start)
		if !ok || m.kind != 0 || h.Size() != m.size {
			e.stats.Malformed++
			return
		}
		if typ == wire.TypeDataFirst || typ == wire.TypeDataMiddle {
			rs.segLen = plen
		}
		if m.nseg == 1 && m.msgLen <= MaxFastRecvBytes {
			// A FAST message: its bytes go to its event. Delivered now
			// (in order, the usual case), they are copied once, from the
			// frame straight into the event (deliver); a message that
			// waits for an earlier one keeps a copy of its own.
			m.fastLen = int(plen)
			if seq == rs.rcvNxt {
				e.rxFast, e.rxFastMsg = h.Payload(), m
			} else {
				copy(m.fast[:], h.Payload())
			}
		} else {
			copy(e.pools.Buffer(m.slot).Buf[off:off+plen], h.Payload())
		}
	}
	if seq == rs.rcvNxt {
		rs.rcvNxt++
		for rs.oooAny && rs.ooo.get(rs.rcvNxt) {
			rs.ooo.clr(rs.rcvNxt)
			rs.rcvNxt++
		}
		if rs.oooAny && diff(rs.rcvNxt, rs.oooHi) >= 0 {
			rs.oooAny = false
		}
	} else {
		rs.ooo.set(seq)
		if !rs.oooAny || diff(seq+1, rs.oooHi) > 0 {
			rs.oooHi = seq + 1
		}
		rs.oooAny = true
	}
	rs.unacked++
	immediate := rs.unacked >= e.cfg.AckEvery
	var last *Event
	for rs.mLen > 0 {
		x := &rs.msgs[rs.mHead]
		if diff(rs.rcvNxt, x.start+x.nseg) < 0 {
			break
		}
		last = e.deliver(rs, x)
		rs.mHead = (rs.mHead + 1) % rxMsgs
		rs.mLen--
		immediate = immediate || rs.dropped
	}
	if m := e.rxFastMsg; m != nil {
		// Not delivered after all: keep its bytes (the frame's view dies
		// with this call).
		copy(m.fast[:], e.rxFast)
		e.rxFast, e.rxFastMsg = nil, nil
	}
	e.ackFrame(now, rs, last, fl, immediate) // a transfer has no event: its ack goes at once
}

// ackFrame schedules the ack of rs after a frame with flags fl; last is
// the receive event of the message the frame completed, if any. If the
// frame asks for an ack (to complete its send) and completed a message,
// the ack waits until the application has taken the message (see
// TakeEvent): if it answers at once, the answer carries the ack, and the
// round trip is one frame shorter; it still goes out within AckDelay.
// Otherwise a requested ack goes out at once.
func (e *Engine) ackFrame(now Time, rs *rxStream, last *Event, fl wire.Flags, immediate bool) {
	if fl&wire.FlagAckRequest != 0 {
		if last != nil && !immediate {
			last.ackRS = rs
		} else {
			immediate = true
		}
	}
	e.scheduleAck(now, rs, immediate)
}

// onNext is the rest of onSeq for the usual frame of a latency-bound
// exchange: a message of one frame (DATA) that is next in rs's sequence,
// with no message being reassembled and no frame held out of order. It
// does what onSeq's general path does for such a frame, without the checks
// and loops that only the other cases need: bind a buffer, place the
// payload, deliver, schedule the ack.
func (e *Engine) onNext(now Time, rs *rxStream, frame []byte, h wire.Header) {
	m := e.dataNewMsg(rs, frame, h, rs.rcvNxt)
	if m == nil {
		return
	}
	// dataNewMsg checked that the payload is the whole message.
	plen := uint32(h.PayloadLen())
	if h.Offset() != 0 || m.kind != 0 {
		e.stats.Malformed++
		return
	}
	if plen <= MaxFastRecvBytes {
		// A FAST message: copied once, from the frame into its event.
		m.fastLen = int(plen)
		e.rxFast, e.rxFastMsg = h.Payload(), m
	} else {
		copy(e.pools.Buffer(m.slot).Buf[:plen], h.Payload())
	}
	rs.rcvNxt++
	rs.unacked++
	immediate := rs.unacked >= e.cfg.AckEvery || rs.dropped
	ev := e.deliver(rs, m)
	rs.mHead = (rs.mHead + 1) % rxMsgs
	rs.mLen--
	e.ackFrame(now, rs, ev, h.Flags(), immediate)
}

// onSeqNext is onSeq for the usual frame of a stream of large messages:
// the next frame in sequence (DATA_MIDDLE or DATA_LAST) of the message
// being reassembled, on the session the stream follows, with no gap or
// dropped frame before it and no piggybacked ack. It places the payload,
// delivers the message if the frame completes it and schedules the ack,
// exactly as onSeq's general path does for such a frame, and reports
// false, having changed nothing, for any other frame.
func (e *Engine) onSeqNext(now Time, p *peer, sp, pri uint8, h wire.Header) bool {
	typ, fl := h.Type(), h.Flags()
	if typ != wire.TypeDataMiddle && typ != wire.TypeDataLast || fl&wire.FlagAckValid != 0 {
		return false
	}
	rs := p.rx[sp][pri]
	if rs == nil || !rs.valid || rs.oooAny || rs.dropped || rs.mLen == 0 || h.Session() != rs.session || h.Seq() != rs.rcvNxt {
		return false
	}
	// The message that holds rcvNxt is the oldest one being reassembled.
	m := &rs.msgs[rs.mHead]
	plen := uint32(h.PayloadLen())
	off, ok := m.fits(rs.rcvNxt, h, plen, false)
	if !ok || m.kind != 0 || h.Size() != m.size {
		return false
	}
	if typ == wire.TypeDataMiddle {
		rs.segLen = plen
	}
	copy(e.pools.Buffer(m.slot).Buf[off:off+plen], h.Payload())
	rs.rcvNxt++
	rs.unacked++
	immediate := rs.unacked >= e.cfg.AckEvery
	var last *Event
	if diff(rs.rcvNxt, m.start+m.nseg) >= 0 {
		// Complete. No later message can be: nothing after rcvNxt has
		// arrived.
		last = e.deliver(rs, m)
		rs.mHead = (rs.mHead + 1) % rxMsgs
		rs.mLen--
	}
	e.ackFrame(now, rs, last, fl, immediate)
	return true
}

// fits reports whether the frame h, sequence number seq, agrees with m:
// its offset, payload length plen and message length, and whether it is
// the message's first frame (start), follow from its place in m. It also
// returns the offset.
func (m *rxMsg) fits(seq uint32, h wire.Header, plen uint32, start bool) (uint32, bool) {
	k := uint32(diff(seq, m.start))
	off := k * m.segLen
	want := min(m.msgLen-off, m.segLen)
	return off, k < m.nseg && h.Offset() == off && plen == want && h.MsgLen() == m.msgLen && start == (k == 0)
}

// dataNewMsg is onSeq's hook for the first frame to arrive of a message:
// (frame, h) is a frame of the message that starts at startSeq. It takes
// a buffer of the message's size class from the pools (refusing the
// message with a NACK if none is free, or if none can hold it) and returns
// the message, or nil if the frame is refused or malformed.
func (e *Engine) dataNewMsg(rs *rxStream, frame []byte, h wire.Header, startSeq uint32) *rxMsg {
	typ, plen, size, msgLen := h.Type(), uint32(h.PayloadLen()), h.Size(), h.MsgLen()
	start := typ == wire.TypeData || typ == wire.TypeDataFirst
	if !e.pools.Acceptable(rs.pri, size) || msgLen > uint32(token.MaxLengthForSize(size)) {
		e.sendNackSeq(frame, h, wire.NackRejected, e.cfg.Port, rs, startSeq)
		return nil
	}
	slot, ok := e.pools.Take(rs.pri, size)
	if !ok {
		// Every frame of the message is refused, but one nack per round
		// is enough: the sender rewinds on the first and then probes
		// with the first frame, whose refusal is always answered, as is
		// a retransmission (a timeout's probe, sent if the nack was
		// lost).
		if start || h.Flags()&wire.FlagRetransmit != 0 || rs.lastNackSeq != startSeq || rs.lastNackReason != wire.NackNoBuffer {
			e.sendNackSeq(frame, h, wire.NackNoBuffer, e.cfg.Port, rs, startSeq)
		}
		return nil
	}
	if int(msgLen) > len(e.pools.Buffer(slot).Buf) {
		e.pools.Return(slot)
		e.sendNackSeq(frame, h, wire.NackRejected, e.cfg.Port, rs, startSeq)
		return nil
	}
	var nseg, segLen uint32
	switch {
	case !start:
		segLen = rs.segLen
		nseg = (msgLen + segLen - 1) / segLen
		if nseg < 2 {
			e.pools.Return(slot)
			e.stats.Malformed++
			return nil
		}
	case typ == wire.TypeData:
		if plen != msgLen {
			e.pools.Return(slot)
			e.stats.Malformed++
			return nil
		}
		nseg, segLen = 1, plen
	default:
		if plen == 0 || plen >= msgLen {
			e.pools.Return(slot)
			e.stats.Malformed++
			return nil
		}
		segLen = plen
		nseg = (msgLen + plen - 1) / plen
	}
	m := &rs.msgs[(rs.mHead+rs.mLen)%rxMsgs]
	rs.mLen++
	m.slot, m.start, m.nseg, m.segLen, m.msgLen, m.size, m.fastLen = slot, startSeq, nseg, segLen, msgLen, size, -1
	return m
}

// deliver queues the receive event of message m of rs and returns it (nil
// for a PUT, GET or GOT, which queue none).
func (e *Engine) deliver(rs *rxStream, m *rxMsg) *Event {
	if m.kind != 0 {
		e.rdmaDeliver(rs, m) // rdma.go
		return nil
	}
	b := e.pools.Release(m.slot)
	ev := e.pushEvent()
	t := uint8(EventRecv)
	if rs.pri != 0 {
		t++
	}
	if rs.port == e.cfg.Port {
		t += 2
	}
	ev.FastLen = 0
	if m.fastLen >= 0 {
		t += 4
		if m == e.rxFastMsg {
			ev.FastLen = copy(ev.Fast[:], e.rxFast)
			e.rxFast, e.rxFastMsg = nil, nil
		} else {
			ev.FastLen = copy(ev.Fast[:], m.fast[:m.fastLen])
		}
	}
	ev.Type, ev.Priority, ev.Size, ev.Tag = t, rs.pri, m.size, b.Tag
	ev.SenderPort, ev.SenderNode, ev.Length, ev.Buffer = rs.port, rs.peer.node, m.msgLen, b.Buf
	e.stats.Delivered++
	return ev
}

func (e *Engine) sendAck(rs *rxStream) {
	rs.ackState = ackNone
	rs.unacked = 0
	p := rs.peer
	if !rs.valid || !e.resolve(p) {
		return
	}
	fl := priFlags(rs.pri)
	if rs.dropped {
		fl |= wire.FlagRetransmit
		rs.dropped = false
	}
	var payload []byte
	if rs.oooAny {
		n := uint32(diff(rs.oooHi, rs.rcvNxt))
		nb := (n + 7) / 8
		if nb > uint32(len(e.sackScratch)) {
			nb = uint32(len(e.sackScratch))
		}
		payload = e.sackScratch[:nb]
		clear(payload)
		for i := uint32(0); i < n && i/8 < nb; i++ {
			if rs.ooo.get(rs.rcvNxt + i) {
				payload[i/8] |= 1 << (i % 8)
			}
		}
	}
	e.hdr = wire.HeaderFields{
		Type: wire.TypeAck, TargetPort: rs.port, SourcePort: e.cfg.Port, Flags: fl,
		TargetNode: p.node, SourceNode: e.cfg.NodeID, Session: rs.session, Ack: rs.rcvNxt - 1,
	}
	e.ctrlBuf = wire.AppendFrame(e.ctrlBuf[:0], p.mac, e.cfg.MAC, e.cfg.EtherType, &e.hdr, payload)
	if e.out.Send(e.ctrlBuf) == nil {
		e.stats.AcksSent++
	}
}

// sendNack answers the data frame (frame, h) with a NACK of the given
// reason, from local port src. If rs is the receive state of the frame's
// stream, the NACK also carries its cumulative ack.
func (e *Engine) sendNack(frame []byte, h wire.Header, reason wire.NackReason, src uint8, rs *rxStream) {
	e.sendNackSeq(frame, h, reason, src, rs, h.Seq())
}

// sendNackSeq is sendNack for sequence number seq (the start of the
// refused message, which may differ from the frame's).
func (e *Engine) sendNackSeq(frame []byte, h wire.Header, reason wire.NackReason, src uint8, rs *rxStream, seq uint32) {
	fl := h.Flags() & streamFlags
	ack := uint32(0)
	if rs != nil && rs.valid && rs.session == h.Session() {
		fl |= wire.FlagAckValid
		ack = rs.rcvNxt - 1
	}
	e.hdr = wire.HeaderFields{
		Type: wire.TypeNack, TargetPort: h.SourcePort(), SourcePort: src, Flags: fl, Status: uint8(reason),
		TargetNode: h.SourceNode(), SourceNode: e.cfg.NodeID, Session: h.Session(), Seq: seq, Ack: ack,
	}
	if rs != nil {
		e.trace(e.lastNow, trNackSent, rs.peer.node, rs.port, rs.pri, rs.isn, seq, rs.rcvNxt, 0, uint32(reason), 0)
		rs.lastNackSeq, rs.lastNackReason = seq, reason
	}
	dst := wire.Ethernet(frame).Src()
	e.ctrlBuf = wire.AppendFrame(e.ctrlBuf[:0], dst, e.cfg.MAC, e.cfg.EtherType, &e.hdr, nil)
	if e.out.Send(e.ctrlBuf) == nil {
		e.stats.NacksSent++
		st := &e.stats
		countNack(reason, &st.NacksSentNoBuffer, &st.NacksSentRejected, &st.NacksSentPortClosed, &st.NacksSentStaleSession)
	}
}

// Close tells every peer that has sent to this port that it is closing:
// each receive stream gets a NackPortClosed for its next expected frame, so
// a sender with frames in flight fails them with GM_SEND_TARGET_PORT_CLOSED.
func (e *Engine) Close(now Time) {
	for _, p := range e.peers {
		if p == nil || !e.resolve(p) {
			continue
		}
		for port := range p.rx {
			for pri, rs := range p.rx[port] {
				if rs == nil || !rs.valid {
					continue
				}
				e.hdr = wire.HeaderFields{
					Type: wire.TypeNack, TargetPort: uint8(port), SourcePort: e.cfg.Port, Status: uint8(wire.NackPortClosed),
					TargetNode: p.node, SourceNode: e.cfg.NodeID, Session: rs.session, Seq: rs.rcvNxt,
					Flags: wire.FlagAckValid, Ack: rs.rcvNxt - 1,
				}
				e.hdr.Flags |= priFlags(uint8(pri))
				e.ctrlBuf = wire.AppendFrame(e.ctrlBuf[:0], p.mac, e.cfg.MAC, e.cfg.EtherType, &e.hdr, nil)
				if e.out.Send(e.ctrlBuf) == nil {
					e.stats.NacksSent++
					e.stats.NacksSentPortClosed++
				}
			}
		}
	}
	_ = now
}
