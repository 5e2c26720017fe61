package proto

import (
	"fmt"
	"strings"
	"time"
)

// Dump describes the engine's state at now for diagnostics: every sending
// stream (sequence numbers relative to the session's initial one, frames in
// flight, retransmission range, probe and back-off state, timers relative
// to now), every receiving stream, pending acks, queued events and
// completions. It allocates; it is meant for test failures and debugging
// tools, not for the data path.
func (e *Engine) Dump(now Time) string {
	var b strings.Builder
	rel := func(t Time) string {
		if t == 0 {
			return "-"
		}
		return fmt.Sprintf("%+v", time.Duration(t-now))
	}
	fmt.Fprintf(&b, "engine node %d port %d at %v: deadline %s, events %d, completions %d, send tokens %d/%d free, receive tokens %d/%d free, txBlock %v\n",
		e.cfg.NodeID, e.cfg.Port, time.Duration(now), rel(e.deadline), e.evLen, e.compN,
		e.sendTokens.Free(), e.sendTokens.Total(), e.pools.Tokens().Free(), e.pools.Tokens().Total(), e.txBlock)
	fmt.Fprintf(&b, "  stats %+v\n", e.stats)
	for _, p := range e.peers {
		if p == nil {
			continue
		}
		for port := range p.tx {
			for pri, s := range p.tx[port] {
				if s == nil {
					continue
				}
				base := s.isn
				r := func(q uint32) int32 { return diff(q, base) }
				fmt.Fprintf(&b, "  tx -> node %d port %d pri %d: session %08x una %d nxt %d nextSeq %d hiSent %d inflight %d/%d rtx [%d,%d) all=%v queued %d assigned %d",
					p.node, port, pri, s.session, r(s.una), r(s.nxt), r(s.nextSeq), r(s.hiSent), diff(s.nxt, s.una), s.window,
					r(s.rtxNext), r(s.rtxEnd), s.rtxAll, s.qLen, s.qAssigned)
				fmt.Fprintf(&b, " opening %v (sent %v, leaving %08x)", s.opening, s.openSent, s.prevSess)
				fmt.Fprintf(&b, " disabled %v active %v probing %v noBuf %v (since %s) backoff %v until %s rto %v at %s srtt %v lastHeard %s fastHold %s txCount %d lostBefore %d",
					s.disabled, s.active, s.probing, s.noBuf, rel(s.noBufSince), s.backoff, rel(s.backoffUntil),
					s.rto, rel(s.rtoAt), s.srtt, rel(s.lastHeard), rel(s.fastHold), s.txCount, s.lostBefore)
				c := &p.cc
				fmt.Fprintf(&b, " cwnd %d ssthresh %d minRTT %v lastRTT %v lossy %v over %v competitive %v lastCut %s\n", c.cwnd, c.ssthresh, s.minRTT, s.lastRTT, c.lossy, c.over, c.competitive, rel(c.lastCut))
				for i := 0; i < s.qLen && i < 8; i++ {
					m := &e.recs[s.q[(s.qHead+i)%qCap]]
					fmt.Fprintf(&b, "    msg %d: size %d len %d nseg %d", i, m.size, m.length, m.nseg)
					if i < s.qAssigned {
						fmt.Fprintf(&b, " first %d", r(m.firstSeq))
					}
					b.WriteByte('\n')
				}
			}
		}
		for port := range p.rx {
			for pri, rs := range p.rx[port] {
				if rs == nil {
					continue
				}
				base := rs.isn
				fmt.Fprintf(&b, "  rx <- node %d port %d pri %d: valid %v session %08x rcvNxt %d ooo %v (hi %d) reassembling %d dropped %v ack %d due %s unacked %d segLen %d pending %08x retired %v\n",
					p.node, port, pri, rs.valid, rs.session, diff(rs.rcvNxt, base), rs.oooAny, diff(rs.oooHi, base),
					rs.mLen, rs.dropped, rs.ackState, rel(rs.ackDue), rs.unacked, rs.segLen, rs.pendSess, rs.retired[:rs.retN])
				for i := 0; i < rs.mLen && i < 8; i++ {
					m := &rs.msgs[(rs.mHead+i)%rxMsgs]
					fmt.Fprintf(&b, "    msg %d: start %d nseg %d size %d len %d\n", i, diff(m.start, base), m.nseg, m.size, m.msgLen)
				}
			}
		}
	}
	e.rdmaDump(&b, now) // rdma.go
	e.dumpTrace(&b, now)
	return b.String()
}

// traceKind names an entry of the engine's trace ring.
type traceKind uint8

const (
	trNackRecv    traceKind = iota + 1 // a = nack seq, b = una, c = nxt, d = reason
	trRTO                              // a = una, b = nxt, d = rto in ms
	trGoBack                           // ack with FlagRetransmit honoured: a = una, b = nxt
	trFail                             // a = una, b = nxt, d = status
	trSession                          // new session: a = new session, b = old session
	trNackSent                         // a = seq, b = rcvNxt, d = reason
	trDropGoBack                       // receiver dropped a frame and asks for go-back: a = seq, b = rcvNxt
	trProbe                            // a = seq
	trNoBufClear                       // an advance cleared the no-buffer state: a = new una, b = nxt
	trEstablished                      // sender: OPEN_ACK, the session starts: a = session, b = its first seq
	trAdopt                            // receiver: a confirmed session's first frame: a = session, b = its first seq
	trOrphan                           // sender: a new receiver incarnation: a = una, b = hiSent of the session left, c = sends failed, d = status
)

var traceNames = [...]string{
	trNackRecv: "nack-recv", trRTO: "rto", trGoBack: "go-back", trFail: "FAIL",
	trSession: "new-session", trNackSent: "nack-sent", trDropGoBack: "drop-go-back", trProbe: "probe", trNoBufClear: "nobuf-clear",
	trEstablished: "established", trAdopt: "adopt", trOrphan: "ORPHAN",
}

type traceEntry struct {
	t          Time
	kind       traceKind
	port, pri  uint8
	node       uint32
	a, b, c, d uint32
	heard      Time // sender: lastHeard at the time
	base       uint32
	repeat     int  // identical entries folded into this one
	last       Time // time of the last of them
}

const traceLen = 128

// trace records an exceptional protocol event (never on the fast path's
// common case) for Dump.
func (e *Engine) trace(now Time, k traceKind, node uint32, port, pri uint8, base, a, b, c, d uint32, heard Time) {
	if e.trN > 0 {
		if l := &e.tr[(e.trN-1)%traceLen]; l.kind == k && l.node == node && l.port == port && l.pri == pri &&
			l.a == a && l.b == b && l.c == c && l.d == d && l.base == base {
			l.repeat++
			l.last = now
			return
		}
	}
	e.tr[e.trN%traceLen] = traceEntry{t: now, kind: k, port: port, pri: pri, node: node, a: a, b: b, c: c, d: d, heard: heard, base: base}
	e.trN++
}

func (e *Engine) dumpTrace(b *strings.Builder, now Time) {
	n := min(e.trN, traceLen)
	fmt.Fprintf(b, "  last %d of %d traced events (seqs relative to the session start):\n", n, e.trN)
	for i := e.trN - n; i < e.trN; i++ {
		x := &e.tr[i%traceLen]
		r := func(q uint32) int32 { return diff(q, x.base) }
		fmt.Fprintf(b, "    %v %-12s node %d port %d pri %d", time.Duration(x.t-now), traceNames[x.kind], x.node, x.port, x.pri)
		switch x.kind {
		case trNackRecv:
			fmt.Fprintf(b, " seq %d una %d nxt %d reason %v", r(x.a), r(x.b), r(x.c), x.d)
		case trRTO:
			fmt.Fprintf(b, " una %d nxt %d rto %dms", r(x.a), r(x.b), x.d)
		case trGoBack, trProbe, trNoBufClear:
			fmt.Fprintf(b, " una/seq %d nxt %d", r(x.a), r(x.b))
		case trFail:
			fmt.Fprintf(b, " una %d nxt %d status %d", r(x.a), r(x.b), x.d)
		case trOrphan:
			fmt.Fprintf(b, " una %d hiSent %d failed %d status %d", r(x.a), r(x.b), x.c, x.d)
		case trSession:
			fmt.Fprintf(b, " open session %08x (was %08x, leaving %08x)", x.a, x.b, x.c)
		case trEstablished, trAdopt:
			fmt.Fprintf(b, " session %08x first seq %d", x.a, x.b)
		case trNackSent, trDropGoBack:
			fmt.Fprintf(b, " seq %d rcvNxt %d reason %d", r(x.a), r(x.b), x.d)
		}
		if x.repeat > 0 {
			fmt.Fprintf(b, " (x%d more, last %v)", x.repeat, time.Duration(x.last-now))
		}
		if x.heard != 0 {
			fmt.Fprintf(b, " lastHeard %v before", time.Duration(x.t-x.heard))
		}
		b.WriteByte('\n')
	}
}
