// Package gm is Myricom GM's programming model over raw Ethernet frames:
// ports, send and receive tokens, size-class-matched receive buffers, two
// priorities, reliable ordered messages, and the gm_receive event loop with
// gm_unknown. Names follow GM (docs/GM-API.md maps every GM function,
// constant and status to its Go form).
//
// # Model
//
// A unit is a host's board: a set of Ethernet interfaces, its rails
// (ResolveUnit). A port uses every rail of its unit: it receives on all of
// them, spreads large messages over them and fails over to the remaining
// rails when one goes down (Unit, Port.RailStats). A Port is one endpoint,
// 0..15, held by one process at a time per network namespace and unit
// (ports 0, 1 and 3 are reserved); the holder answers tools' queries
// (PortInfo, ListPorts). Nodes are named by stable node ids from a node
// map file (ParseNodeMap), which a running port reloads when it changes; a
// port may open before the map lists its host, and gets its node id when
// it does.
//
// A send names a size class and a length; it takes a send token (61 per
// port) until its callback runs inside Unknown. A receiver provides
// buffers with a size class, priority and tag (each takes one of 253
// receive tokens); an incoming message takes the oldest buffer of exactly
// its (size, priority), and comes back as a receive event. Messages of one
// stream (this port, priority -> node, port) arrive exactly once and in
// order; high priority may overtake low.
//
// # The event loop
//
//	for {
//		e := p.Receive() // or BlockingReceive / BlockingReceiveNoSpin
//		switch e.Type {
//		case gm.NoRecvEvent:
//		case gm.RecvEvent, gm.HighRecvEvent, gm.PeerRecvEvent, gm.HighPeerRecvEvent:
//			use(e.Buffer[:e.Length])
//			p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
//		case gm.FastRecvEvent, gm.FastHighRecvEvent, gm.FastPeerRecvEvent, gm.FastHighPeerRecvEvent:
//			use(e.Message) // or e.Memorize() to copy it into e.Buffer
//			p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
//		case gm.PortClosedEvent:
//			return // the port was closed
//		default:
//			p.Unknown(e) // runs send callbacks and alarms
//		}
//	}
//
// # Concurrency contract
//
// A Port is guarded by one mutex; every method is safe to call from any
// goroutine. As in GM, an event is valid only until the next Receive,
// BlockingReceive, BlockingReceiveNoSpin or Unknown call on the port, so a
// single goroutine should run the receive loop; other goroutines may send,
// provide buffers and set alarms meanwhile. Callbacks run only inside
// Unknown, on its caller's goroutine and without the mutex, so they may
// call the port (send, drop, resume).
//
// Receive does the protocol work itself: under the mutex it reads the
// link's receive ring (no goroutine hand-off, no channel), feeds the frames
// to the protocol engine, sends the acks and frames that became due, and
// returns the next queued event. A progress goroutine per port keeps the
// protocol alive when the application does not poll: every millisecond,
// if Receive has not been called since its last tick (then it leaves the
// mutex untouched) and no call of the application holds the mutex (it
// skips up to four such ticks in a row), it takes the mutex, drains the
// link, acks, retransmits, answers nacks, reloads the node map when it
// changed and queues events for the next Receive. Its ticks also keep the
// port's coarse clock, so that empty polls read no clock, and sends and
// polls that find frames read it once per batch of them. While
// BlockingReceive sleeps in the kernel (link.Wait) the mutex is free and
// the sleeper owns the link's reader side; the progress goroutine then
// wakes the sleeper (link.Wake) when a protocol timer is due or an event
// was queued. The protocol timers (retransmission, liveness, progress) run
// only right after the link was drained, so that a peer is never judged
// silent while its answers wait unread in the ring, as they can for a long
// time when the machine is loaded.
//
// BlockingReceive polls the ring as long as frames keep arriving and
// sleeps only after SpinTime without one, so a streaming receiver costs no
// system call or wake-up per frame.
//
// # Remote memory
//
// Put and Get reach memory the target port registered, once it called
// AllowRemoteMemoryAccess. By default a RemotePtr names a registered Go
// slice (RegisterMemory returns region id << 40 | offset). A port opened
// with Config.VirtualAddresses follows GM's own model instead, for C
// programs: remote pointers are the process's virtual addresses, and C or
// mmap'd memory is registered by 4096-byte page with RegisterPages and
// DeregisterPages, counted per page, checked per page, a transfer
// spanning adjacent registrations (docs/GM-API.md, section 6.2).
//
// # Datagrams
//
// DatagramSend is gm_datagram_send: one unreliable frame, never
// acknowledged or resent, delivered at most once (duplicated and replayed
// frames are dropped) as an ordinary receive event if the target provided
// a buffer of its size and priority, dropped and counted otherwise.
//
// # Capture and diagnostics
//
// Capture is a decorator the program attaches, so that a program that does
// not capture does not link a pcap writer: package capture's Writer.Wrap
// decorates a link endpoint to record every frame it sends and receives,
// and Config.WrapLink applies it to each link a port opens. To honour
// ETHERGM_PCAP (one pcapng file per process, shared by its ports):
//
//	w, err := capture.FromEnv() // nil, and capture off, unless ETHERGM_PCAP is set
//	if err != nil { ... }
//	defer w.Close() // after the ports
//	cfg.WrapLink = w.Wrap // a nil Writer's Wrap returns the link as it is
//
// Port.DebugState describes the protocol state of every stream.
//
// # Links
//
// A port depends on link.Endpoint, not on the AF_PACKET link itself:
// Config.OpenLink opens each interface's endpoint (link.Open by default),
// and Config.WrapLink, if set, decorates each one (a capture). The port
// takes the fast paths the endpoints state in their Caps (reads and sends
// without the link's locks, the idle check of a polling Receive, frames
// built in transmit slots) and sleeps on its rails through link.NewWaiter.
// The endpoint's Geometry sizes the port's protocol engine: the receive
// window it advertises to its peers' senders, and which frames it builds in
// place in transmit slots.
// Package gm/link/linktest provides in-memory endpoints on a shared hub
// (several hosts, lossy on demand, interfaces up and down), so that the
// port's behaviour is tested without privileges; the netns tests are the
// proof on real sockets.
//
// # Wire protocol
//
// Frames use EtherType 0x88B5 and the header of package wire. The
// reliability protocol (sessions, sequence numbers, selective acks, nacks,
// retransmission) is described in docs/GM-API.md and in the engine's
// package comment (gm/internal/proto).
package gm
