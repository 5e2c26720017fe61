// Package link is EtherGM's link layer: it sends and receives whole
// Ethernet frames of one EtherType on one Linux interface through AF_PACKET
// sockets with memory-mapped TPACKET rings, filtered in the kernel to a set
// of EtherGM target ports. It knows the frame format (package wire) only
// well enough to filter, bound and check frames; everything else (ports,
// tokens, reliability) is the GM layer's business.
//
// # The contract
//
// Endpoint is the one link contract: the GM port, the mapper and the tools
// use a link only through it, and nothing above this package asks for a
// concrete type. An endpoint states what it can do beyond the common
// methods in Caps (as gVisor's link endpoints do): CapOwnedReceive and
// CapOwnedSend (RecvOwned and SendOwned skip the endpoint's locks for a
// caller that owns that side), CapIdle (RecvIdle tells an empty ring from
// a few loads), CapSlots (TxSlot lends transmit-ring slots, TxCommitNext
// commits and lends with one lock), CapPortFilter (SetPorts keeps other
// ports' frames out) and CapMultiWait (JoinWait sleeps on several
// endpoints of one kind). Every method exists on every endpoint; without
// the capability it falls back to the plain form (RecvOwned is Recv,
// RecvIdle is false, SetPorts does nothing), so a caller may always call
// it and looks at Caps only to choose a path. A Link has every capability;
// the in-memory links of gm/link/linktest all but the port filter.
//
// NewWaiter sleeps on several endpoints at once (a multi-rail port's
// rails): the endpoints' own JoinWait (for Links, a MultiWait over their
// file descriptors) found through decorators (Unwrap), else a poll every
// PollInterval.
//
// A decorator wraps an endpoint and is one: it forwards Caps and every
// method, adds its own work and returns the wrapped endpoint from Unwrap.
// Package capture's Writer.Wrap is one (a GM port applies it to each link
// with gm.Config.WrapLink); the link itself knows nothing of capture.
//
// The protocol engine (gm/internal/proto) is sans-I/O and does not import
// this package: its Out, SlotOut and SlotNexter are the send side of an
// Endpoint as the port's rail set (gm/internal/rail) presents it, one
// method for one: Send (the rail's SendOwned), SendBatch, TxSlot, TxCommit,
// Flush and TxCommitNext.
//
// # Sockets
//
// A Link owns up to three AF_PACKET SOCK_RAW sockets and an eventfd:
//
//	R  ring socket   bound to the EtherType on every interface (ifindex 0),
//	                 classic BPF filter, TPACKET_V3 RX ring; Send uses
//	                 sendto(2) on it
//	D  doorbell      bound like R, same filter, snap length 1, no ring;
//	                 only in open-block mode (see Waiting)
//	T  TX ring       protocol 0 (receives nothing), TPACKET_V3 TX ring of
//	                 fixed slots, PACKET_VNET_HDR if the kernel takes it,
//	                 optional PACKET_QDISC_BYPASS; used by SendBatch and
//	                 TxSlot/TxCommit/Flush
//	E  eventfd       Wake and Close interrupt a sleeping Wait
//
// R and D are bound to the EtherType, not to ETH_P_ALL: an ETH_P_ALL
// socket is a tap, for which the kernel clones every frame the host sends.
// Frames to the Link's own MAC (two GM ports of one host) therefore go
// through lo, where R and D, bound on every interface, take frames whose
// destination is their MAC; without a loopback interface, sending to the
// own MAC fails with ErrNoLoopback. Every socket gets its filter and ring
// before bind(2) names the protocol, so nothing unfiltered is ever queued.
//
// # Filter
//
// The classic BPF program (filter.go) accepts a frame only if its EtherType
// is Config.EtherType, its target port is below 32 with its bit set in
// Config.Ports (SetPorts changes it while the Link runs), and it arrived
// either on the Link's interface with a packet type other than
// PACKET_OTHERHOST, or on lo addressed to our own MAC. So a Link never
// reads back its own transmissions to other hosts, nor frames of other
// interfaces (other rails), and rejected frames cost no ring space.
//
// # Receive paths (Mode)
//
// A TPACKET_V3 RX ring hands frames to user space per block, and the
// kernel closes a block only when the next frame does not fit or the
// retire timer (at least 1 ms) fires: read only closed blocks and a lone
// frame waits a retire period. A Link uses one of three readers:
//
//   - "v3-open-block" (ModeOpenBlock, the default on x86-64) reads the V3
//     ring's still-open block as the kernel fills it: the latency of a
//     per-frame ring with V3's block batching for bulk traffic. It rests
//     on kernel internals (below) and is used only after the start-up
//     self-test passed.
//   - "v2-ring" (ModeV2): a TPACKET_V2 ring of fixed slots whose per-frame
//     tp_status is the documented hand-off. The same latency, less
//     streaming throughput (every frame can wake the reader). It is the
//     fallback when the self-test fails or cannot run (GOARCH other than
//     amd64), and Config.V2 selects it.
//   - "v3-block" (ModeBlock): the documented V3 reader, which reads a block
//     only once the kernel closed it. For bulk receivers only; selected by
//     Config.DisableOpenBlock or ETHERGM_LINK_OPENBLOCK=0.
//
// A fallback Mode says why, e.g. "v2-ring (fallback: open-block reading
// needs x86-64 memory ordering, GOARCH=arm64)".
//
// # Reading the open block
//
// Per frame, tpacket_rcv (net/packet/af_packet.c) (1) under the queue lock
// sets tp_next_offset, grows blk_len, increments num_pkts and zeroes
// tp_status; (2) copies the frame; (3) sets TP_STATUS_USER in tp_status,
// then writes tp_len, tp_snaplen, tp_mac and the timestamps. The reader
// keeps (block, packets consumed, next offset): in a closed block
// (TP_STATUS_USER in block_status) every field is final; in an open one,
// once num_pkts exceeds the packets consumed it spins (at most 50 us per
// call) until that packet's tp_status has TP_STATUS_USER, then takes the
// frame at its fixed offset with the length its EtherGM header declares,
// bounded by the next packet or the block's end; the fields written after
// the status bit are never used. Releasing a block zeroes its used part
// and num_pkts before handing it back, so no stale tp_status of the
// previous lap can look complete.
//
// The ordering this relies on (the copy visible before the status bit,
// num_pkts before the packet's fields) holds under x86-64's TSO memory
// model; weakly ordered CPUs have no barrier between copy and bit, hence
// amd64 only. Shared ring words are read with sync/atomic loads. The
// kernel may change without notice, hence:
//
// # Start-up self-test
//
// Open sends frames of random payload lengths from 0 to MTU-44 to our own
// MAC through lo and reads them with the reader above from a temporary
// two-block V3 ring whose block stays open during the test. Each must
// become readable while the block is still open, be counted in num_pkts,
// be byte-identical to what was sent, agree with the kernel's final
// tp_mac and tp_snaplen, and pass its CRC. Any failure, or lo missing or
// down, selects "v2-ring" with the reason. A process runs the test once
// per network namespace and EtherType, the first time it passes.
//
// # Validation
//
// Every frame is parsed (EtherType, version, type, declared lengths within
// the bytes the kernel stored) and its CRC32C checked (Config.NoCRCCheck
// skips it). Malformed frames and inconsistent ring offsets are counted in
// Stats.Malformed, bad CRCs in Stats.CRCErrors; both are skipped. Every
// offset read from the ring is bounds-checked, so no ring content can make
// the reader panic.
//
// # Cluster key
//
// With Config.Auth (or ETHERGM_CLUSTER_KEY_FILE) every frame leaving the
// Link is sealed (package wire/auth: the AUTH flag and a 20-byte trailer
// with the partition and a 128-bit tag; Send seals a copy, SendBatch and
// TxCommit seal in the TX slot), and every frame read is opened: frames
// without a valid tag are counted in Stats.AuthFailures, frames of another
// partition in Stats.ForeignPartition, and skipped. The CRC, which the tag
// makes redundant, is computed only for a frame that fails, to tell
// corruption from forgery. The views Recv and Wait return end at the
// payload, without the trailer; MTU is 20 bytes less. A decorator above
// the Link (a capture) sees the frames before sealing and after opening.
// Without a key none of this runs (docs/SECURITY.md).
//
// # Waiting
//
// Wait first calls Recv, then spins on the ring for Config.SpinTime, then
// sleeps in ppoll(2) on E, R and, in open-block mode, D. A V3 socket wakes
// poll only when a block retires, which is what D is for: it receives a
// one-byte copy of every frame R accepts and wakes poll per frame. The
// kernel delivers a frame to the most recently bound socket first, and D
// is bound before R, so by the time D has a frame, R's ring has it too.
// Before sleeping Wait drains D, then checks the ring again, so a frame
// arriving after the check rings D anew; a frame the doorbell missed still
// wakes poll through R when its block retires, and each poll is capped at
// 100 ms, so an idle Wait costs next to no CPU.
//
// # Transmit
//
// Send writes one frame with sendto(2) on R, addressed to the interface
// (or to lo): one system call, the cheapest path for a lone small frame,
// and through the qdisc, so taps (tcpdump) see it. SendBatch copies frames
// into T's ring and starts them with one sendto(fd, NULL, 0); TxSlot,
// TxCommit and Flush are the zero-copy form of the same path (TxCommitNext
// commits a slot and lends the next with one lock round trip). Geometry
// says from which frame size zero copy pays, how many slots the ring has
// and how many full frames the receive ring holds (a GM port advertises
// half as its window). Config.QdiscBypass makes T skip the qdisc: faster
// streaming, but taps do not see the frames and a full driver queue drops
// them. With PACKET_VNET_HDR each slot's virtio_net_hdr asks the kernel to
// copy a frame of up to 16384 bytes whole into the socket buffer; without
// it the kernel attaches the payload as fragments of the ring's pages,
// which a veth device copies once more (skb_copy_ubufs).
//
// Every sendto is non-blocking (MSG_DONTWAIT) and made as a raw system
// call, without the runtime's entersyscall and exitsyscall: while the
// kernel runs a long kick (veth delivers every queued frame within the
// call), the runtime would hand the caller's P to another thread, a
// context switch per kick. A raw call must not sleep, which MSG_DONTWAIT
// guarantees. EAGAIN and ENOBUFS are retried a bounded number of times,
// then ErrTxBusy is returned and the GM layer retransmits. The stale
// ENETDOWN the kernel reports once after an interface went down and up is
// retried once; sockets survive a down/up cycle.
//
// # Concurrency
//
// One goroutine at a time may receive (Recv, RecvOwned, RecvIdle, Wait)
// and one may send (Send, SendOwned, SendBatch, TxSlot, TxCommit,
// TxCommitNext, Flush); they may be different goroutines.
// Wake, Stats, Mode, HardwareAddr, MTU, Name and Close are safe from any
// goroutine. The frames Recv and Wait return are views into the ring,
// valid until the next Recv or Wait or Close, and must not be modified; a
// block (V2: a slot) that returned views goes back to the kernel at the
// start of the next Recv or Wait.
//
// Close marks the Link closed and writes the eventfd, which wakes a
// sleeping Wait; then it takes the receive and the send mutex, which
// Recv/Wait and the send methods hold throughout, so it unmaps the rings
// and closes the sockets only after the reader and the sender have left.
// Later calls see the closed flag (Wait returns ErrClosed, Recv 0). The
// statistics counters have one writer at a time (under the receive or the
// send mutex); on 64-bit platforms it updates them with plain stores,
// which Stats reads atomically. Stats accumulates PACKET_STATISTICS (which
// resets the kernel's counters) under its own mutex.
//
// # Costs and limits
//
// With the defaults a Link pins 8 MiB of ring memory for receiving and
// 512 KiB for transmitting (16 KiB slots and 4 MiB with a 9000-byte MTU).
// Each Link runs its filter on every EtherGM frame of the network
// namespace (all interfaces, lo included); it is not a tap, so the frames
// the host sends cost it nothing. Recv, Wait, Send and SendBatch do not
// allocate. VLAN-tagged frames are not handled.
package link
