// Package linktest provides in-memory links for tests: a Hub is an
// Ethernet segment, and each Link on it is a link.Endpoint with a MAC
// address, so that GM ports (and anything else built on link.Endpoint) run
// without privileges, sockets or network namespaces. Several Links may
// share a MAC address: they are the ports of one host on one interface,
// and each receives every frame addressed to that MAC that another Link
// sent (as AF_PACKET sockets with every port selected do). Frames to the
// broadcast address reach every other Link.
//
// The segment is lossy on demand (Hub.SetDrop) and an interface can be
// taken down (Link.SetRunning). Delivery is immediate and in order.
package linktest

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/wire"
)

// DefaultMTU is the MTU of a Link opened with mtu 0.
const DefaultMTU = 1500

// txSlots is the number of transmit slots of a Link.
const txSlots = 64

// Hub is an in-memory Ethernet segment. The zero value is not usable; use
// NewHub. A Hub is safe for concurrent use.
type Hub struct {
	mu    sync.Mutex
	links []*Link
	drop  func(frame []byte) bool
	// changed is closed (and replaced) whenever a Link gets a frame, is
	// woken or closed while some Wait sleeps (waiters > 0): every sleeper
	// looks again.
	changed chan struct{}
	waiters int
}

// NewHub returns an empty segment.
func NewHub() *Hub { return &Hub{changed: make(chan struct{})} }

// SetDrop makes the segment drop every frame for which drop returns true
// (nil: lossless). drop runs with the Hub locked, on the sending
// goroutine; it must not call the Hub or its Links.
func (h *Hub) SetDrop(drop func(frame []byte) bool) {
	h.mu.Lock()
	h.drop = drop
	h.mu.Unlock()
}

// broadcastLocked wakes every sleeper.
func (h *Hub) broadcastLocked() {
	if h.waiters == 0 {
		return // nobody to wake: no allocation per frame
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// sleep waits, with the Hub locked, until the next broadcast or timer;
// it returns with the Hub unlocked and reports whether the timer fired.
func (h *Hub) sleep(timer <-chan time.Time) (expired bool) {
	ch := h.changed
	h.waiters++
	h.mu.Unlock()
	select {
	case <-ch:
	case <-timer:
		expired = true
	}
	h.mu.Lock()
	h.waiters--
	h.mu.Unlock()
	return expired
}

// Open attaches a new Link named name with MAC address mac and MTU mtu (0:
// DefaultMTU) to the segment. cfg may be nil; its fields are ignored.
func (h *Hub) Open(name string, mac [6]byte, mtu int, cfg *link.Config) *Link {
	if mtu <= 0 {
		mtu = DefaultMTU
	}
	l := &Link{hub: h, name: name, mac: mac, mtu: mtu, running: true}
	l.slots = make([][]byte, txSlots)
	for i := range l.slots {
		l.slots[i] = make([]byte, wire.EthHeaderLen+mtu)
	}
	h.mu.Lock()
	h.links = append(h.links, l)
	h.mu.Unlock()
	return l
}

// Opener returns a function with the signature of link.Open that opens a
// Link on h for each interface name, with the MAC address macs[name]; it
// fails with link.ErrNoInterface (in a *link.OpError) for other names.
func (h *Hub) Opener(macs map[string][6]byte, mtu int) func(ifname string, cfg *link.Config) (link.Endpoint, error) {
	return func(ifname string, cfg *link.Config) (link.Endpoint, error) {
		mac, ok := macs[ifname]
		if !ok {
			return nil, &link.OpError{Op: "lookup", Interface: ifname, Err: link.ErrNoInterface}
		}
		return h.Open(ifname, mac, mtu, cfg), nil
	}
}

// deliver hands a copy of frame, sent by from, to every other Link it is
// addressed to. The Hub is locked.
func (h *Hub) deliverLocked(from *Link, frame []byte) {
	if h.drop != nil && h.drop(frame) {
		return
	}
	dst := [6]byte(frame[0:6])
	bcast := dst == [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	got := false
	for _, l := range h.links {
		if l == from || l.closed || !l.running || !bcast && l.mac != dst {
			continue
		}
		if l.rxFrames > 0 && len(l.rx) >= l.rxFrames {
			l.st.KernelDrops++ // a full receive ring
			continue
		}
		var b []byte
		if k := len(l.free); k > 0 {
			b, l.free = l.free[k-1][:0], l.free[:k-1]
		}
		l.rx = append(l.rx, append(b, frame...))
		l.held.Store(int32(len(l.rx)))
		got = true
	}
	if got {
		h.broadcastLocked()
	}
}

// Link is one in-memory link on a Hub. It implements link.Endpoint.
type Link struct {
	hub  *Hub
	name string
	mac  [6]byte
	mtu  int

	// Guarded by hub.mu. Frame buffers are recycled (steady state without
	// allocation): lent holds the frames of the last Recv, free those
	// that can be reused.
	rx       [][]byte
	lent     [][]byte
	free     [][]byte
	woken    bool
	closed   bool
	running  bool
	st       link.Stats
	rxFrames int // receive queue bound (SetRxFrames); 0: none
	// held is len(rx), stored under hub.mu whenever it changes, for
	// RecvIdle and RecvOwned's empty poll (which take no lock). The
	// frames lent by the last Recv are not counted: they go back to the
	// free list at the next Recv that finds a frame, and nothing else
	// waits for them (the kernel's ring would).
	held atomic.Int32

	// Sender side (one goroutine).
	slots     [][]byte
	committed int
}

var _ link.Endpoint = (*Link)(nil)

// caps are a Link's capabilities: those of link.Link, so that ports over a
// Link take the paths they take over a link.Link, but for the port filter
// (a Link delivers every port's frames). The owned methods take the Hub's
// lock all the same: it guards the frames the senders queue.
const caps = link.CapOwnedReceive | link.CapIdle | link.CapOwnedSend | link.CapSlots | link.CapMultiWait

// Caps returns the Link's capabilities.
func (l *Link) Caps() link.Caps { return caps }

// Unwrap returns nil: a Link wraps no endpoint.
func (l *Link) Unwrap() link.Endpoint { return nil }

// SetPorts does nothing: a Link delivers every port's frames.
func (l *Link) SetPorts(link.PortMask) error { return nil }

// Name returns the interface name given to Open.
func (l *Link) Name() string { return l.name }

// HardwareAddr returns the Link's MAC address.
func (l *Link) HardwareAddr() net.HardwareAddr { return net.HardwareAddr(l.mac[:]) }

// MTU returns the Link's MTU.
func (l *Link) MTU() int { return l.mtu }

// Geometry returns the Link's geometry: RxFrames as set by SetRxFrames (0,
// no bound, by default), its transmit slots, and link.DefaultZeroCopyMin
// (so that ports over a Link take the paths they take over a link.Link).
func (l *Link) Geometry() link.Geometry {
	l.hub.mu.Lock()
	defer l.hub.mu.Unlock()
	return link.Geometry{RxFrames: l.rxFrames, TxFrames: len(l.slots), ZeroCopyMin: link.DefaultZeroCopyMin}
}

// SetRxFrames bounds the Link's receive queue to n frames, as a receive
// ring of n frames would (0: no bound): a frame that finds n frames not
// yet received is dropped and counted in Stats().KernelDrops. Geometry
// reports n.
func (l *Link) SetRxFrames(n int) {
	l.hub.mu.Lock()
	l.rxFrames = max(n, 0)
	l.hub.mu.Unlock()
}

// SetRunning takes the interface down (false: sends fail with
// link.ErrInterfaceDown, nothing is delivered to it) or up again.
func (l *Link) SetRunning(up bool) {
	l.hub.mu.Lock()
	l.running = up
	l.hub.mu.Unlock()
}

// Running reports whether the interface is up.
func (l *Link) Running() bool {
	l.hub.mu.Lock()
	defer l.hub.mu.Unlock()
	return l.running && !l.closed
}

func (l *Link) sendLocked(frame []byte) error {
	switch {
	case l.closed:
		return link.ErrClosed
	case !l.running:
		return &link.OpError{Op: "send", Interface: l.name, Err: link.ErrInterfaceDown}
	case len(frame) < wire.EthHeaderLen || len(frame) > wire.EthHeaderLen+l.mtu:
		return link.ErrFrameSize
	}
	l.st.TxFrames++
	l.st.TxBytes += uint64(len(frame))
	l.hub.deliverLocked(l, frame)
	return nil
}

// Send delivers frame to the Links it is addressed to.
func (l *Link) Send(frame []byte) error {
	l.hub.mu.Lock()
	defer l.hub.mu.Unlock()
	return l.sendLocked(frame)
}

// SendOwned is Send.
func (l *Link) SendOwned(frame []byte) error { return l.Send(frame) }

// SendBatch sends frames in order.
func (l *Link) SendBatch(frames [][]byte) (int, error) {
	l.hub.mu.Lock()
	defer l.hub.mu.Unlock()
	for i, f := range frames {
		if err := l.sendLocked(f); err != nil {
			return i, err
		}
	}
	return len(frames), nil
}

// TxSlot lends the next free transmit slot, or nil if every slot holds a
// committed frame (Flush sends them).
func (l *Link) TxSlot() []byte {
	if l.committed == len(l.slots) {
		return nil
	}
	return l.slots[l.committed]
}

// TxCommit queues the first n bytes of the slot of the last TxSlot.
func (l *Link) TxCommit(n int) error {
	if n <= 0 {
		return nil
	}
	if l.committed == len(l.slots) || n > len(l.slots[l.committed]) {
		return link.ErrFrameSize
	}
	l.slots[l.committed] = l.slots[l.committed][:n]
	l.committed++
	return nil
}

// TxCommitNext is TxCommit followed by TxSlot.
func (l *Link) TxCommitNext(n int) ([]byte, error) {
	if err := l.TxCommit(n); err != nil {
		return nil, err
	}
	return l.TxSlot(), nil
}

// Flush sends the committed frames.
func (l *Link) Flush() error {
	l.hub.mu.Lock()
	defer l.hub.mu.Unlock()
	var err error
	for i := 0; i < l.committed; i++ {
		if err == nil {
			err = l.sendLocked(l.slots[i])
		}
		l.slots[i] = l.slots[i][:cap(l.slots[i])]
	}
	l.committed = 0
	return err
}

func (l *Link) recvLocked(frames [][]byte) int {
	// The views of the previous Recv are no longer valid.
	l.free = append(l.free, l.lent...)
	l.lent = l.lent[:0]
	n := copy(frames, l.rx)
	for _, f := range frames[:n] {
		l.st.RxFrames++
		l.st.RxBytes += uint64(len(f))
	}
	l.lent = append(l.lent, l.rx[:n]...)
	k := copy(l.rx, l.rx[n:])
	clear(l.rx[k:])
	l.rx = l.rx[:k]
	l.held.Store(int32(len(l.rx)))
	return n
}

// RecvIdle is link.Endpoint's: it reports, without locking the Hub, that
// Recv would return 0 and has no frame of an earlier Recv to recycle.
func (l *Link) RecvIdle() bool { return l.held.Load() == 0 }

// RecvOwned is Recv for the owner of the receive side (CapOwnedReceive):
// an empty poll takes no lock; one that finds frames takes the Hub's lock,
// which guards the frames its senders queue.
func (l *Link) RecvOwned(frames [][]byte) int {
	if l.held.Load() == 0 {
		return 0
	}
	return l.Recv(frames)
}

// Recv returns the frames received so far (up to len(frames)).
func (l *Link) Recv(frames [][]byte) int {
	l.hub.mu.Lock()
	defer l.hub.mu.Unlock()
	if l.closed {
		return 0
	}
	return l.recvLocked(frames)
}

// Wait is Recv that sleeps until a frame arrives, Wake is called, timeout
// passes (a negative timeout: no limit) or the Link is closed.
func (l *Link) Wait(frames [][]byte, timeout time.Duration) (int, error) {
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	for {
		l.hub.mu.Lock()
		switch {
		case l.closed:
			l.hub.mu.Unlock()
			return 0, link.ErrClosed
		case len(l.rx) > 0 && len(frames) > 0:
			n := l.recvLocked(frames)
			l.hub.mu.Unlock()
			return n, nil
		case l.woken:
			l.woken = false
			l.hub.mu.Unlock()
			return 0, nil
		case timeout == 0 || len(frames) == 0:
			l.hub.mu.Unlock()
			return 0, nil
		}
		if l.hub.sleep(timer) {
			return 0, nil
		}
	}
}

// Wake makes a concurrent or the next Wait return (0, nil).
func (l *Link) Wake() {
	l.hub.mu.Lock()
	if !l.closed {
		l.woken = true
		l.hub.broadcastLocked()
	}
	l.hub.mu.Unlock()
}

// Stats returns the Link's counters (Mode "linktest").
func (l *Link) Stats() link.Stats {
	l.hub.mu.Lock()
	defer l.hub.mu.Unlock()
	s := l.st
	s.Mode = "linktest"
	return s
}

// Close detaches the Link from the segment; a concurrent Wait returns
// link.ErrClosed.
func (l *Link) Close() error {
	l.hub.mu.Lock()
	defer l.hub.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.rx, l.lent, l.free = nil, nil, nil
	l.held.Store(0)
	for i, x := range l.hub.links {
		if x == l {
			l.hub.links = append(l.hub.links[:i], l.hub.links[i+1:]...)
			break
		}
	}
	l.hub.broadcastLocked()
	return nil
}

// JoinWait returns a link.Waiter that sleeps until one of eps (Links of
// l's Hub, l among them) holds a frame (it consumes none), one of them is
// woken, timeout passes or one of them is closed (link.ErrClosed); nil if
// eps holds another kind of endpoint or a Link of another Hub.
func (l *Link) JoinWait(eps []link.Endpoint) link.Waiter {
	w := &waiter{hub: l.hub, links: make([]*Link, len(eps))}
	for i, e := range eps {
		x, ok := e.(*Link)
		if !ok || x.hub != l.hub {
			return nil
		}
		w.links[i] = x
	}
	return w
}

// waiter is the link.Waiter of Links of one Hub.
type waiter struct {
	hub   *Hub
	links []*Link
}

// Wait is link.Waiter's.
func (w *waiter) Wait(timeout time.Duration) error {
	h := w.hub
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	for {
		h.mu.Lock()
		for _, l := range w.links {
			switch {
			case l.closed:
				h.mu.Unlock()
				return link.ErrClosed
			case len(l.rx) > 0:
				h.mu.Unlock()
				return nil
			case l.woken:
				l.woken = false
				h.mu.Unlock()
				return nil
			}
		}
		if timeout == 0 {
			h.mu.Unlock()
			return nil
		}
		if h.sleep(timer) {
			return nil
		}
	}
}
