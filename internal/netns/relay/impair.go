package relay

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// DefaultCorruptFrom is the default first byte that corruption may hit: the
// payload area of an EtherGM frame, after the Ethernet header (14 bytes) and
// the EtherGM header (44 bytes).
const DefaultCorruptFrom = 14 + 44

// Direction names one direction of the relay.
type Direction int

// The two directions of a relay. AtoB carries frames read on the relay's
// side A and written on side B (host0 to host1 in the netns harness).
const (
	AtoB Direction = iota
	BtoA
)

// String returns "AtoB", "BtoA", or "from port N" for the ports of a relay
// with more than two.
func (d Direction) String() string {
	switch d {
	case AtoB:
		return "AtoB"
	case BtoA:
		return "BtoA"
	}
	return fmt.Sprintf("from port %d", int(d))
}

// From returns the direction of the frames read on port i of a relay: on a
// relay of more than two ports, each port's frames are impaired by the
// port's own [Impairment] and counted in its own [Stats]. From(0) is AtoB,
// From(1) is BtoA.
func From(i int) Direction { return Direction(i) }

// Match selects frames by their bytes (the whole Ethernet frame). It must
// not keep or modify the frame.
type Match func(frame []byte) bool

// EtherGM frame layout used by the predefined matches (docs/PROTOCOL.md;
// this package does not import the wire package).
const (
	gmTypeOffset  = 14 + 1 // frame offset of the EtherGM type byte
	gmTypeData    = 1
	gmTypeDataLst = 4
	gmTypeAck     = 5
	gmTypeNack    = 6
)

// gmType returns the EtherGM type byte of frame, or 0.
func gmType(frame []byte) byte {
	if len(frame) <= gmTypeOffset {
		return 0
	}
	return frame[gmTypeOffset]
}

// MatchAcks selects EtherGM ACK frames: loss aimed at acks only.
func MatchAcks(frame []byte) bool { return gmType(frame) == gmTypeAck }

// MatchControl selects EtherGM ACK and NACK frames.
func MatchControl(frame []byte) bool {
	t := gmType(frame)
	return t == gmTypeAck || t == gmTypeNack
}

// MatchTails selects the last frame of every EtherGM message: DATA (a
// message of one frame) and DATA_LAST. Loss aimed at them leaves the
// receiver nothing later in the message to notice the gap by.
func MatchTails(frame []byte) bool {
	t := gmType(frame)
	return t == gmTypeData || t == gmTypeDataLst
}

// MatchLarger returns a Match that selects frames longer than n bytes:
// loss aimed at large (full) frames only.
func MatchLarger(n int) Match {
	return func(frame []byte) bool { return len(frame) > n }
}

// Impairment says what happens to the frames of one direction. Rates are
// probabilities in [0, 1], applied independently to every impaired frame in
// this order: drop, duplicate, corrupt, reorder, delay. The zero value
// forwards every frame unchanged and at once.
type Impairment struct {
	// Drop is the probability that a frame is discarded.
	Drop float64
	// Duplicate is the probability that a frame is sent twice (the copy
	// right after the original, never corrupted).
	Duplicate float64
	// Reorder is the probability that a frame is held back and sent after
	// the next ReorderGap frames of this direction (or after the relay's
	// HoldTimeout if fewer arrive).
	Reorder float64
	// Corrupt is the probability that one random bit of the frame, at or
	// after byte CorruptFrom, is flipped. Frames too short to have such a
	// byte are not corrupted.
	Corrupt float64
	// Delay is added to every frame's departure time.
	Delay time.Duration
	// Jitter, if positive, adds a uniformly random offset in
	// [-Jitter, +Jitter] to every frame's delay (the result is at least 0).
	// Frames leave in order of departure time, so jitter reorders frames.
	Jitter time.Duration
	// ReorderGap is how many later frames overtake a reordered frame; 0
	// means 1.
	ReorderGap int
	// CorruptFrom is the first byte offset that corruption may hit; 0
	// means DefaultCorruptFrom and a negative value means anywhere in the
	// frame.
	CorruptFrom int
	// Only, if not nil, aims the impairment: only the frames it selects
	// (among those of the relay's EtherType) are impaired and counted in
	// Stats.Matched; the others are forwarded untouched, at once (see
	// MatchAcks, MatchTails, MatchLarger).
	Only Match
}

// Validate reports whether the rates are probabilities and the durations
// and counts are not negative.
func (imp Impairment) Validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"Drop", imp.Drop}, {"Duplicate", imp.Duplicate}, {"Reorder", imp.Reorder}, {"Corrupt", imp.Corrupt}} {
		if !(r.v >= 0 && r.v <= 1) {
			return fmt.Errorf("relay: %s rate %v not in [0, 1]", r.name, r.v)
		}
	}
	if imp.Delay < 0 || imp.Jitter < 0 || imp.ReorderGap < 0 {
		return fmt.Errorf("relay: negative Delay, Jitter or ReorderGap")
	}
	return nil
}

// Stats are the counters of one direction.
type Stats struct {
	// Received counts frames read from the input side.
	Received uint64
	// Forwarded counts frames handed to the output side (duplicates and
	// released reordered frames included); Overflows and Errors tell how
	// many of them were lost after that.
	Forwarded uint64
	// Passed counts frames forwarded untouched because they did not match
	// the EtherType filter (they are also in Forwarded).
	Passed uint64
	// Matched counts frames the impairment's Only selected (0 when Only
	// is nil); the frames it did not select are forwarded untouched and
	// counted in Forwarded only.
	Matched uint64
	// Dropped counts frames discarded by the Drop rate.
	Dropped uint64
	// Duplicated counts extra copies sent.
	Duplicated uint64
	// Reordered counts frames held back by the Reorder rate.
	Reordered uint64
	// Delayed counts frames sent with a delay greater than zero.
	Delayed uint64
	// Corrupted counts frames with a flipped bit.
	Corrupted uint64
	// Overflows counts frames discarded because the delay queue was full.
	Overflows uint64
	// Errors counts failed reads and writes.
	Errors uint64
}

// Output is a frame to send after Delay.
type Output struct {
	Frame []byte
	Delay time.Duration
}

// Impairer applies an [Impairment] to a stream of frames without doing any
// I/O, deterministically for a given seed. It is not safe for concurrent
// use.
type Impairer struct {
	imp       Impairment
	etherType uint16
	rng       *rand.Rand
	held      []heldFrame
	stats     Stats
}

// heldFrame is a reordered frame waiting for left more frames.
type heldFrame struct {
	frame []byte
	left  int
}

// NewImpairer returns an Impairer for imp whose random choices come from
// rng. If etherType is not zero, only frames of that EtherType are
// impaired; others pass untouched.
func NewImpairer(imp Impairment, rng *rand.Rand, etherType uint16) *Impairer {
	return &Impairer{imp: imp, rng: rng, etherType: etherType}
}

// SetImpairment replaces the impairment for the frames that follow. Frames
// already held back keep their place.
func (m *Impairer) SetImpairment(imp Impairment) { m.imp = imp }

// Impairment returns the current impairment.
func (m *Impairer) Impairment() Impairment { return m.imp }

// Stats returns the counters (Overflows and Errors stay zero: they belong
// to the I/O layer).
func (m *Impairer) Stats() Stats { return m.stats }

// Held returns how many reordered frames are waiting.
func (m *Impairer) Held() int { return len(m.held) }

// chance draws against probability p (without consuming randomness when p
// is 0 or 1).
func (m *Impairer) chance(p float64) bool {
	switch {
	case p <= 0:
		return false
	case p >= 1:
		return true
	}
	return m.rng.Float64() < p
}

// delay draws the delay of one frame.
func (m *Impairer) delay() time.Duration {
	d := m.imp.Delay
	if j := m.imp.Jitter; j > 0 {
		d += time.Duration(m.rng.Int64N(int64(2*j)+1)) - j
	}
	return max(d, 0)
}

// emit appends frame to out with a fresh delay.
func (m *Impairer) emit(out []Output, frame []byte) []Output {
	d := m.delay()
	if d > 0 {
		m.stats.Delayed++
	}
	m.stats.Forwarded++
	return append(out, Output{Frame: frame, Delay: d})
}

// emitCounting emits frame and then every held frame whose gap it closes.
func (m *Impairer) emitCounting(out []Output, frame []byte) []Output {
	out = m.emit(out, frame)
	kept := m.held[:0]
	for _, h := range m.held {
		if h.left--; h.left <= 0 {
			out = m.emit(out, h.frame)
		} else {
			kept = append(kept, h)
		}
	}
	clear(m.held[len(kept):])
	m.held = kept
	return out
}

// corrupt flips one random bit of frame in the corruptible area and
// reports whether it did.
func (m *Impairer) corrupt(frame []byte) bool {
	from := m.imp.CorruptFrom
	switch {
	case from == 0:
		from = DefaultCorruptFrom
	case from < 0:
		from = 0
	}
	if len(frame) <= from {
		return false
	}
	i := from + m.rng.IntN(len(frame)-from)
	frame[i] ^= 1 << m.rng.IntN(8)
	return true
}

// Process takes ownership of frame, impairs it and appends to out the
// frames to send now (each after its Delay): possibly none, the frame, its
// duplicate, and held-back frames whose turn has come. Output frames may
// share memory with frame.
func (m *Impairer) Process(frame []byte, out []Output) []Output {
	m.stats.Received++
	if m.etherType != 0 && (len(frame) < 14 || binary.BigEndian.Uint16(frame[12:14]) != m.etherType) {
		m.stats.Passed++
		m.stats.Forwarded++
		return append(out, Output{Frame: frame})
	}
	imp := m.imp
	if imp.Only != nil {
		if !imp.Only(frame) {
			m.stats.Forwarded++
			return append(out, Output{Frame: frame})
		}
		m.stats.Matched++
	}
	if m.chance(imp.Drop) {
		m.stats.Dropped++
		return out
	}
	var dup []byte
	if m.chance(imp.Duplicate) {
		dup = slices.Clone(frame)
		m.stats.Duplicated++
	}
	if m.chance(imp.Corrupt) && m.corrupt(frame) {
		m.stats.Corrupted++
	}
	if m.chance(imp.Reorder) {
		gap := imp.ReorderGap
		if gap <= 0 {
			gap = 1
		}
		m.stats.Reordered++
		m.held = append(m.held, heldFrame{frame: frame, left: gap})
		frame = nil
	}
	if frame != nil {
		out = m.emitCounting(out, frame)
	}
	if dup != nil {
		out = m.emitCounting(out, dup)
	}
	return out
}

// Flush appends every held-back frame to out, in arrival order, and
// forgets them (the relay calls it when no frame arrived for a while).
func (m *Impairer) Flush(out []Output) []Output {
	for _, h := range m.held {
		out = m.emit(out, h.frame)
	}
	clear(m.held)
	m.held = m.held[:0]
	return out
}
