package rail

import (
	"errors"
	"math/bits"
	"syscall"

	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/wire"
)

// route chooses the rail for frame f and returns it with the rail state
// of the frame's target node (nil if unknown, or with one rail: rail 0).
func (s *Set) route(f []byte) (int, *peer) {
	if len(f) < wire.EthHeaderLen+wire.HeaderLen {
		return 0, nil
	}
	h := wire.FrameHeader(f)
	node := h.TargetNode()
	pp := s.railPeer(node)
	if pp == nil {
		return 0, nil
	}
	use := s.usable(pp)
	fl := h.Flags()
	key := node*0x9E3779B1 + uint32(h.TargetPort())*31 + uint32(h.SourcePort())*7 + uint32(h.Priority())
	switch h.Type() {
	case wire.TypeAck, wire.TypeNack:
		for k := 1; k <= s.n; k++ {
			r := (pp.ackNext + k) % s.n
			if use&(1<<r) != 0 && pp.unanswered[r] > 0 {
				pp.ackNext = r
				return r, pp
			}
		}
	case wire.TypeDataMiddle, wire.TypeDataLast:
		if fl&wire.FlagRetransmit == 0 {
			return nth(use, key+h.Offset()/s.chunk), pp
		}
	}
	return nth(use, key), pp
}

// rewrite sets the Ethernet addresses of f for rail r (the EtherGM CRC
// does not cover them).
func (s *Set) rewrite(f []byte, r int, pp *peer) {
	e := wire.Ethernet(f)
	if pp != nil {
		e.SetDst(pp.mac[r])
	}
	e.SetSrc(s.macs[r])
}

// sent records that f went to pp on rail r.
func (s *Set) sent(pp *peer, r int, f []byte) {
	if pp == nil {
		return
	}
	pp.unanswered[r] = 0
	h := wire.FrameHeader(f)
	t := h.Type()
	if t.IsReliable() {
		if pp.txSince[r] == 0 {
			pp.txFirst[r], pp.evidence[r] = s.clock(), 0
		}
		pp.txSince[r]++
		pp.txActive |= 1 << r
	}
	if pp.suspect&^s.down != 0 && !pp.probeReady && (t.IsReliable() ||
		t == wire.TypeAck && h.Flags()&wire.FlagRetransmit == 0) {
		pp.probe = append(pp.probe[:0], f...)
		pp.probeReady = true
	}
}

func (s *Set) markDown(r int) {
	if s.down&(1<<r) == 0 {
		s.down |= 1 << r
		s.st.downs++
	}
}

// isDown reports whether a send error means the interface is down or gone.
func isDown(err error) bool {
	return errors.Is(err, syscall.ENETDOWN) || errors.Is(err, syscall.ENXIO) ||
		errors.Is(err, syscall.ENODEV) || errors.Is(err, link.ErrInterfaceDown)
}

// Send sends one frame on its rail; if that rail's interface turns out to
// be down, on another.
func (s *Set) Send(f []byte) error {
	var err error
	for try := 0; try < s.n; try++ {
		r, pp := s.route(f)
		s.rewrite(f, r, pp)
		if err = s.send(r, f); err == nil {
			s.sent(pp, r, f)
			return nil
		}
		if !isDown(err) || s.down&(1<<r) != 0 {
			return err
		}
		s.markDown(r)
	}
	return err
}

// send sends one frame on rail i, as the owner of its send side (without
// the link's send lock if it has link.CapOwnedSend): the engine sends with
// the port's mutex held, which every sender of the set holds.
func (s *Set) send(i int, f []byte) error {
	return s.links[i].SendOwned(f)
}

// SendBatch sends frames, each on its rail, in order: every run of
// consecutive frames for one rail is one batch (one system call) on that
// rail, started only after the previous run's. It returns the index of the
// first frame that was not sent (later ones may have been), or
// len(frames).
func (s *Set) SendBatch(frames [][]byte) (int, error) {
	s.pps = s.pps[:0]
	for start := 0; start < len(frames); {
		r, pp := s.route(frames[start])
		s.rewrite(frames[start], r, pp)
		s.pps = append(s.pps, pp)
		end := start + 1
		for ; end < len(frames); end++ {
			r2, pp2 := s.route(frames[end])
			if r2 != r {
				// Routed again with the run (route is deterministic for
				// data frames, the only ones sent in batches).
				break
			}
			s.rewrite(frames[end], r, pp2)
			s.pps = append(s.pps, pp2)
		}
		run := frames[start:end]
		k, err := s.links[r].SendBatch(run)
		for j := 0; j < k; j++ {
			s.sent(s.pps[start+j], r, run[j])
		}
		if err != nil {
			if !isDown(err) || s.down&(1<<r) != 0 {
				return start + k, err
			}
			s.markDown(r)
			for j := k; j < len(run); j++ {
				if err := s.Send(run[j]); err != nil {
					return start + j, err
				}
			}
		}
		start = end
	}
	return len(frames), nil
}

// TxSlot lends a transmit-ring slot: on the rail of the last frame (the
// next frame of a batch usually goes there too), else on any rail that is
// not down, else on any rail.
func (s *Set) TxSlot() []byte {
	for pass := 0; pass < 2; pass++ {
		for k := 0; k < s.n; k++ {
			r := (s.slotRail + k) % s.n
			if pass == 0 && s.down&(1<<r) != 0 {
				continue
			}
			if b := s.links[r].TxSlot(); b != nil {
				s.slotLink, s.slotBuf = r, b
				return b
			}
		}
		if s.down&(1<<s.n-1) != 1<<s.n-1 {
			break // some rail is up: its ring is full, the engine flushes and retries
		}
	}
	return nil
}

// TxCommit queues the frame built in the slot of the last TxSlot on its
// rail: in place if the slot is on that rail, else copied into a slot of
// the right rail.
func (s *Set) TxCommit(n int) error {
	_, err := s.commit(n, false)
	return err
}

// TxCommitNext is TxCommit followed by TxSlot: it queues the frame built
// in the slot of the last TxSlot (or TxCommitNext) and lends the next
// slot, or nil. A frame committed in place commits and lends with one
// call of its link (link.CapSlots: one lock round trip).
func (s *Set) TxCommitNext(n int) ([]byte, error) {
	next, err := s.commit(n, true)
	if err != nil || next != nil {
		return next, err
	}
	return s.TxSlot(), nil
}

// commit is TxCommit; with next, it also returns the next slot of the
// frame's rail if it committed the frame in place (nil otherwise: the
// caller asks TxSlot).
func (s *Set) commit(n int, next bool) ([]byte, error) {
	src, buf := s.slotLink, s.slotBuf
	s.slotBuf = nil
	if n <= 0 || buf == nil {
		return nil, nil
	}
	if n > len(buf) {
		return nil, link.ErrFrameSize
	}
	f := buf[:n]
	r, pp := s.route(f)
	if q := s.queued &^ (1 << r); q != 0 {
		// The frame starts a run on another rail: start the previous
		// run's transmission first, so that the rails carry the frames
		// in order.
		s.flush(q)
	}
	moved := r != src
	if moved {
		d := s.links[r].TxSlot()
		if d == nil {
			if err := s.links[r].Flush(); err != nil && isDown(err) {
				s.markDown(r)
			}
			d = s.links[r].TxSlot()
		}
		if d == nil || n > len(d) {
			return nil, errNoSlot
		}
		f = d[:copy(d, f)]
		s.st.moved++
	}
	s.rewrite(f, r, pp)
	var slot []byte
	var err error
	if next && !moved {
		slot, err = s.links[r].TxCommitNext(n)
	} else {
		err = s.links[r].TxCommit(n)
	}
	if err != nil {
		if isDown(err) {
			s.markDown(r)
		}
		return nil, err
	}
	s.queued |= 1 << r
	s.slotRail = r
	s.sent(pp, r, f)
	if slot != nil {
		s.slotLink, s.slotBuf = r, slot
	}
	return slot, nil
}

// errNoSlot is returned by TxCommit when the frame's rail has no free slot
// (the engine retries the frame shortly).
var errNoSlot = errors.New("gm: rail transmit ring full")

// Flush starts the transmission of the frames committed on every rail.
// Frames queued on a rail that is down are left to the engine's
// retransmission.
func (s *Set) Flush() error {
	return s.flush(s.queued)
}

// flush starts the transmission of the frames committed on the rails in
// mask q.
func (s *Set) flush(q uint8) error {
	var ferr error
	for ; q != 0; q &= q - 1 {
		r := bits.TrailingZeros8(q)
		if err := s.links[r].Flush(); err != nil {
			if isDown(err) {
				s.markDown(r)
			} else if ferr == nil {
				ferr = err
				continue // stays queued: the next Flush retries it
			}
		}
		s.queued &^= 1 << r
	}
	return ferr
}
