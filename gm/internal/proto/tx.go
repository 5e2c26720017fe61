package proto

import (
	"slices"
	"time"

	"github.com/ethergm/ethergm/gm/internal/prefetch"
	"github.com/ethergm/ethergm/wire"
)

// locate returns the queued message that holds sequence number seq and the
// segment index within it, assigning sequence numbers to queued messages as
// needed.
func (e *Engine) locate(s *txStream, seq uint32) (*sendRec, uint32, bool) {
	if s.cursor < s.qAssigned {
		// Usually the message of the last frame built holds seq (its
		// numbers are assigned: seq is below nextSeq).
		r := &e.recs[s.q[(s.qHead+s.cursor)%qCap]]
		if k := uint32(diff(seq, r.firstSeq)); k < r.nseg {
			return r, k, true
		}
	}
	for diff(seq, s.nextSeq) >= 0 && s.qAssigned < s.qLen {
		r := &e.recs[s.q[(s.qHead+s.qAssigned)%qCap]]
		r.firstSeq = s.nextSeq
		s.nextSeq += r.nseg
		s.qAssigned++
	}
	if s.qAssigned == 0 {
		return nil, 0, false
	}
	if s.cursor >= s.qAssigned {
		s.cursor = 0
	}
	if diff(seq, e.recs[s.q[(s.qHead+s.cursor)%qCap]].firstSeq) < 0 {
		s.cursor = 0
	}
	for c := s.cursor; c < s.qAssigned; c++ {
		r := &e.recs[s.q[(s.qHead+c)%qCap]]
		k := diff(seq, r.firstSeq)
		if k < 0 {
			return nil, 0, false
		}
		if uint32(k) < r.nseg {
			s.cursor = c
			return r, uint32(k), true
		}
	}
	return nil, 0, false
}

func (e *Engine) outstanding(s *txStream) bool { return diff(s.nxt, s.una) > 0 }

// addFrame builds the data frame for seq into the next batch slot.
func (e *Engine) addFrame(s *txStream, seq uint32, rtx, ackReq bool) bool {
	r, k, ok := e.locate(s, seq)
	if !ok {
		return false
	}
	return e.addSegment(s, r, k, seq, rtx, ackReq)
}

// prefetchAhead is how far ahead of the segment it builds addSegment asks
// the processor to load a message's bytes (internal/prefetch): one
// segment's worth, starting this many bytes or one segment later, whichever
// is further. Successive segments ask for successive bytes, so every byte
// is asked for once, without a division per frame to find a segment start.
const prefetchAhead = 6 << 10

// addSegment builds the frame of segment k of message r, sequence number
// seq, into the next batch slot.
func (e *Engine) addSegment(s *txStream, r *sendRec, k, seq uint32, rtx, ackReq bool) bool {
	seg := uint32(e.cfg.SegLen)
	if r.kind >= recPut {
		seg -= wire.RemoteAddrLen // PUT, GET, GOT carry the remote address (rdma.go)
	}
	off := k * seg
	end := off + seg
	if end > r.length {
		end = r.length
	}
	typ := wire.TypeData
	if r.kind >= recPut {
		typ = rdmaType(r.kind)
	} else if r.nseg > 1 {
		switch k {
		case 0:
			typ = wire.TypeDataFirst
		case r.nseg - 1:
			typ = wire.TypeDataLast
		default:
			typ = wire.TypeDataMiddle
		}
	}
	fl, ack, ackRS := e.piggyback(s)
	if r.kind == recGet {
		fl |= wire.FlagSepReply // serve it on the reply stream (reply.go)
	}
	if rtx {
		fl |= wire.FlagRetransmit
	}
	if ackReq || (r.nseg > 1 && k == r.nseg-1) {
		fl |= wire.FlagAckRequest
	}
	e.hdr = wire.HeaderFields{
		Type: typ, TargetPort: s.port, SourcePort: e.cfg.Port, Flags: fl, Size: r.size,
		TargetNode: s.peer.node, SourceNode: e.cfg.NodeID, Session: s.session, Seq: seq, Ack: ack,
		MsgLen: r.wireMsgLen(), Offset: off, RemoteAddr: r.raddr,
	}
	payload := r.msg[off:end]
	if ahead := off + max(prefetchAhead, seg); ahead < r.length {
		prefetch.Range(r.msg[ahead:min(ahead+seg, r.length)])
	}
	if e.slots != nil && (e.queued > 0 || (len(e.txFrames) == 1 && e.toSlots())) {
		// Zero copy: the frame is built in a transmit-ring slot and goes
		// out with the batch's single kick.
		buf := e.slot()
		if buf == nil {
			e.stats.PartialBatches++
			e.txBlock = true
			return false
		}
		f := wire.AppendFrame(buf[:0], s.peer.mac, e.cfg.MAC, e.cfg.EtherType, &e.hdr, payload)
		if e.commit(len(f)) != nil {
			e.stats.PartialBatches++
			e.txBlock = true
			return false
		}
		e.queued++
	} else {
		// The first frame of a batch goes to a buffer: if it stays alone
		// it is sent with one send(2), the cheapest way for one frame.
		i := len(e.txFrames)
		e.txBufs[i] = wire.AppendFrame(e.txBufs[i][:0], s.peer.mac, e.cfg.MAC, e.cfg.EtherType, &e.hdr, payload)
		e.buffered(e.txBufs[i], seq, rtx)
	}
	e.built(s, seq, rtx, ackRS)
	return true
}

// buffered adds frame f, sequence number seq, built in a batch buffer, to
// the batch.
func (e *Engine) buffered(f []byte, seq uint32, rtx bool) {
	e.txFrames = append(e.txFrames, f)
	e.txSeq = append(e.txSeq, seq)
	e.txNew = append(e.txNew, !rtx)
}

// built records that the frame of s with sequence number seq is in the
// batch: the piggybacked ack it carries (of ackRS, if any) is sent, the
// frame is numbered for loss detection, and it is counted.
func (e *Engine) built(s *txStream, seq uint32, rtx bool, ackRS *rxStream) {
	if ackRS != nil {
		ackRS.ackState = ackNone
		ackRS.unacked = 0
	}
	s.txCount++
	s.txIdx[seq&(maxWindow-1)] = s.txCount
	if rtx {
		e.stats.DataRetransmitted++
	} else {
		e.stats.DataSent++
	}
}

// piggyback returns the flags of a data frame of s (its priority) and the
// ack of the reverse stream it carries, if one is due: then FlagAckValid,
// the cumulative ack and the stream whose ack it is (the caller clears its
// ack state once the frame is built).
func (e *Engine) piggyback(s *txStream) (wire.Flags, uint32, *rxStream) {
	fl := priFlags(s.pri)
	// A piggybacked ack names no session: none while the peer proposes a
	// new one (rs.pendSess), which may be the peer's current session
	// already (see onOpen).
	if rs := s.peer.rx[s.port][s.pri]; rs != nil && rs.valid && rs.ackState != ackNone && !rs.oooAny && !rs.dropped && rs.pendSess == 0 {
		return fl | wire.FlagAckValid, rs.rcvNxt - 1, rs
	}
	return fl, 0, nil
}

// addOne is addSegment for the frame of a message of one frame (DATA,
// sequence number seq) that starts a batch. It copies the stream's
// template of the frame, the last one addSegment built for it, and sets
// the fields that change from one message to the next, rather than
// building every field; the template serves while the destination MAC,
// this node's id and the session are those it was built for.
func (e *Engine) addOne(s *txStream, r *sendRec, seq uint32, ackReq bool) bool {
	key := frameKey{dst: s.peer.mac, node: e.cfg.NodeID, session: s.session, ok: true}
	first := e.queued == 0 && len(e.txFrames) == 0
	n := len(s.tmpl) + int(r.length)
	if r.kind != recMsg || !first || s.tmplFor != key || n > cap(e.txBufs[0]) {
		if !e.addSegment(s, r, 0, seq, false, ackReq) {
			return false
		}
		if r.kind == recMsg && first {
			// Built in txBufs[0] (the first frame of a batch).
			copy(s.tmpl[:], e.txBufs[0])
			s.tmplFor = key
		}
		return true
	}
	fl, ack, ackRS := e.piggyback(s)
	if ackReq {
		fl |= wire.FlagAckRequest
	}
	f := e.txBufs[0][:n]
	copy(f, s.tmpl[:])
	h := wire.Header(f[wire.EthHeaderLen:])
	h.SetFlags(fl)
	h.SetSize(r.size)
	h.SetSeq(seq)
	h.SetAck(ack)
	h.SetMsgLen(r.length)
	h.SetPayloadLen(int(r.length))
	copy(f[len(s.tmpl):], r.msg[:r.length])
	h.UpdateCRC()
	e.txBufs[0] = f
	e.buffered(f, seq, false)
	e.built(s, seq, false, ackRS)
	return true
}

// toSlots moves the single buffered frame of the batch into a
// transmit-ring slot, so that the batch continues in place. It reports
// false (and the batch stays buffered) if no slot is free.
func (e *Engine) toSlots() bool {
	buf := e.slot()
	if buf == nil {
		return false
	}
	n := copy(buf, e.txFrames[0])
	if e.commit(n) != nil {
		return false
	}
	e.queued = 1
	e.txFrames, e.txSeq, e.txNew = e.txFrames[:0], e.txSeq[:0], e.txNew[:0]
	return true
}

// commit queues the frame built in the slot slot() returned last. With a
// SlotNexter it also takes the next slot, which the next slot() call
// returns if no other call of the SlotOut came between (flush and kick
// forget it).
func (e *Engine) commit(n int) error {
	if e.slotsNext == nil {
		return e.slots.TxCommit(n)
	}
	buf, err := e.slotsNext.TxCommitNext(n)
	e.nextSlot = buf
	return err
}

// slot returns a free transmit-ring slot, kicking the queued frames out
// first if the ring is full, or nil.
func (e *Engine) slot() []byte {
	if buf := e.nextSlot; buf != nil {
		e.nextSlot = nil
		return buf
	}
	buf := e.slots.TxSlot()
	if buf == nil && e.queued > 0 {
		e.kick()
		buf = e.slots.TxSlot()
	}
	return buf
}

// kick starts transmission of the frames queued in the ring. On failure
// they stay queued (the next kick sends them) and the engine retries soon.
func (e *Engine) kick() {
	e.nextSlot = nil
	if e.slots.Flush() != nil {
		e.txBlock = true
		return
	}
	e.queued = 0
}

// batchFull reports whether the batch being built has batchMax frames.
func (e *Engine) batchFull() bool { return len(e.txFrames) == batchMax || e.queued >= batchMax }

// flush sends the batch; it reports false (and rewinds s) if the link took
// only part of it.
func (e *Engine) flush(s *txStream) bool {
	e.nextSlot = nil // only addFrame's next frame may use it
	if e.queued > 0 {
		e.kick()
	}
	n := len(e.txFrames)
	if n == 0 {
		return true
	}
	var sent int
	if n == 1 {
		if e.out.Send(e.txFrames[0]) == nil {
			sent = 1
		}
	} else {
		sent, _ = e.out.SendBatch(e.txFrames)
	}
	ok := true
	if sent < n {
		e.stats.PartialBatches++
		e.txBlock = true
		ok = false
		firstNew := -1
		for i := sent; i < n; i++ {
			if e.txNew[i] {
				firstNew = i
				break
			}
		}
		if !e.txNew[sent] {
			s.rtxNext = e.txSeq[sent]
			if diff(s.rtxEnd, s.rtxNext) < 0 {
				s.rtxEnd = s.rtxNext
			}
		}
		if firstNew >= 0 {
			s.nxt = e.txSeq[firstNew]
			if diff(s.rtxEnd, s.nxt) > 0 {
				s.rtxEnd = s.nxt
			}
		}
	}
	e.txFrames = e.txFrames[:0]
	e.txSeq = e.txSeq[:0]
	e.txNew = e.txNew[:0]
	return ok
}

// pump transmits what s may send now: pending retransmissions first, then
// new frames up to the window.
func (e *Engine) pump(now Time, s *txStream) {
	if s.disabled || e.txBlock {
		return
	}
	if s.opening {
		if !s.openSent && s.qLen > 0 {
			e.sendOpen(now, s)
		}
		return
	}
	if s.qLen == 1 && s.qAssigned == 0 && s.nxt == s.una && s.nxt == s.nextSeq && s.rtxNext == s.rtxEnd &&
		!s.probing && s.window > 0 && e.recs[s.q[s.qHead]].nseg == 1 {
		e.pumpOne(now, s)
		return
	}
	wasIdle := !e.outstanding(s)
	for diff(s.rtxNext, s.rtxEnd) < 0 {
		seq := s.rtxNext
		if diff(seq, s.nxt) >= 0 {
			s.rtxNext = s.rtxEnd
			s.rtxAll = false
			break
		}
		s.rtxNext++
		if diff(seq, s.una) < 0 || s.sacked.get(seq) {
			continue
		}
		if !s.rtxAll && int32(s.txIdx[seq&(maxWindow-1)]-s.lostBefore) >= 0 {
			continue // sent after the newest acked frame: not known lost
		}
		ok := e.addFrame(s, seq, true, s.rtxNext == s.rtxEnd)
		if !ok && e.txBlock {
			s.rtxNext = seq // not sent: the link is full
			return
		}
		if ok {
			e.resent(now, s, seq)
		}
		if e.batchFull() && !e.flush(s) {
			return
		}
	}
	if s.rtxNext == s.rtxEnd {
		s.rtxAll = false
	}
	w := s.cwnd()
	for s.qAssigned < s.qLen || diff(s.nxt, s.nextSeq) < 0 {
		if s.probing && (now < s.backoffUntil || s.nxt != s.una) {
			break
		}
		if diff(s.nxt, s.una) >= w {
			break
		}
		seq := s.nxt
		if !e.addFrame(s, seq, false, s.probing || diff(seq+1, s.una) >= w) {
			break
		}
		s.nxt++
		if diff(s.nxt, s.hiSent) > 0 {
			s.hiSent = s.nxt
		}
		if !s.rttValid {
			e.startSample(now, s, seq)
		}
		if s.probing {
			e.trace(now, trProbe, s.peer.node, s.port, s.pri, s.isn, seq, s.nxt, 0, 0, s.lastHeard)
			break
		}
		if e.batchFull() && !e.flush(s) {
			break
		}
	}
	e.flush(s)
	if wasIdle && e.outstanding(s) {
		s.rtoAt = now + s.rto
	}
}

// pumpOne is pump for the usual send of a latency-bound application: one
// message of one frame queued on an idle stream of an established session
// (nothing in flight, nothing to resend, not probing). It numbers the
// message and sends its frame, as pump's loops would, without them.
func (e *Engine) pumpOne(now Time, s *txStream) {
	r := &e.recs[s.q[s.qHead]]
	seq := s.nxt
	r.firstSeq = seq
	s.nextSeq = seq + 1
	s.qAssigned, s.cursor = 1, 0
	if e.addOne(s, r, seq, s.window <= 1) {
		s.nxt++
		if diff(s.nxt, s.hiSent) > 0 {
			s.hiSent = s.nxt
		}
		if !s.rttValid {
			e.startSample(now, s, seq)
		}
	}
	e.flush(s)
	if e.outstanding(s) {
		s.rtoAt = now + s.rto
	}
}

func (e *Engine) baseRTO() time.Duration {
	return e.cfg.InitialRTO
}

func (e *Engine) clampRTO(d time.Duration) time.Duration {
	if d < e.cfg.MinRTO {
		d = e.cfg.MinRTO
	}
	if d > e.cfg.MaxRTO {
		d = e.cfg.MaxRTO
	}
	return d
}

// startSample makes seq, just sent, the frame of s's next round-trip
// sample, if a sample may start (see Config.Clock).
func (e *Engine) startSample(now Time, s *txStream, seq uint32) {
	if e.cfg.Clock == nil {
		s.rttValid, s.rttSeq, s.rttTime = true, seq, now
		return
	}
	// A coarse now against the precise start of the last sample: the gap
	// is at least SampleGap, and the first sample is never held back.
	if s.srtt != 0 && now-s.rttTime < e.cfg.SampleGap {
		return
	}
	s.rttValid, s.rttSeq, s.rttTime = true, seq, e.cfg.Clock()
}

// sampleEnd is the time at which an ack ends a round-trip sample.
func (e *Engine) sampleEnd(now Time) Time {
	if e.cfg.Clock == nil {
		return now
	}
	return e.cfg.Clock()
}

// advance processes a cumulative ack that moves una to newUna.
func (e *Engine) advance(now Time, s *txStream, newUna uint32) {
	if s.rttValid && diff(newUna, s.rttSeq) > 0 {
		sample := e.sampleEnd(now) - s.rttTime
		if s.peer.cc.lossy {
			e.ccRTT(now, s, sample)
		} else {
			s.sampled(now, sample)
		}
		if s.srtt == 0 {
			s.srtt, s.rttvar = sample, sample/2
		} else {
			d := s.srtt - sample
			if d < 0 {
				d = -d
			}
			s.rttvar = (3*s.rttvar + d) / 4
			s.srtt = (7*s.srtt + sample) / 8
		}
		s.rttValid = false
	}
	if s.srtt != 0 {
		s.rto = e.clampRTO(s.srtt + 4*s.rttvar + e.cfg.MaxAckDelay)
	} else {
		s.rto = e.baseRTO()
	}
	if s.peer.cc.cwnd < int32(e.cfg.Window) {
		e.ccAcked(now, s, diff(newUna, s.una))
	}
	if uint32(diff(newUna, s.una)) >= maxWindow {
		s.sacked.reset()
	} else {
		for q := s.una; q != newUna; q++ {
			if !s.sacked.get(q) {
				s.noteAcked(s.txIdx[q&(maxWindow-1)])
			}
			s.sacked.clr(q)
		}
	}
	s.una = newUna
	s.lastAdvance = now
	if diff(s.nxt, s.una) < 0 {
		s.nxt = s.una
	}
	if diff(s.rtxNext, s.una) < 0 {
		s.rtxNext = s.una
	}
	if diff(s.rtxEnd, s.rtxNext) < 0 {
		s.rtxEnd = s.rtxNext
	}
	for s.qAssigned > 0 {
		r := &e.recs[s.q[s.qHead]]
		if diff(s.una, r.firstSeq+r.nseg) < 0 {
			break
		}
		e.complete(e.popHead(s), StatusSuccess)
	}
	switch {
	case !s.noBuf:
		s.probing, s.backoff = false, 0 // the session's first frame was acked
	case diff(s.una, s.noBufSeq) > 0:
		// The refused message's first frame got through: a buffer is bound.
		e.trace(now, trNoBufClear, s.peer.node, s.port, s.pri, s.isn, newUna, s.nxt, 0, 0, s.lastHeard)
		s.probing, s.noBuf, s.backoff = false, false, 0
	case s.una == s.noBufSeq:
		// Every earlier message is through; the refused one is now the
		// oldest, and only now does the receiver's lack of a buffer count
		// against the progress timeout. The probe goes out when the back-off
		// allows (at the latest at the progress deadline).
		s.noBufSince = now
		s.backoffUntil = min(s.backoffUntil, now+s.backoff)
	}
	s.rtoAt = now + s.rto
}

// reorderSlack is how many later transmissions must be acked before an
// unacked frame counts as lost.
const reorderSlack = 3

// noteAcked records that the frame sent as transmission tx was acked.
func (s *txStream) noteAcked(tx uint32) {
	if lb := tx - reorderSlack; int32(lb-s.lostBefore) > 0 {
		s.lostBefore = lb
	}
}

// onAckValue processes a cumulative ack value (from an ACK or piggybacked).
func (e *Engine) onAckValue(now Time, s *txStream, ack uint32) {
	n := ack + 1
	if diff(n, s.una) > 0 && diff(n, s.hiSent) <= 0 {
		e.advance(now, s, n)
	}
}

func (e *Engine) onAck(now Time, s *txStream, h wire.Header) {
	e.stats.AcksReceived++
	s.lastHeard = now
	ack := h.Ack()
	e.onAckValue(now, s, ack)
	hold := s.srtt
	if hold < 500*time.Microsecond {
		hold = 500 * time.Microsecond
	}
	if sack := h.Payload(); len(sack) > 0 {
		hi := uint32(0)
		any := false
		for i, b := range sack {
			for b != 0 {
				bit := uint32(0)
				for b&(1<<bit) == 0 {
					bit++
				}
				b &^= 1 << bit
				seq := ack + 1 + uint32(i)*8 + bit
				if diff(seq, s.una) >= 0 && diff(seq, s.hiSent) < 0 && diff(seq, s.una) < maxWindow {
					if !s.sacked.get(seq) {
						s.sacked.set(seq)
						s.noteAcked(s.txIdx[seq&(maxWindow-1)])
					}
					any = true
					hi = seq
				}
			}
		}
		if any {
			// Every unacked frame below the highest selectively acked one
			// that was sent before the newest acked frame is lost: resend
			// it (pump skips the others).
			if s.rtxNext == s.rtxEnd || diff(s.una, s.rtxNext) < 0 {
				s.rtxNext = s.una
			}
			if diff(hi, s.rtxEnd) > 0 {
				s.rtxEnd = hi
			}
			s.rtxNext = s.una
			s.rtxAll = false
			s.rtxCause = causeLoss
		}
	}
	// The probe of a retransmission timeout (the newest unacknowledged
	// frame, resent alone) was acknowledged: in a network that keeps the
	// order of frames, every frame sent before it and still unacknowledged
	// is lost (often the whole tail of a burst, which selective acks
	// cannot show). Resend those (pump skips the others). Whether the ack
	// answers the probe or the frame's first transmission does not matter:
	// an ack describes every frame the receiver had read before the frame
	// it acknowledges, so what it leaves out is lost either way. (Probing
	// the oldest frame instead would not have that property: a merely late
	// ack of its first transmission would make the sender resend every
	// frame after it, a window of duplicates.)
	if s.rtoProbe && (diff(s.una, s.rtoSeq) > 0 || s.sacked.get(s.rtoSeq)) {
		s.rtoProbe = false
		if tx := s.txIdx[s.rtoSeq&(maxWindow-1)]; int32(tx-s.lostBefore) > 0 {
			s.lostBefore = tx
		}
		if e.outstanding(s) {
			s.rtxNext = s.una
			if diff(s.nxt, s.rtxEnd) > 0 {
				s.rtxEnd = s.nxt
			}
			s.rtxAll = false
			s.rtxCause = causeLoss
		}
	}
	if h.Flags()&wire.FlagRetransmit != 0 && now >= s.fastHold && e.outstanding(s) {
		e.trace(now, trGoBack, s.peer.node, s.port, s.pri, s.isn, s.una, s.nxt, 0, 0, s.lastHeard)
		s.rtxNext = s.una
		if diff(s.nxt, s.rtxEnd) > 0 {
			s.rtxEnd = s.nxt
		}
		s.rtxAll = true
		s.rtxCause = causeGoBack
		s.fastHold = now + hold
	}
	// What the ack allows goes out in Pump or Tick, after the batch of
	// input: the acks of one batch then release one larger burst of frames
	// (one kick of the transmit ring) instead of a small one each.
}

func (e *Engine) onNack(now Time, s *txStream, h wire.Header) {
	e.stats.NacksReceived++
	st := &e.stats
	countNack(wire.NackReason(h.Status()), &st.NacksReceivedNoBuffer, &st.NacksReceivedRejected, &st.NacksReceivedPortClosed, &st.NacksReceivedStaleSession)
	s.lastHeard = now
	if s.opening {
		// Nothing of the proposed session was sent: the only refusal that
		// can concern it is that of its OPEN by a closed port.
		if wire.NackReason(h.Status()) == wire.NackPortClosed && !s.disabled {
			e.fail(now, s, StatusTargetPortClosed)
		}
		return
	}
	if h.Flags()&wire.FlagAckValid != 0 {
		e.onAckValue(now, s, h.Ack())
		if wire.NackReason(h.Status()) == wire.NackPortClosed {
			// The receiver's last word (Close): it delivered nothing of
			// the session beyond this ack, and never will.
			s.finalAck = true
		}
	}
	q := h.Seq()
	e.trace(now, trNackRecv, s.peer.node, s.port, s.pri, s.isn, q, s.una, s.nxt, uint32(h.Status()), s.lastHeard)
	if s.disabled || diff(q, s.una) < 0 || diff(q, s.hiSent) >= 0 {
		return
	}
	switch wire.NackReason(h.Status()) {
	case wire.NackNoBuffer:
		e.onNoBuffer(now, s, q)
	case wire.NackRejected:
		if q == s.una {
			e.fail(now, s, StatusSendRejected)
		}
	case wire.NackPortClosed:
		e.fail(now, s, StatusTargetPortClosed)
	case wire.NackStaleSession:
		// The receiver does not follow this session (it restarted, or the
		// session was displaced, or left after an OPEN it answered). A new
		// session is opened; its OPEN_ACK says which messages of this one
		// the receiver delivered, so none is sent twice.
		e.open(now, s)
		e.pump(now, s)
	}
}

// sendOpen sends the OPEN of the session s proposes, naming the session it
// leaves, and sets the timer that repeats it.
func (e *Engine) sendOpen(now Time, s *txStream) {
	p := s.peer
	fl := priFlags(s.pri)
	e.hdr = wire.HeaderFields{
		Type: wire.TypeOpen, TargetPort: s.port, SourcePort: e.cfg.Port, Flags: fl,
		TargetNode: p.node, SourceNode: e.cfg.NodeID, Session: s.session, Ack: s.prevSess,
	}
	e.ctrlBuf = wire.AppendFrame(e.ctrlBuf[:0], p.mac, e.cfg.MAC, e.cfg.EtherType, &e.hdr, nil)
	s.openSent = true
	s.rtoAt = now + s.rto
	e.stats.OpensSent++
	_ = e.out.Send(e.ctrlBuf) // if it fails, the timer repeats it
}

// onOpenAck processes the receiver's answer to the OPEN of s's proposed
// session: with FlagAckValid, the cumulative ack of the session s left,
// which completes (with StatusSuccess) every queued message the receiver
// delivered in it, so that the new session never sends one again; then the
// new session starts at the sequence number the receiver chose.
//
// Without FlagAckValid the receiver does not know the session s left: the
// port was closed and opened again (a new incarnation), or its identity
// changed. What the incarnation that followed that session delivered
// unacknowledged is unknown, and it must not reach the new one: see
// orphan.
func (e *Engine) onOpenAck(now Time, s *txStream, h wire.Header) {
	s.lastHeard = now
	failed := false
	if s.prevSess != 0 && h.Flags()&wire.FlagAckValid != 0 {
		// The queue still holds the previous session's numbers.
		if n := h.Ack() + 1; diff(n, s.una) > 0 && diff(n, s.hiSent) <= 0 {
			s.una = n
			for s.qAssigned > 0 {
				r := &e.recs[s.q[s.qHead]]
				if diff(n, r.firstSeq+r.nseg) < 0 {
					break
				}
				e.complete(e.popHead(s), StatusSuccess)
			}
		}
	} else if s.prevSess != 0 {
		failed = e.orphan(now, s)
	}
	e.established(now, s, h.Seq())
	s.window = int32(e.sendWindow(h.MsgLen()))
	e.trace(now, trEstablished, s.peer.node, s.port, s.pri, s.isn, s.session, s.isn, 0, 0, s.lastHeard)
	if failed {
		// As after any send error: the held sends wait for Resume or
		// Drop (the next Resume opens another session, in which nothing
		// was sent yet).
		s.disabled = true
		return
	}
	if s.qLen > 0 {
		e.activate(s)
		e.pump(now, s)
	}
}

// sendWindow returns the window of a stream whose receiver advertised adv
// frames in its OPEN_ACK (the frame's msglen field): the minimum of Window
// and adv; for adv 0 (a receiver that predates the advertisement, or knows
// no bound), of Window and this port's own RecvWindow, if any: the receiver
// is assumed to take what this port takes.
func (e *Engine) sendWindow(adv uint32) int {
	w := e.cfg.Window
	if adv == 0 {
		adv = uint32(e.cfg.RecvWindow)
	}
	if adv > 0 && adv < uint32(w) {
		w = int(adv)
	}
	return w
}

// orphan settles, when a new incarnation of s's receiver answers s's OPEN
// (it does not know the session s leaves), what s sent to the one before
// it, which is gone:
//
//   - each queued message, put or get of which at least one frame went out
//     in the session left may have been delivered there (the
//     acknowledgement lost with the process); it completes with an error
//     status and is never sent to the new incarnation: StatusTargetNodeUnreached
//     if that is how the stream last failed (no answer at all), else
//     StatusTargetPortClosed (the port it went to closed). Unless the old
//     incarnation told its final ack when it closed (finalAck): then
//     nothing unacknowledged was delivered, and everything queued goes to
//     the new incarnation. Messages never transmitted go ahead in any case;
//   - every reply (GOT) still queued, sent or not, is dropped (no
//     callback): it may answer a get of the old incarnation (dropGots);
//   - a get that the old incarnation acknowledged and whose data did not
//     all arrive will never get it: it completes with the same status.
//
// It reports whether a send completed with an error (then s is disabled,
// as after any send error).
func (e *Engine) orphan(now Time, s *txStream) bool {
	st := StatusTargetPortClosed
	if s.failSt == StatusTargetNodeUnreached {
		st = s.failSt
	}
	n := uint32(0)
	if rd := e.rdma; rd != nil {
		// Sent before anything still queued: they complete first, in the
		// order they were issued.
		var ops []*getOp
		for _, op := range rd.gets {
			if op.node == s.peer.node && op.port == s.port && op.pri == s.pri && op.acked && !op.done && !op.dead {
				ops = append(ops, op)
			}
		}
		slices.SortFunc(ops, func(a, b *getOp) int { return int(diff(a.id<<8, b.id<<8)) })
		for _, op := range ops {
			rd.dropGet(op)
			e.complete(op.rec, st)
			n++
		}
	}
	for !s.finalAck && s.qAssigned > 0 && diff(e.recs[s.q[s.qHead]].firstSeq, s.hiSent) < 0 {
		i := e.popHead(s)
		if e.recs[i].kind == recGot {
			e.complete(i, StatusSendDropped)
			continue
		}
		e.complete(i, st)
		n++
	}
	e.dropGots(s)
	e.trace(now, trOrphan, s.peer.node, s.port, s.pri, s.isn, s.una, s.hiSent, n, uint32(st), s.lastHeard)
	return n > 0
}

// Bounds of the back-off between probes of a message refused for lack of a
// receive buffer.
const (
	minProbeBackoff = 200 * time.Microsecond
	maxProbeBackoff = 50 * time.Millisecond
)

// onNoBuffer handles a NackNoBuffer for the message starting at q (una <= q
// < hiSent).
//
// The receiver refuses every frame of the message that reaches it without a
// buffer, so one round of transmissions yields up to a window of refusals
// for the same q, arriving over a long time when the receiver is slow.
// Only the first refusal of a round counts: it rewinds the stream to q and
// starts probing (the message's first frame alone, after a back-off). The
// refusals of frames sent before that rewind (q >= nxt: nothing from q on is
// in flight) change nothing: they neither push the probe out nor grow the
// back-off, so a stream of refusals can never starve the probe or the
// progress timeout. A refusal arriving while a probe is in flight is the
// probe's answer: the back-off doubles, and once the message has been the
// oldest unacknowledged one for ProgressTimeout the send fails with
// StatusSendTimedOut. Probes are timed so that one goes out at that
// deadline, so the decision is always based on a refusal of a probe sent at
// or after it.
func (e *Engine) onNoBuffer(now Time, s *txStream, q uint32) {
	if diff(q, s.nxt) >= 0 {
		return // nothing from q on is in flight: a refusal of an earlier round
	}
	probeAnswer := s.noBuf && q == s.noBufSeq
	s.nxt = q
	if diff(s.rtxEnd, q) > 0 {
		s.rtxEnd = q // lost frames before q are still resent
	}
	if diff(s.rtxNext, s.rtxEnd) > 0 {
		s.rtxNext = s.rtxEnd
	}
	s.rttValid = false
	s.probing = true
	if !probeAnswer {
		s.noBuf, s.noBufSeq, s.noBufSince = true, q, now
		s.backoff = max(minProbeBackoff, min(maxProbeBackoff, 2*s.srtt))
	} else {
		if s.una == q && now-s.noBufSince >= e.cfg.ProgressTimeout {
			e.fail(now, s, StatusSendTimedOut)
			return
		}
		s.backoff = min(2*s.backoff, maxProbeBackoff)
	}
	s.backoffUntil = now + s.backoff
	if s.una == q {
		s.backoffUntil = min(s.backoffUntil, s.noBufSince+e.cfg.ProgressTimeout)
	}
}

// fail completes the stream's head message with st and disables the stream.
// The messages held behind it keep their sequence numbers: the session that
// Resume opens learns from the receiver which of them it delivered.
func (e *Engine) fail(now Time, s *txStream, st Status) {
	e.trace(now, trFail, s.peer.node, s.port, s.pri, s.isn, s.una, s.nxt, 0, uint32(st), s.lastHeard)
	if s.qLen > 0 {
		e.complete(e.popHead(s), st)
	}
	s.disabled = true
	s.failSt = st
	s.cursor = 0
	s.probing, s.noBuf = false, false
	s.nxt = s.una
	s.rtxNext, s.rtxEnd = s.una, s.una
}

// Tick runs the timers that are due, sends due acks and transmits what the
// windows allow. Call it whenever NextDeadline has passed (after a batch
// of Input calls that emptied the link, Pump does the rest), but only once
// every frame received before now has been given to Input: the timers
// judge the peer (no answer for LivenessTimeout fails the stream) and
// must not do so while its answers wait unread in the link, as they can
// for a long time on a loaded machine. After a batch that may have left
// frames in the link, call Pump instead.
func (e *Engine) Tick(now Time) {
	e.txBlock = false
	e.pruneActive()
	for _, s := range e.active {
		if s.opening {
			// The OPEN is repeated until answered; without any answer for
			// LivenessTimeout the stream fails.
			if now-s.lastHeard > e.cfg.LivenessTimeout {
				e.stats.Timeouts++
				e.fail(now, s, StatusTargetNodeUnreached)
				continue
			}
			if s.openSent && now >= s.rtoAt {
				s.openSent = false
				s.rto = e.clampRTO(2 * s.rto)
			}
			e.pump(now, s)
			continue
		}
		// The stream has work (qLen > 0): without any answer from the peer
		// for LivenessTimeout it fails, whether frames are in flight, a
		// probe waits for its back-off, or the link refuses to send.
		if now-s.lastHeard > e.cfg.LivenessTimeout {
			e.stats.Timeouts++
			e.fail(now, s, StatusTargetNodeUnreached)
			continue
		}
		// Answers that never move the stream (acks that do not advance, a
		// frame the receiver keeps dropping) must not keep it alive
		// forever either. A message waiting at the head for a buffer is
		// bounded by onNoBuffer instead.
		if e.stallBounded(s) && now-s.lastAdvance > e.stallTimeout() {
			e.fail(now, s, StatusSendTimedOut)
			continue
		}
		if e.outstanding(s) && now >= s.rtoAt {
			e.trace(now, trRTO, s.peer.node, s.port, s.pri, s.isn, s.una, s.nxt, 0, uint32(s.rto/time.Millisecond), s.lastHeard)
			e.stats.Timeouts++
			// Resend only the newest unacknowledged frame, asking for an
			// ack: the answer's cumulative and selective acks show what
			// else is lost (see onAck). After a timeout that was only a
			// slow or descheduled receiver, resending the whole window
			// would cost up to Window duplicate frames. If the previous
			// probe went unanswered, resend the oldest frame instead
			// (whatever state the receiver is in, that one is answered),
			// and the newest again on the next timeout.
			q := e.newestUnacked(s)
			if s.rtoProbe {
				q = s.una
			}
			s.rtxNext = q
			s.rtxEnd = q + 1
			s.rtxAll = true
			s.rtxCause = causeTimeout
			s.rtoProbe, s.rtoSeq = !s.rtoProbe, q
			s.rto = e.clampRTO(2 * s.rto)
			s.rtoAt = now + s.rto
			s.rttValid = false
		}
		e.pump(now, s)
	}
	e.rdmaTick(now) // get timeouts, streams a failed GOT disabled (rdma.go)
	if e.queued > 0 {
		e.kick() // frames a failed kick left in the ring
	}
	e.flushAcks(now, false)
	e.setDeadline(now)
}

// pruneActive drops from the active list the streams that have nothing
// left to do: disabled, or with nothing queued and nothing in flight.
func (e *Engine) pruneActive() {
	j := 0
	for _, s := range e.active {
		if s.disabled || (s.qLen == 0 && !e.outstanding(s)) {
			s.active = false
			continue
		}
		e.active[j] = s
		j++
	}
	// Usually one stream leaves (a message acked): a store per pointer
	// costs less than clear's call into the runtime.
	for k := j; k < len(e.active); k++ {
		e.active[k] = nil
	}
	e.active = e.active[:j]
}

// newestUnacked returns the newest frame in flight on s that is neither
// cumulatively nor selectively acknowledged (s has frames in flight).
func (e *Engine) newestUnacked(s *txStream) uint32 {
	for q := s.nxt - 1; q != s.una; q-- {
		if !s.sacked.get(q) {
			return q
		}
	}
	return s.una
}

// stallBounded tells whether the stall timeout applies to s: frames are in
// flight and the oldest is not a message the receiver refused for want of a
// buffer (onNoBuffer bounds that one with the progress timeout). Tick and
// setDeadline must agree on it: a deadline that Tick does not act on would
// be due forever.
func (e *Engine) stallBounded(s *txStream) bool {
	return e.outstanding(s) && !(s.noBuf && s.una == s.noBufSeq)
}

// stallTimeout is how long frames may stay in flight without the oldest
// being acknowledged, while the peer answers, before the send fails with
// StatusSendTimedOut: the larger of the progress and liveness timeouts.
func (e *Engine) stallTimeout() time.Duration {
	return max(e.cfg.ProgressTimeout, e.cfg.LivenessTimeout)
}

// Pump sends the acks that are due and transmits what the windows allow,
// without running the timers. Call it after a batch of Input calls when more
// frames may be waiting in the link (see Tick), or after one that emptied
// the link while NextDeadline has not passed: no timer is due then, and
// Pump leaves the timers' state alone. Like Tick, it drops the streams
// that have nothing left to do from the active list.
func (e *Engine) Pump(now Time) {
	e.txBlock = false
	e.pruneActive()
	for _, s := range e.active {
		if s.qLen > 0 {
			e.pump(now, s)
		}
	}
	if e.queued > 0 {
		e.kick()
	}
	e.flushAcks(now, false)
	e.setDeadline(now)
}

// flushAcks sends the acks that are due (all immediate ones; delayed ones
// whose time has come, or every pending one if force).
func (e *Engine) flushAcks(now Time, force bool) {
	j := 0
	for _, rs := range e.ackList {
		if rs.ackState == ackNow || (rs.ackState == ackDelayed && (force || now >= rs.ackDue)) {
			e.sendAck(rs)
		}
		if rs.ackState == ackNone {
			rs.inAck = false
			continue
		}
		e.ackList[j] = rs
		j++
	}
	for k := j; k < len(e.ackList); k++ {
		e.ackList[k] = nil
	}
	e.ackList = e.ackList[:j]
}

func (e *Engine) setDeadline(now Time) {
	// d is the earliest deadline; 0 (none) compares as the latest.
	const none = Time(1<<63 - 1)
	d := none
	for _, s := range e.active {
		if s.disabled {
			continue
		}
		if s.qLen > 0 {
			d = earlier(d, s.lastHeard+e.cfg.LivenessTimeout+1)
		}
		if s.opening {
			if s.openSent && s.qLen > 0 {
				d = earlier(d, s.rtoAt)
			}
		} else if e.outstanding(s) {
			d = earlier(d, s.rtoAt)
			if e.stallBounded(s) {
				d = earlier(d, s.lastAdvance+e.stallTimeout()+1)
			}
		} else if s.probing && s.qLen > 0 && s.backoffUntil > now {
			d = earlier(d, s.backoffUntil)
		}
	}
	for _, rs := range e.ackList {
		if rs.ackState == ackNow {
			d = earlier(d, now)
		} else if rs.ackState == ackDelayed {
			d = earlier(d, rs.ackDue)
		}
	}
	if e.txBlock {
		d = earlier(d, now+50*time.Microsecond)
	}
	if e.rdma != nil {
		d = earlier(d, e.rdmaDeadline()) // rdma.go
	}
	if d == none {
		d = 0
	}
	e.deadline = d
}

// earlier returns the earlier of deadline d and time t; a t of 0 or less
// is no deadline.
func earlier(d, t Time) Time {
	if t > 0 && t < d {
		return t
	}
	return d
}
