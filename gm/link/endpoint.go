package link

import (
	"net"
	"time"
)

// Endpoint is what a GM port needs of a link, so that the port can run
// over something other than an AF_PACKET socket: *Link is one, the
// in-memory links of package linktest are others (tests without
// privileges), and a decorator (capture, fault injection) can wrap one.
// The methods follow the contracts of Link's methods of the same names.
//
// The port calls the receive side (Recv, Wait) from one goroutine at a
// time, and the send side (Send, SendBatch, TxSlot, TxCommit, Flush) from
// one goroutine at a time; Wake, Stats, Running and Close may be called
// from any goroutine.
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

	// Send transmits one complete Ethernet frame now; it does not retain
	// the frame.
	Send(frame []byte) error
	// SendBatch transmits frames in order and returns how many were
	// queued; it does not retain them.
	SendBatch(frames [][]byte) (int, error)
	// TxSlot lends a transmit slot to build a frame in place, or nil if
	// none is free (Flush, then retry).
	TxSlot() []byte
	// TxCommit queues the first n bytes of the last slot as a frame
	// (n <= 0 abandons it).
	TxCommit(n int) error
	// Flush starts the transmission of the committed frames.
	Flush() error

	// Recv fills frames with received frames without sleeping and returns
	// how many; the views stay valid until the next Recv or Wait.
	Recv(frames [][]byte) int
	// Wait is Recv that sleeps until a frame, Wake, timeout or Close
	// ((0, ErrClosed)).
	Wait(frames [][]byte, timeout time.Duration) (int, error)
	// Wake makes a concurrent or the next Wait return (0, nil).
	Wake()

	// Running reports whether the interface is up with a carrier.
	Running() bool
	// Stats returns the counters.
	Stats() Stats
	// Close closes the endpoint; a concurrent Wait returns ErrClosed.
	Close() error
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

// PortSetter is an Endpoint whose set of received target ports can change
// while it runs (*Link's SetPorts). A port narrows its links to the ports
// it must read; an Endpoint without it delivers every port's frames, which
// a reader must handle anyway.
type PortSetter interface {
	SetPorts(ports PortMask) error
}
