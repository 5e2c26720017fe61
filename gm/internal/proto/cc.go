package proto

import (
	"math"
	"time"
)

// Congestion control (docs/PROTOCOL.md, "Congestion control"): a window per
// destination host, sender-side only, that grows while the path is clear
// and shrinks, at most once per round trip, on the two signals Ethernet
// gives without switch support:
//
//   - loss: a frame resent because selective acks showed it lost, because
//     the retransmission timeout expired, or because the receiver asked to
//     go back: the window halves (AIMD, as TCP Reno);
//   - delay: a round-trip sample, taken once per flight from the time the
//     caller passes with each batch of input (no clock read of the
//     engine's own), above the path's smallest round trip plus
//     congestionDelay: the window shrinks in proportion to the excess, by
//     at most half (as Swift, SIGCOMM 2020).
//
// It grows by the frames acknowledged while below the slow-start threshold
// (doubling per round trip), by one frame per round trip above it, never
// beyond the stream's window (Config.Window and the receiver's
// advertisement). Every stream to the host may keep min(its window, the
// host's congestion window) frames in flight; retransmissions of lost
// frames are not held back by it.
type congestion struct {
	cwnd int32 // frames
	// lossy: the path dropped a frame since the window was last whole
	// (Config.Window). Only then does delay count: a path that never
	// dropped has no queue to keep from overflowing, and its delay is
	// the hosts' own (a busy receiver, scheduling). floor is the window
	// the last loss left: when an epoch shows that the delay was not
	// this sender's to cure (competitive), the delay's cuts below it are
	// undone, as TCP undoes the cuts of spurious timeouts (Eifel).
	// (cwnd and lossy, all that a clear path's ack reads, come first:
	// they share the cache line of the peer's MAC.)
	lossy    bool
	over     bool  // the last round-trip sample was above the target
	ssthresh int32 // the slow-start threshold
	acc      int32 // frames acknowledged towards the next additive increase
	floor    int32
	lastCut  Time // when the window last shrank
	hold     time.Duration

	// Copa's competitive mode (Arun and Balakrishnan, NSDI 2018): the
	// smallest sample of each epoch of epochLen; if the queue never
	// drained to the target during an epoch, a sender that does not back
	// off on delay (TCP) shares the queue, and the next epoch reacts to
	// loss only, so as not to leave it everything.
	epochAt     Time
	epochMin    time.Duration
	competitive bool

	// The shape of the losses (ccLoss): the stream and sequence number of
	// the last frame resent as lost and the run of consecutive lost frames
	// it ends; the frames lost since flightAt, the start of the current
	// round trip.
	runS       *txStream
	runSeq     uint32
	run        int32
	flightAt   Time
	flightLost int32
	// lossyAt is when a loss last counted as congestion: lossyHold
	// later without another, the path is no longer lossy (ccRTT).
	lossyAt Time
}

// Parameters of the congestion control.
const (
	// initCwnd is a host's window before any signal: a clear path reaches
	// Config.Window from it in a few round trips of slow start.
	initCwnd = 64
	// minCwnd is the smallest window: enough frames in flight for
	// selective acks to show a loss (reorderSlack later frames acked)
	// rather than a retransmission timeout.
	minCwnd = 8
	// randomLossFloor is the smallest window a loss leaves when the path
	// shows no queue: such a loss is not the congestion of a full switch
	// queue (which delays every frame before it drops one) but a link's
	// random loss, which a smaller window would not cure (Veno, Fu and
	// Liew 2003, tells the two apart the same way).
	randomLossFloor = initCwnd
	// congestionDelay is the queueing delay, above the path's smallest
	// round trip, beyond which the window shrinks. It is well above what a
	// clear path between two busy hosts shows (the receiver's ack delay,
	// its polling) and below what a switch queue shaped like the incast
	// tests' (2 ms of a 1 Gbit/s link) holds before it drops.
	congestionDelay = 1 * time.Millisecond
	// fairnessRange is the most the target grows for a small window
	// (Swift's flow scaling): target = minRTT + congestionDelay +
	// fairnessRange * (1/sqrt(cwnd) - 1/sqrt(MaxWindow)) /
	// (1/sqrt(minCwnd) - 1/sqrt(MaxWindow)). A host with a small window
	// then tolerates more delay than one with a large window: when they
	// share a queue, the large window shrinks first and the small one
	// grows, so they converge to equal shares whatever round trip each
	// measured as its smallest.
	fairnessRange = 1 * time.Millisecond
	// minRTTWindow is how long the smallest round trip seen is trusted;
	// the first sample after it replaces it (the path may have changed).
	minRTTWindow = 10 * time.Second
	// epochLen is how long the queue must stay above the delay target,
	// with every sample, for the window to react to loss only (see
	// congestion.competitive).
	epochLen = 50 * time.Millisecond
	// delayBeta scales the decrease on delay (Swift's beta): the window is
	// multiplied by 1 - delayBeta * excess / sample, at least by 1/2.
	delayBeta = 0.8
	// lossRun and lossShare tell a full queue's losses from a link's
	// random loss (ccLoss): a queue that overflows drops every frame that
	// arrives while it is full, a run of consecutive frames of a burst,
	// or, gently overflowed, a share of the window each round trip; random
	// loss at rate p drops isolated frames (a run of lossRun has
	// probability p^(lossRun-1) per loss: 6e-7 at 5 %) and a share p of
	// each round trip's frames, well below 1/lossShare.
	lossRun   = 6
	lossShare = 8
	// lossyHold is how long a path stays lossy (delay counts) after its
	// last congestion loss. Then the window, whatever the delay cut it
	// to, grows again in slow start towards the stream's window: a delay
	// that no loss confirms for so long is not a queue that overflows
	// (a relay's or a receiver's scheduling holds frames without dropping
	// them), and if it is, the next overflow makes the path lossy again,
	// at the cost of one burst of losses per lossyHold.
	lossyHold = 500 * time.Millisecond
)

// ccInit sets a new peer's congestion state.
func (e *Engine) ccInit(p *peer) {
	p.cc = congestion{cwnd: min(initCwnd, int32(e.cfg.Window)), ssthresh: int32(e.cfg.Window)}
	if e.cfg.NoCongestionControl {
		p.cc.cwnd = maxWindow
	}
}

// cwnd returns the window of s: its own, or its host's congestion window if
// smaller.
func (s *txStream) cwnd() int32 { return min(s.window, s.peer.cc.cwnd) }

// ccAcked grows s's host's window for n frames newly acknowledged.
func (e *Engine) ccAcked(now Time, s *txStream, n int32) {
	c := &s.peer.cc
	if (c.over && c.lossy) || now-c.lastCut < c.hold || e.cfg.NoCongestionControl {
		return
	}
	top := int32(e.cfg.Window)
	if c.cwnd < c.ssthresh {
		c.cwnd = min(c.cwnd+n, c.ssthresh, top)
	} else {
		c.acc += n
		for c.acc >= c.cwnd {
			c.acc -= c.cwnd
			c.cwnd = min(c.cwnd+1, top)
		}
	}
	if c.cwnd >= top {
		c.lossy = false // whole again
	}
}

// sampled records a round-trip sample of s: the smallest of the last
// minRTTWindow, and the last. On a path that is not lossy this is all a
// sample costs (see advance), in the stream's own state; ccRTT does the
// rest.
func (s *txStream) sampled(now Time, sample time.Duration) {
	if sample < s.minRTT || s.minRTT == 0 || now-s.minAt > minRTTWindow {
		s.minRTT, s.minAt = sample, now
	}
	s.lastRTT = sample
}

// ccRTT takes a round-trip sample of s: it updates the path's smallest
// round trip and shrinks the window if the sample shows a queue.
func (e *Engine) ccRTT(now Time, s *txStream, sample time.Duration) {
	c := &s.peer.cc
	s.sampled(now, sample)
	if now-c.lossyAt > lossyHold {
		c.lossy, c.over, c.competitive = false, false, false
		c.ssthresh, c.acc = int32(e.cfg.Window), 0
		return
	}
	target := s.minRTT + congestionDelay
	if sample > target || c.epochMin > target {
		target += fairness(c.cwnd) // the square roots only when they matter
	}
	if c.epochMin == 0 || sample < c.epochMin {
		c.epochMin = sample
	}
	if now-c.epochAt >= epochLen {
		c.competitive = c.epochAt != 0 && c.epochMin > target
		c.epochAt, c.epochMin = now, sample
		if c.competitive && c.cwnd < c.floor {
			c.cwnd, c.ssthresh, c.acc = c.floor, c.floor, 0
		}
	}
	c.over = sample > target && !c.competitive
	if !c.over {
		return
	}
	f := 1 - delayBeta*float64(sample-target)/float64(sample)
	if e.ccCut(now, s, max(f, 0.5), minCwnd) {
		e.stats.WindowCutsDelay++
	}
}

// ccLoss takes frame seq of s, resent because it was lost, and shrinks the
// window of s's host if the loss is the congestion of a queue: by half,
// but not below randomLossFloor unless the path shows a queue.
//
// A loss is congestion if it ends a run of lossRun consecutive frames
// lost, or if the frames lost in one round trip exceed 1/lossShare of the
// window: the shapes of a queue's tail drop. Once a loss was (the path is
// lossy), an isolated loss is congestion too when the last round trip
// shows a queue, or in competitive mode (a queue shared with a flow that
// fills it drops isolated frames as well). Other losses, the isolated
// drops of a lossy link (or of a relay that drops at random), leave the
// window alone: halving it would not make them rarer, and it would hand
// the path's delay, which such a path (a relay's scheduling) may show
// without any switch queue, to the delay's cuts.
func (e *Engine) ccLoss(now Time, s *txStream, seq uint32) {
	c := &s.peer.cc
	if e.cfg.NoCongestionControl {
		return
	}
	if s == c.runS && seq == c.runSeq+1 {
		c.run++
	} else {
		c.runS, c.run = s, 1
	}
	c.runSeq = seq
	if now-c.flightAt >= max(s.srtt, s.minRTT, 100*time.Microsecond) {
		c.flightAt, c.flightLost = now, 0
	}
	c.flightLost++
	queue := s.lastRTT > s.minRTT+congestionDelay/2
	flight := max(min(c.cwnd, s.window), diff(s.nxt, s.una))
	if c.run < lossRun && c.flightLost*lossShare <= flight && !(c.lossy && (queue || c.competitive)) {
		e.stats.LossesRandom++
		return
	}
	c.lossyAt = now
	floor := int32(minCwnd)
	if !queue {
		floor = randomLossFloor // the last sample showed no queue
	}
	if e.ccCut(now, s, 0.5, floor) {
		e.stats.WindowCutsLoss++
		if !c.lossy {
			// Delay counts from now on (ccRTT), in a new epoch.
			c.lossy, c.over, c.competitive = true, false, false
			c.epochAt, c.epochMin = now, 0
		}
		c.floor = c.cwnd
	}
}

// ccCut multiplies the window of s's host by f, down to floor at most,
// unless it shrank less than a round trip ago (the signals of one flight
// count once) or is at floor already. It reports whether it did.
func (e *Engine) ccCut(now Time, s *txStream, f float64, floor int32) bool {
	c := &s.peer.cc
	cur := min(c.cwnd, s.window)
	if e.cfg.NoCongestionControl || (c.lastCut != 0 && now-c.lastCut < c.hold) || cur <= floor {
		return false
	}
	w := max(int32(float64(cur)*f), floor)
	c.cwnd, c.ssthresh, c.acc = w, w, 0
	c.lastCut = now
	c.hold = max(s.srtt, s.minRTT, 100*time.Microsecond)
	return true
}

// CongestionState is the congestion control state of one destination host
// (Engine.Congestion).
type CongestionState struct {
	Node     uint32
	Window   int           // frames in flight allowed per stream to the host
	Ssthresh int           // the slow-start threshold
	MinRTT   time.Duration // the smallest round trip seen recently (0: none yet)
	SRTT     time.Duration // the smoothed round trip of the host's busiest stream
	InFlight int           // frames in flight to the host, all streams
}

// Congestion returns the congestion state of every host the engine sent
// to, in node order. It allocates (for diagnostics).
func (e *Engine) Congestion() []CongestionState {
	var out []CongestionState
	for _, p := range e.peers {
		if p == nil {
			continue
		}
		cs := CongestionState{Node: p.node, Window: int(min(p.cc.cwnd, int32(e.cfg.Window))), Ssthresh: int(p.cc.ssthresh)}
		any := false
		for port := range p.tx {
			for _, s := range p.tx[port] {
				if s == nil {
					continue
				}
				any = true
				n := int(diff(s.nxt, s.una))
				cs.InFlight += n
				if s.srtt != 0 && (cs.SRTT == 0 || n > 0) {
					cs.SRTT = s.srtt
				}
				if s.minRTT != 0 && (cs.MinRTT == 0 || s.minRTT < cs.MinRTT) {
					cs.MinRTT = s.minRTT
				}
			}
		}
		if any {
			out = append(out, cs)
		}
	}
	return out
}

// Why the frames of a stream's retransmission range are resent.
const (
	causeLoss    uint8 = iota // selective acks, or the ack of a timeout's probe, showed them lost
	causeTimeout              // the retransmission timeout expired: the probe (or, every other time, the oldest frame)
	causeGoBack               // the receiver asked to go back (ACK with FlagRetransmit)
)

// resent counts a frame of s resent, by cause, and shrinks the window of
// s's host if the frame was lost. The frame a retransmission timeout
// resends alone is a probe, not a loss: a busy receiver or a descheduled
// process causes most timeouts on a loaded host, and the window must not
// pay for them. If the probe's answer shows frames lost, they are resent
// as losses (causeLoss), and the window shrinks then.
func (e *Engine) resent(now Time, s *txStream, seq uint32) {
	switch s.rtxCause {
	case causeTimeout:
		e.stats.RetransmitsTimeout++
		return
	case causeGoBack:
		e.stats.RetransmitsGoBack++
	default:
		e.stats.RetransmitsLoss++
	}
	e.ccLoss(now, s, seq)
}

// fairness returns the part of the delay target that depends on the window
// w (see fairnessRange).
func fairness(w int32) time.Duration {
	x := (1/math.Sqrt(float64(max(w, minCwnd))) - fairLo) / (fairHi - fairLo)
	return time.Duration(x * float64(fairnessRange))
}

// The bounds of 1/sqrt(window) (see fairness).
var fairLo, fairHi = 1 / math.Sqrt(maxWindow), 1 / math.Sqrt(minCwnd)
