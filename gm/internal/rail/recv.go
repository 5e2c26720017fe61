package rail

import (
	"time"

	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/wire"
)

// Drain feeds the engine every frame waiting in the rails' rings, sending
// what became due after each full batch (Engine.Pump). It returns the
// number of frames and whether every ring was found empty (false: it
// stopped after about MaxDrain frames, and the engine's timers must wait
// for the next Drain). now must have been taken before the first frame was
// read: every frame that arrived before now is read.
//
// Several rings are merged into stream order: Drain reads a batch from
// every ring and always passes on the frame that no other ring's next
// frame precedes in its stream. A ring whose batch was full (more may
// wait) is read again as soon as its batch is consumed, and a ring found
// empty is looked at again every recheck frames, so that no ring runs
// ahead of another by more than that. Drain ends when every batch is
// consumed and none was full: one read of a ring that holds a few frames,
// as for a set of one rail, the ordinary case.
func (s *Set) Drain(now time.Duration) (int, bool) {
	s.maintain(now)
	got, pumped, checked := 0, 0, 0
	for i := range s.links {
		s.fill(i)
	}
	for {
		i := s.pick()
		if i < 0 {
			// Every batch is consumed, and every ring was last found
			// with fewer frames than a batch (a full one is read again
			// at once, below): what arrived since came after now.
			if got >= MaxDrain {
				if got > pumped {
					s.eng.Pump(now)
				}
				return got, false
			}
			return got, true
		}
		if got-checked >= recheck && got < MaxDrain {
			// Look again at every consumed ring.
			checked = got
			s.refill()
			i = s.pick()
		}
		f := s.b[i][s.pos[i]]
		s.pos[i]++
		s.heard(i, f, now)
		s.eng.Input(now, f)
		got++
		if s.pos[i] == len(s.b[i]) && s.full[i] && got < MaxDrain {
			checked = got
			s.refill()
		}
		if got-pumped >= pumpEvery {
			s.eng.Pump(now)
			pumped = got
		}
	}
}

// Idle reports, with a few loads and without the links' locks, that a
// Drain now would read no frame: every ring is idle (link.CapIdle) and no
// frame read from a ring waits to be merged. It is false if a link cannot
// tell. The caller owns the receive side as Drain's does, and calls it
// neither during a Wait nor concurrently with Close (see
// link.Endpoint.RecvIdle).
func (s *Set) Idle() bool {
	if !s.caps.Has(link.CapIdle) {
		return false
	}
	for i, l := range s.links {
		if s.pos[i] < len(s.b[i]) || !l.RecvIdle() {
			return false
		}
	}
	return true
}

// Wait sleeps until a frame arrives on a rail, a Wake, a Close
// (link.ErrClosed) or timeout (link.Waiter); it reads nothing: the next
// Drain does.
func (s *Set) Wait(timeout time.Duration) error {
	return s.waiter.Wait(timeout)
}

// refill reads a batch from every ring whose batch is consumed.
func (s *Set) refill() {
	for j := range s.links {
		if s.pos[j] == len(s.b[j]) {
			s.fill(j)
		}
	}
}

// fill reads a batch from ring i, as the owner of its receive side
// (without the link's receive lock if it has link.CapOwnedReceive):
// Drain's callers hold the port's mutex, and no Wait runs meanwhile.
func (s *Set) fill(i int) int {
	n := s.links[i].RecvOwned(s.fr[i])
	s.b[i], s.pos[i], s.full[i] = s.fr[i][:n], 0, n == len(s.fr[i])
	return n
}

// heard records that frame f arrived on rail i.
func (s *Set) heard(i int, f []byte, now time.Duration) {
	h := wire.FrameHeader(f)
	pp := s.railPeer(h.SourceNode())
	if pp == nil {
		return
	}
	bit := uint8(1) << i
	pp.unanswered[i]++
	pp.txSince[i], pp.evidence[i] = 0, 0
	if pp.suspect&bit != 0 {
		pp.suspect &^= bit
		s.st.revivals++
	}
	if t := h.Type(); t != wire.TypeAck && t != wire.TypeNack {
		return
	}
	// An answer on rail i: count it against the rails whose frames to the
	// peer have been unanswered for evidenceWait. maintain judges the
	// count: by then the rest of this drain may have brought an answer on
	// such a rail too (the rings are merged in stream order for data only).
	for r := 0; r < s.n; r++ {
		if r != i && pp.txSince[r] != 0 && now-pp.txFirst[r] >= evidenceWait && pp.evidence[r] < 255 {
			pp.evidence[r]++
		}
	}
}

// suspectRail stops using rail r for pp, unless it is pp's last working
// rail.
func (s *Set) suspectRail(pp *peer, r int) {
	b := uint8(1) << r
	if (pp.has&^s.down&^pp.suspect)&^b == 0 {
		return
	}
	pp.suspect |= b
	pp.evidence[r] = 0
	s.st.suspicions++
}

// maintain checks the carriers, judges silent rails and sends probes; at
// most every maintEvery.
func (s *Set) maintain(now time.Duration) {
	if now-s.lastMaint < maintEvery && s.lastMaint != 0 {
		return
	}
	s.lastMaint = now
	if now-s.lastCarrier >= carrierEvery || s.lastCarrier == 0 {
		s.lastCarrier = now
		for i, l := range s.links {
			if l.Running() {
				s.down &^= 1 << i
			} else {
				s.markDown(i)
			}
		}
	}
	for _, pp := range s.peers {
		for r := 0; r < s.n; r++ {
			b := uint8(1) << r
			if pp.txActive&b != 0 {
				pp.lastTx[r] = now
			}
			if pp.txSince[r] == 0 {
				continue
			}
			if now-pp.lastTx[r] >= silence {
				pp.txSince[r] = 0 // no longer sending on it: nothing to conclude
				continue
			}
			if pp.suspect&b != 0 || s.down&b != 0 {
				continue
			}
			if pp.evidence[r] >= evidenceAcks {
				s.suspectRail(pp, r)
			} else if pp.txSince[r] >= 3 && now-pp.txFirst[r] > silence {
				s.suspectRail(pp, r)
			}
		}
		pp.txActive = 0
		if pp.probeReady && now-pp.lastProbe >= probeEvery {
			if cand := pp.suspect &^ s.down & pp.has; cand != 0 {
				r := nth(cand, uint32(pp.probeNext))
				pp.probeNext++
				s.rewrite(pp.probe, r, pp)
				if err := s.links[r].Send(pp.probe); err != nil && isDown(err) {
					s.markDown(r)
				}
				s.st.probes++
			}
			pp.lastProbe, pp.probeReady = now, false
		}
	}
}

// pick returns the ring whose next frame goes to the engine next, -1 if
// every batch is consumed: a frame outside the reliable streams (an ack,
// whose order does not matter) at once, else a frame that no frame among
// the other rings' next look frames precedes in its stream (see held),
// rings taking turns among such frames. If every ring's next frame waits,
// one that may only wait for a batch not yet read goes first (from the
// ring with the fewest frames left in its batch: once a batch is consumed
// the next is read), and if all wait for a frame in sight (frames resent
// out of order can cross), one goes anyway. With one rail there is no
// order to keep but the ring's.
func (s *Set) pick() int {
	if s.n == 1 {
		if s.pos[0] < len(s.b[0]) {
			return 0
		}
		return -1
	}
	cand, level := -1, heldSure+1
	for k := 0; k < s.n; k++ {
		i := s.pickNext + k
		if i >= s.n {
			i -= s.n
		}
		if s.pos[i] >= len(s.b[i]) {
			continue
		}
		h := wire.FrameHeader(s.b[i][s.pos[i]])
		if !h.Type().IsReliable() {
			return i
		}
		l := s.held(i, h)
		if l < level || l == heldMaybe && l == level && len(s.b[i])-s.pos[i] < len(s.b[cand])-s.pos[cand] {
			cand, level = i, l
			if l == heldNot {
				break
			}
		}
	}
	if cand >= 0 {
		if s.pickNext++; s.pickNext == s.n {
			s.pickNext = 0
		}
	}
	return cand
}

// Answers of held.
const (
	heldNot   = iota // nothing in sight precedes the frame
	heldMaybe        // a ring's next batch (not read yet) may
	heldSure         // a frame in sight does
)

// held reports whether h, the header of a stream frame next on ring i,
// must wait for an earlier frame of its stream on another ring: the first
// frame of h's stream among that ring's next look frames precedes it. A
// ring's frames of one stream follow each other in sequence order, so
// only the first one found matters (usually the ring's next frame). If the
// look reaches the end of a full batch, the next batch may hold such a
// frame.
func (s *Set) held(i int, h wire.Header) int {
	res := heldNot
	stream := h.Stream()
	for j := 0; j < s.n; j++ {
		if j == i {
			continue
		}
		b := s.b[j]
		k, end := s.pos[j], min(len(b), s.pos[j]+look)
		for ; k < end; k++ {
			o := wire.FrameHeader(b[k])
			if o.Type().IsReliable() && o.Stream() == stream {
				if wire.SeqBefore(o.Seq(), h.Seq()) {
					return heldSure
				}
				break
			}
		}
		if k == len(b) && k < s.pos[j]+look && s.full[j] {
			res = heldMaybe
		}
	}
	return res
}
