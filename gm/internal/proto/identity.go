package proto

// ResetPeer forgets everything in progress with node, whose identity the
// node map changed (another host, MAC or name now holds the id, or the id
// left the map), so that nothing in flight is delivered to or from the
// wrong host:
//
//   - every send, put and get queued or in flight to node completes with st
//     (a GM error status, normally StatusTargetNodeUnreached), and each
//     stream that so reported an error is disabled, as after any send
//     error: sends to node are held until Resume or Drop, which start a new
//     session with a fresh handshake (with the host the map now names);
//   - a get whose request node acknowledged and whose data has not all
//     arrived completes with st, and later data for it is discarded;
//   - replies to node's gets (GOT) are dropped without a callback;
//   - the receive streams from node forget their sessions, the sessions
//     they left and the messages being reassembled: no frame of a session
//     of the old identity is delivered, and a new session needs the
//     handshake (whose OPEN_ACK goes to the MAC the map now gives).
//
// The cached MAC of node is forgotten too. Receive events already queued
// stay: those messages arrived before the change, from the host the map
// then named. ResetPeer does nothing for a node the engine never used.
func (e *Engine) ResetPeer(now Time, node uint32, st Status) {
	if int(node) >= len(e.peers) || e.peers[node] == nil {
		return
	}
	p := e.peers[node]
	p.macOK, p.srcOK = false, false
	e.ccInit(p) // another host, or another path
	for port := range p.tx {
		for _, s := range p.tx[port] {
			if s != nil {
				e.resetTx(now, s, st)
			}
		}
	}
	for port := range p.rx {
		for _, rs := range p.rx[port] {
			if rs != nil {
				e.resetRx(rs)
			}
		}
	}
	if rd := e.rdma; rd != nil {
		for _, op := range rd.gets {
			if op.node == node && op.acked && !op.dead {
				rd.dropGet(op)
				e.complete(op.rec, st)
			}
		}
		// A GOT that failed earlier asked Tick to re-enable its stream: a
		// stream reset here stays as ResetPeer left it.
		j := 0
		for _, s := range rd.resume {
			if s.peer != p {
				rd.resume[j] = s
				j++
			}
		}
		clear(rd.resume[j:])
		rd.resume = rd.resume[:j]
	}
	e.stats.PeerResets++
	e.setDeadline(now)
}

// ResetAll is ResetPeer for every peer: this port's own identity changed
// (its node id), so every session it has names the wrong node.
func (e *Engine) ResetAll(now Time, st Status) {
	for node, p := range e.peers {
		if p != nil {
			e.ResetPeer(now, uint32(node), st)
		}
	}
}

// resetTx completes everything queued on s with st (a GOT, which has no
// callback, as dropped), disables s if that reported an error, and starts a
// fresh session proposal that names no previous session: the host now
// behind the node id knows none of s's sessions.
func (e *Engine) resetTx(now Time, s *txStream, st Status) {
	failed := false
	for s.qLen > 0 {
		i := e.popHead(s)
		if e.recs[i].kind == recGot {
			e.complete(i, StatusSendDropped)
			continue
		}
		e.complete(i, st)
		failed = true
	}
	e.trace(now, trFail, s.peer.node, s.port, s.pri, s.isn, s.una, s.nxt, 0, uint32(st), s.lastHeard)
	s.opening, s.session = false, 0
	e.open(now, s)
	s.qAssigned, s.cursor = 0, 0
	s.sacked.reset()
	s.nextSeq, s.hiSent = s.una, s.una
	if failed {
		s.disabled = true
	}
}

// resetRx makes rs as new: no session, no session left, no handshake
// pending, nothing being reassembled.
func (e *Engine) resetRx(rs *rxStream) {
	e.leave(rs)
	rs.retired, rs.retN = [len(rs.retired)]retiredSession{}, 0
	rs.session, rs.isn, rs.rcvNxt = 0, 0, 0
	rs.pendSess, rs.pendSeq = 0, 0
	rs.segLen = 0
	rs.lastNackSeq, rs.lastNackReason, rs.staleNackAt = 0, 0, 0
}

// ResetChanged calls ResetPeer for every peer the engine knows for which
// changed reports true (the node map changed its identity).
func (e *Engine) ResetChanged(now Time, st Status, changed func(node uint32) bool) {
	for node, p := range e.peers {
		if p != nil && changed(uint32(node)) {
			e.ResetPeer(now, uint32(node), st)
		}
	}
}
