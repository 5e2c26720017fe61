package gm

import (
	"fmt"
	"time"

	"github.com/ethergm/ethergm/gm/internal/proto"
)

// Remote memory access: gm_allow_remote_memory_access, gm_put (and its GM-1
// name gm_directed_send_with_callback) and gm_get.
//
// # Memory model
//
// GM lets a peer write and read the target process's virtual addresses.
// Go has no stable addresses to hand out, so memory is reachable from the
// network only through registration, GM's gm_register_memory:
// RegisterMemory(buf) returns the RemotePtr of buf[0], a 64-bit number made
// of a 24-bit region id and a 40-bit offset. The application passes it to
// its peers out of band (in a message, typically) and may do arithmetic on
// it within the region (ptr + 100 is buf[100]), as GM clients do with
// gm_remote_ptr_t. Every transfer is checked at the target against the
// region's bounds: an unknown region or a range that does not lie entirely
// inside one fails at the sender; the target's memory outside registered
// regions is never touched.
//
// As in GM, access is all or nothing: nothing is reachable until the
// target port calls AllowRemoteMemoryAccess, and from then on every region
// it registers is (there are no keys or per-region rights). The local
// buffers of Put and Get need no registration.
//
// # Failures
//
// A put or get to a port that has not allowed remote access, to an unknown
// (or deregistered) region, or beyond the end of a region completes with
// SendRejected at the sender, and, like any failed send, disables the
// stream until ResumeSending or DropSends. A port that has no reply record
// free (it serves proto.ReplySlots gets at once) makes a get wait and retry,
// like a message waiting for a receive buffer, up to
// Config.ProgressTimeout (then SendTimedOut). Closed ports and dead hosts
// give SendTargetPortClosed and SendTargetNodeUnreachable as for sends.

// RemotePtr is gm_remote_ptr_t: the address of a byte in a peer's
// registered memory, region id << RemotePtrRegionShift | offset. On a
// target opened with Config.VirtualAddresses it is instead a virtual
// address of the target process (RemotePtr(addr); Region and Offset mean
// nothing then). The zero value never points anywhere.
type RemotePtr uint64

const (
	// RemotePtrRegionShift is the position of the region id in a RemotePtr.
	RemotePtrRegionShift = proto.RegionShift
	// MaxRegionLen is the longest region RegisterMemory accepts (2^40).
	MaxRegionLen = proto.MaxRegionLen
	// MaxTransferLen is the longest put or get: gm_max_length_for_size(31).
	MaxTransferLen = proto.MaxTransferLen
	// ReplySlots is how many gets a port serves at once; more wait (their
	// senders retry).
	ReplySlots = proto.ReplySlots
)

// Errors of the memory registration calls.
var (
	// ErrRegion means a pointer that does not start a region registered
	// with this port (DeregisterMemory).
	ErrRegion = proto.ErrRegion
	// ErrRegionEmpty means RegisterMemory of an empty slice.
	ErrRegionEmpty = proto.ErrRegionEmpty
	// ErrRegionLarge means RegisterMemory of more than MaxRegionLen bytes.
	ErrRegionLarge = proto.ErrRegionLarge
	// ErrRegionsFull means every region id is in use.
	ErrRegionsFull = proto.ErrRegionsFull
)

// Region returns the region id of r.
func (r RemotePtr) Region() uint32 { return uint32(r >> RemotePtrRegionShift) }

// Offset returns the offset of r within its region.
func (r RemotePtr) Offset() uint64 { return uint64(r) & (MaxRegionLen - 1) }

// Add returns r advanced by n bytes (r + RemotePtr(n)).
func (r RemotePtr) Add(n int) RemotePtr { return r + RemotePtr(n) }

// String formats r as region:offset.
func (r RemotePtr) String() string { return fmt.Sprintf("%d:%#x", r.Region(), r.Offset()) }

// RegisterMemory is gm_register_memory: it makes buf reachable by puts
// and gets of peers (once AllowRemoteMemoryAccess was called) and returns
// the remote pointer of buf[0]. The port keeps buf until DeregisterMemory.
// Registering the same memory twice gives two regions. GM pinned pages;
// here registration only enters buf in the port's table.
//
// Puts write into buf while the port processes frames (inside Receive and
// its progress goroutine), without warning the application (no event, as in
// GM): read the memory only once a message sent by the writer after its put
// has arrived (puts and sends of one stream are ordered), or after another
// synchronization with the writer.
func (p *Port) RegisterMemory(buf []byte) (RemotePtr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return 0, ErrClosed
	}
	if p.pages != nil {
		return 0, fmt.Errorf("%w: this port was opened with Config.VirtualAddresses: its remote pointers are addresses; register memory with RegisterPages", InvalidParameter)
	}
	r, err := p.eng.RegisterMemory(buf)
	return RemotePtr(r), err
}

// DeregisterMemory is gm_deregister_memory: it removes the region whose
// first byte ptr points to (the pointer RegisterMemory returned). Later
// puts and gets to it fail with SendRejected; the rest of a put being
// received is discarded, a get being answered may still read it.
func (p *Port) DeregisterMemory(ptr RemotePtr) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	if p.pages != nil {
		return fmt.Errorf("%w: this port was opened with Config.VirtualAddresses: deregister memory with DeregisterPages", InvalidParameter)
	}
	return p.eng.DeregisterMemory(uint64(ptr))
}

// AllowRemoteMemoryAccess is gm_allow_remote_memory_access: from now on
// any peer may put into and get from every region registered with this
// port. It cannot be revoked (as in GM). Until it is called, puts and gets
// to this port fail at their sender with SendRejected.
func (p *Port) AllowRemoteMemoryAccess() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	p.eng.AllowRemoteAccess()
	return nil
}

// Put is gm_put: it writes local[:length] into the memory of port port of
// node node at remote, reliably and in order with the other sends, puts
// and gets of this (priority, node, port) stream: a message sent after a
// put is received after the put's data is in place. local must stay
// untouched until cb runs (inside Unknown) with the completion status,
// Success once every byte is in the target's memory and acknowledged; cb
// may be nil. It takes one send token. No event is raised at the target.
//
// Overlapping puts of one stream take effect in order. A get reads the
// target memory when its reply is sent, so a later put of the same stream
// to the same bytes may or may not be visible to it.
//
// Misuse returns an error and does nothing: ErrNoSendToken, ErrLength
// (length < 0, > len(local) or > MaxTransferLen), ErrPriority, ErrPortID,
// ErrUnknownNode, ErrClosed. Failures arrive as the callback's status (see
// the package's remote memory notes: SendRejected for a port without
// remote access or a bad pointer).
func (p *Port) Put(local []byte, remote RemotePtr, length int, pri Priority, node NodeID, port int, cb SendCallback, ctx any) error {
	return p.submit(port, cb, func(now time.Duration, cbv any) error {
		return p.eng.Put(now, local, uint64(remote), length, uint8(pri), uint32(node), uint8(port), cbv, ctx)
	})
}

// DirectedSendWithCallback is gm_directed_send_with_callback, GM-1's name
// for gm_put, with the same arguments: it is Put.
func (p *Port) DirectedSendWithCallback(local []byte, remote RemotePtr, length int, pri Priority, node NodeID, port int, cb SendCallback, ctx any) error {
	return p.Put(local, remote, length, pri, node, port, cb, ctx)
}

// Get is gm_get: it reads length bytes at remote in the memory of port
// port of node node into local[:length]. The request travels in order with
// the stream's sends and puts (a get after a put reads the put's data);
// the target answers with the data in its own stream back to this port.
// cb runs (inside Unknown) with Success once every byte is in local; local
// must not be used until then. It takes one send token. A get completes
// when its data has arrived, so its callback may run after those of later
// sends of the stream.
//
// Besides the failures of Put, a get whose data stops coming after the
// target took the request (nothing at all arrives from the target's stream
// back to this port for the larger of Config.ProgressTimeout and
// Config.LivenessTimeout) completes with SendTimedOut; that failure does
// not disable the stream (the request itself was delivered).
func (p *Port) Get(remote RemotePtr, local []byte, length int, pri Priority, node NodeID, port int, cb SendCallback, ctx any) error {
	return p.submit(port, cb, func(now time.Duration, cbv any) error {
		return p.eng.Get(now, uint64(remote), local, length, uint8(pri), uint32(node), uint8(port), cbv, ctx)
	})
}
