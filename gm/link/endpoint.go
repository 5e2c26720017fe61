package link

import (
	"net"
	"time"
)

// Endpoint is the link contract: everything a GM port, the mapper or a tool
// needs of a link, so that they run over something other than an
// AF_PACKET socket. *Link is one, the in-memory links of package linktest
// are others (tests without privileges), and a decorator (package
// capture's Wrap, fault injection) wraps one and is one. Nothing above this
// package asks an Endpoint for its concrete type: what an endpoint can do
// beyond the common methods it states in Caps, and every method exists on
// every endpoint, with the fallback its documentation gives when the
// capability is missing.
//
// The receive side (Recv, RecvOwned, RecvIdle, Wait) is used by one
// goroutine at a time, and so is the send side (Send, SendOwned,
// SendBatch, TxSlot, TxCommit, TxCommitNext, Flush); Wake, Stats, Running,
// SetPorts and Close may be called from any goroutine.
//
// A decorator forwards Caps of the endpoint it wraps (a decorator that
// hid CapOwnedReceive or CapSlots would take the fast paths away from
// whatever runs above it), forwards every method, and returns the wrapped
// endpoint from Unwrap.
type Endpoint interface {
	// Name is the interface name.
	Name() string
	// HardwareAddr is the interface's 6-byte MAC address.
	HardwareAddr() net.HardwareAddr
	// MTU is the interface MTU: the largest frame is MTU()+14 bytes.
	MTU() int
	// Geometry describes the endpoint's rings: how many frames it can
	// hold received, and which frames are worth building in a TxSlot.
	Geometry() Geometry
	// Caps states the endpoint's capabilities. It does not change while
	// the endpoint is open.
	Caps() Caps
	// Unwrap returns the endpoint a decorator wraps, nil for an endpoint
	// that wraps none (NewWaiter looks through decorators with it).
	Unwrap() Endpoint

	// Send transmits one complete Ethernet frame now; it does not retain
	// the frame.
	Send(frame []byte) error
	// SendOwned is Send for a caller that owns the send side: no other
	// send method and no Close runs at the same time. With CapOwnedSend it
	// skips Send's lock; without, it is Send.
	SendOwned(frame []byte) error
	// SendBatch transmits frames in order and returns how many were
	// queued; it does not retain them.
	SendBatch(frames [][]byte) (int, error)
	// TxSlot lends a transmit slot to build a frame in place, or nil if
	// none is free (Flush, then retry) or the endpoint has no slots
	// (Geometry().TxFrames == 0).
	TxSlot() []byte
	// TxCommit queues the first n bytes of the last slot as a frame
	// (n <= 0 abandons it).
	TxCommit(n int) error
	// TxCommitNext is TxCommit followed by TxSlot: it returns the next
	// slot (nil if none is free). With CapSlots both take one lock round
	// trip; without, it is the two calls.
	TxCommitNext(n int) ([]byte, error)
	// Flush starts the transmission of the committed frames.
	Flush() error

	// Recv fills frames with received frames without sleeping and returns
	// how many; the views stay valid until the next Recv, RecvOwned or
	// Wait.
	Recv(frames [][]byte) int
	// RecvOwned is Recv for a caller that owns the receive side: no Recv,
	// Wait or Close runs at the same time. With CapOwnedReceive it skips
	// Recv's lock; without, it is Recv.
	RecvOwned(frames [][]byte) int
	// RecvIdle reports, for a caller that owns the receive side as
	// RecvOwned's does, that Recv would find no frame now and has nothing
	// to give back. With CapIdle it answers from a few loads, without a
	// lock; true means a Recv now would return 0, false promises nothing.
	// Without CapIdle it returns false. A frame that arrives just after a
	// true answer is found by the next call.
	RecvIdle() bool
	// Wait is Recv that sleeps until a frame, Wake, timeout or Close
	// ((0, ErrClosed)).
	Wait(frames [][]byte, timeout time.Duration) (int, error)
	// Wake makes a concurrent or the next Wait (or Waiter.Wait) return
	// (0, nil).
	Wake()
	// SetPorts changes the target ports the endpoint receives (0 means
	// AllPorts). With CapPortFilter other ports' frames stay out of its
	// ring; without, it does nothing and returns nil: the endpoint
	// delivers every port's frames, which a reader must handle anyway.
	// Calls must not overlap each other.
	SetPorts(ports PortMask) error
	// JoinWait returns a Waiter that sleeps on eps together: endpoints of
	// the receiver's kind, the receiver among them, none a decorator
	// (NewWaiter unwraps them). It returns nil if the endpoint cannot
	// (without CapMultiWait, or eps of another kind). Programs call
	// NewWaiter, which falls back to polling.
	JoinWait(eps []Endpoint) Waiter

	// Running reports whether the interface is up with a carrier.
	Running() bool
	// Stats returns the counters.
	Stats() Stats
	// Close closes the endpoint; a concurrent Wait returns ErrClosed.
	Close() error
}

// Caps is a set of an Endpoint's capabilities: the fast paths it offers
// beyond the common methods. Each names the methods whose fallback it
// replaces (see Endpoint).
type Caps uint32

// The capabilities.
const (
	// CapOwnedReceive: RecvOwned reads without the receive lock.
	CapOwnedReceive Caps = 1 << iota
	// CapIdle: RecvIdle tells an empty ring from a few loads.
	CapIdle
	// CapOwnedSend: SendOwned sends without the send lock.
	CapOwnedSend
	// CapSlots: TxSlot lends slots of a transmit ring that Flush starts in
	// one call, and TxCommitNext commits and lends with one lock round
	// trip.
	CapSlots
	// CapPortFilter: SetPorts keeps other target ports' frames out.
	CapPortFilter
	// CapMultiWait: JoinWait sleeps on several endpoints of its kind at
	// once.
	CapMultiWait
)

// Has reports whether c holds every capability of want.
func (c Caps) Has(want Caps) bool { return c&want == want }

// Waiter sleeps on several endpoints at once (the rails of a multi-rail
// port): the several-endpoint form of Endpoint.Wait, which reads nothing.
// While Wait runs it owns the receive side of every endpoint. A Waiter is
// used by one goroutine at a time.
type Waiter interface {
	// Wait returns when one of the endpoints holds a frame (it reads
	// none), one of them is woken (Wake), timeout passes or one of them
	// is closed (ErrClosed). A timeout of 0 makes it one look; a negative
	// one waits without limit. It may return early, spuriously.
	Wait(timeout time.Duration) error
}

// PollInterval is how often the Waiter of NewWaiter looks at endpoints
// that cannot sleep together (no common JoinWait).
const PollInterval = 100 * time.Microsecond

// NewWaiter returns a Waiter over eps (at least one, all open): the
// endpoints' own (JoinWait of the innermost endpoints, through
// decorators) if they can sleep together, else one that sleeps
// PollInterval (or less, for a shorter timeout) and returns, so that its
// caller looks at every endpoint that often.
func NewWaiter(eps ...Endpoint) Waiter {
	base := make([]Endpoint, len(eps))
	for i, e := range eps {
		for u := e.Unwrap(); u != nil; u = u.Unwrap() {
			e = u
		}
		base[i] = e
	}
	if base[0].Caps().Has(CapMultiWait) {
		if w := base[0].JoinWait(base); w != nil {
			return w
		}
	}
	return pollWaiter{}
}

// pollWaiter is the Waiter of endpoints that cannot sleep together.
type pollWaiter struct{}

func (pollWaiter) Wait(timeout time.Duration) error {
	if timeout < 0 || timeout > PollInterval {
		timeout = PollInterval
	}
	time.Sleep(timeout)
	return nil
}

var _ Endpoint = (*Link)(nil)

// Geometry is what a link tells the protocol engine about its rings.
type Geometry struct {
	// RxFrames is how many full-size frames (MTU()+14 bytes) the receive
	// ring holds: the frames a peer may have in flight to it while the
	// reader is busy elsewhere. 0 means no bound is known.
	RxFrames int
	// TxFrames is the number of transmit slots TxSlot lends (0: none).
	TxFrames int
	// ZeroCopyMin is the smallest frame, in bytes with the Ethernet
	// header, that is worth building in place in a TxSlot instead of
	// handing it to SendBatch (which copies it); 0 means never.
	ZeroCopyMin int
}

// DefaultZeroCopyMin is Link's Geometry().ZeroCopyMin. TxSlot and TxCommit
// each take the Link's send mutex, TxCommitNext (a commit and the next
// slot) takes it once: a frame builder that uses it pays one lock round
// trip per frame built in place, against SendBatch's copy of the frame
// (and its build in a buffer before). That pays from full 1500-byte frames
// on (gm/internal/proto's BenchmarkEngineStream1MiB); for frames of a few
// hundred bytes the copy is the cheaper.
const DefaultZeroCopyMin = 1024
