// Package link is EtherGM's link layer: it sends and receives whole
// Ethernet frames of one EtherType on one Linux interface through AF_PACKET
// sockets with memory-mapped TPACKET rings, filtered in the kernel to a set
// of EtherGM target ports. It knows the frame format (package wire) only
// well enough to filter, bound and check frames; everything else (ports,
// tokens, reliability) is the GM layer's business.
//
// Numbers below come from /work/shared/reference/afpacket.md ("the
// reference": Linux 6.18, x86-64, 2 vCPUs, veth, 64-byte payload
// ping-pong) and from this package's tests and benchmarks on the same kind
// of VM (see "Measurements").
//
// # Sockets
//
// A Link owns up to three AF_PACKET SOCK_RAW sockets and an eventfd:
//
//	R  ring socket   bound to the EtherType on every interface (ifindex 0),
//	                 classic BPF filter, TPACKET_V3 RX ring (default 64
//	                 blocks x 128 KiB, retire timeout 1 ms); Send uses
//	                 sendto(2) on it
//	D  doorbell      bound like R, same filter but snap length 1, minimal
//	                 SO_RCVBUF, no ring; only in open-block mode
//	T  TX ring       protocol 0 (receives nothing), TPACKET_V3 TX ring of
//	                 fixed slots, PACKET_LOSS, PACKET_VNET_HDR (if the
//	                 kernel takes it), optional PACKET_QDISC_BYPASS;
//	                 used by SendBatch, TxSlot/TxCommit/Flush
//	E  eventfd       Wake and Close interrupt a sleeping Wait
//
// R and D are bound to the EtherType, not to ETH_P_ALL: an ETH_P_ALL
// socket is a tap, and for every frame the host sends, the kernel clones
// the skb and runs each tap's filter (dev_queue_xmit_nit). With two taps
// per Link that cost about 0.4 us per round trip (measured with
// egm-linkperf, interleaved runs). Frames a Link sends to its own
// interface's MAC address (two GM ports of one host talking to each other,
// GM "loopback") therefore go through the loopback interface lo: Send
// addresses them to lo, and R and D, bound on every interface of the
// network namespace (ifindex 0), take frames from lo whose destination is
// their MAC. If the namespace has no loopback interface, R and D are bound
// to the interface alone and sending to the own MAC fails with
// ErrNoLoopback. Every socket is created with protocol 0 and gets its
// filter and ring before bind(2) names the protocol, so nothing unfiltered
// is ever queued.
//
// # Filter
//
// The classic BPF program (filter.go, unit-tested in bpf.NewVM) accepts a
// frame only if its EtherType is Config.EtherType, its target port (frame
// offset 16) is below 32 with its bit set in Config.Ports (which SetPorts changes
// while the Link runs), and it arrived
// either on the Link's interface with a packet type other than
// PACKET_OTHERHOST, or on lo with our own MAC as its destination (the
// ifindex and pkt_type BPF extensions). So a Link never reads back its own
// transmissions to other hosts, nor frames of other interfaces (other
// rails), but does see local loopback frames, including those it sends to
// its own MAC if its port mask accepts their target port. Rejected frames
// cost no ring space. Running it costs each host about 0.035 us per frame
// received (0.07 us per ping-pong round trip, measured against the bare
// floor with and without the program: bench/README.md, "Where a link round
// trip goes").
//
// # Receive paths (Mode)
//
// A TPACKET_V3 RX ring hands frames to user space per block, and a block is
// closed only when the next frame does not fit or the retire timer fires
// (1 ms minimum; 8 ms by default when the ring is set up before bind).
// Reading only closed blocks therefore costs one retire period per lone
// frame: the reference measured a 999.7 us RTT with poll and 1000.2 us when
// busy-polling block_status, against 4.9 us for a busy-polled TPACKET_V2
// ring and 87.8 us for UDP. A Link uses one of three readers:
//
//   - "v3-open-block" (ModeOpenBlock, the default on x86-64): the V3 ring's
//     still-open block is read as the kernel fills it. Measured in the
//     reference at 4.5 us RTT (busy-polled), the same as V2, and it keeps
//     V3's block batching for bulk traffic. It rests on kernel internals
//     described below and is used only after the start-up self-test passed.
//   - "v2-ring" (ModeV2): a TPACKET_V2 ring of fixed slots whose per-frame
//     tp_status is the documented hand-off (the kernel writes it after the
//     frame and all header fields, then wakes poll per frame). Same
//     latency as open-block, lower streaming throughput because every frame
//     can wake the reader. This is the automatic fallback when the
//     self-test fails or cannot run (GOARCH other than amd64), and is
//     selected directly by Config.V2.
//   - "v3-block" (ModeBlock): the documented V3 reader, which reads a block
//     only after the kernel set TP_STATUS_USER in block_status (retire
//     timer or overflow). A lone frame waits up to RetireTimeout (1 ms):
//     ~1 ms RTT. Selected by Config.DisableOpenBlock or the environment
//     variable ETHERGM_LINK_OPENBLOCK=0. Good for bulk receivers only.
//
// A fallback Mode says why, e.g. "v2-ring (fallback: open-block reading
// needs x86-64 memory ordering, GOARCH=arm64)".
//
// # Reading the open block
//
// What tpacket_rcv (net/packet/af_packet.c) does per frame, in order:
// (1) under the queue lock set tp_next_offset, grow blk_len, increment
// num_pkts and zero tp_status; (2) copy the frame; (3) set TP_STATUS_USER in
// tp_status, then write tp_len, tp_snaplen, tp_mac, tp_net and timestamps.
// On close, the last packet's tp_next_offset is set to 0 and block_status
// becomes TP_STATUS_USER. The reader keeps (current block, packets consumed
// in it, offset of the next packet) and:
//
//   - if block_status has TP_STATUS_USER, the block is closed: num_pkts and
//     every header field are final; the remaining packets are read using
//     tp_mac and tp_snaplen; when all are read the block is released;
//   - otherwise, if num_pkts (atomic load) exceeds the packets consumed, it
//     spins (at most 50 us per call) until that packet's tp_status has
//     TP_STATUS_USER, then takes the frame at the computed offset 82
//     (TPACKET_ALIGN(68 + 16) - 14 for SOCK_RAW, no PACKET_RESERVE), with
//     the length declared by the frame's own EtherGM header, bounded by the
//     next packet (tp_next_offset) or the block end. tp_len, tp_snaplen and
//     tp_mac of an open block are never used: they are written after the
//     status bit.
//   - releasing a block zeroes its used part (blk_len bytes after the
//     descriptor) and num_pkts before storing TP_STATUS_KERNEL, so that no
//     stale tp_status word of the previous lap, at an offset where a new
//     packet header lands, can look complete.
//
// The ordering this relies on (the frame copy visible before the status
// bit, num_pkts before the packet's fields) holds on x86-64's TSO memory
// model; on weakly ordered CPUs there is no barrier between copy and bit,
// hence amd64 only. All shared ring words are read with sync/atomic loads
// so the compiler cannot cache them. The reference's measurement program
// used the same technique for ~260 k round trips and ~8 M streamed frames
// without a misread, but the kernel may change without notice, hence:
//
// # Start-up self-test
//
// Open opens a temporary socket bound to the EtherType on lo, with a
// two-block V3 ring and a 1000 ms retire timeout (its first block stays
// open during the test), filtered to frames from our own MAC to target port
// wire.PortNone (which no Link accepts), and sends 8 DATAGRAM frames with a
// random session nonce and payload lengths from 0 to MTU-44 to our own MAC
// through lo from a second temporary socket. Each frame must become
// readable by the reader above within 1 s while block_status is still
// not TP_STATUS_USER, num_pkts must count it, it must be byte-identical to
// what was sent at offset 82, the kernel's final tp_mac (82) and tp_snaplen
// must agree, and its CRC must check. Frames of other Links' concurrent
// self-tests are recognised by the nonce and ignored. If the timer retires
// the test block anyway, the test is repeated once. Any failure selects
// "v2-ring" with the reason (also when lo is missing or down). Its frames
// never leave the host, and captures on lo show them. The frames take
// about a millisecond, the test about 50 ms (setting up and closing its
// ring socket waits for RCU grace periods in the kernel: BenchmarkOpen),
// so what it proves, which belongs to the kernel, is not proved again: a
// process runs it once per network namespace and EtherType, the first
// time it passes (an Open after a failure, or with lo down, runs it
// again).
//
// # Validation
//
// Every frame is parsed (EtherType, version, type, declared lengths within
// the bytes the kernel stored) and its CRC32C checked (hash/crc32 with the
// Castagnoli table, hardware-accelerated; disabled by Config.NoCRCCheck).
// Malformed frames and inconsistent ring offsets are counted in
// Stats.Malformed, bad CRCs in Stats.CRCErrors; both are skipped. Every
// offset read from the ring is bounds-checked, so no ring content can make
// the reader panic (unit-tested on random ring memory). The CRC check
// costs about 0.05-0.15 us per ping-pong round trip (both ends, measured
// with Config.NoCRCCheck): the computation (~25 ns per 64-byte frame) and
// the first read of the frame's last cache line, just written by the other
// CPU, which a receiver that reads only the header would not touch.
//
// # Cluster key
//
// With Config.Auth (or ETHERGM_CLUSTER_KEY_FILE), every frame leaving the
// Link is sealed (package wire/auth: the AUTH flag, the CRC recomputed, a
// 20-byte trailer with the partition and a 128-bit tag (SipHash-2-4 on
// short frames, GHASH-AES on long ones) appended
// after the payload; Send seals a copy, SendBatch and TxCommit seal in the
// TX slot), and every frame read from the ring is opened (its tag
// verified; the CRC, which the tag makes redundant, is computed only for a
// frame that fails, to count corruption as a CRC error): frames without a
// valid tag are counted in Stats.AuthFailures,
// frames of another partition in Stats.ForeignPartition, and skipped. The
// views Recv and Wait return end at the payload (the trailer stays in
// their capacity, and the Tap sees it); MTU is 20 bytes less. Without a
// key none of this runs (docs/SECURITY.md).
//
// # Waiting
//
// Wait first calls Recv, then spins on the ring for Config.SpinTime
// (default 50 us), then sleeps in ppoll(2) on E, R and, in open-block mode,
// D. A V3 socket wakes poll only when a block retires (once per block, not
// per frame), which is what D is for: it receives a one-byte copy of every
// frame R accepts and wakes poll per frame. The kernel delivers a frame to
// the most recently bound socket first, and D is bound before R, so by the time
// D has a frame, R's ring has it too (checked: in 8000 blocking round trips
// the doorbell never woke Wait before the frame was in the ring). Before
// sleeping Wait drains D, then checks the ring again (including packets
// counted but not yet complete), so a frame arriving after the check rings
// D anew. If poll returned because D rang but the ring shows nothing, Wait
// spins for another 20 us, in case the order of the taps ever changes. A
// frame the doorbell missed still wakes poll through R within 1 ms, when
// the retire timer closes its block; each poll is also capped at 100 ms. D's tiny
// receive buffer fills after a frame or two while the reader is busy, after
// which the kernel drops D's copies before cloning them. An idle Wait
// sleeps except for 10 capped wake-ups per second (tested: well under 1 %
// of a core).
//
// # Transmit
//
// Send writes one frame with sendto(2) on R, addressed to the interface
// (or to lo, see Sockets): one system call, the cheapest path for a single
// small frame (the reference measured the TX ring ~0.7 us slower for one
// 64-byte frame); it goes through the qdisc path, so taps (tcpdump) see it.
// Neither a socket with PACKET_QDISC_BYPASS nor send(2) without an address
// on a socket bound to the interface measured faster for lone frames on
// veth (noqueue qdisc; bench/README.md, "Where a link round trip goes"), so
// Send keeps this path. SendBatch copies frames into the V3 TX
// ring of T (fixed slots, frame at offset 48, tp_len then tp_status =
// TP_STATUS_SEND_REQUEST with an atomic store) and starts them with one
// sendto(fd, NULL, 0, MSG_DONTWAIT); slots are reused when the kernel has
// marked them available. TxSlot, TxCommit and Flush are the zero-copy form
// of the same path (TxCommitNext commits a slot and lends the next with one
// lock round trip); Geometry says from which frame size it pays
// (DefaultZeroCopyMin), how many slots the ring has and how many full-size
// frames the receive ring holds (a GM port advertises half of them as its
// receive window). With Config.QdiscBypass, T skips the qdisc
// (PACKET_QDISC_BYPASS: the reference measured +13 % streaming with the
// TX ring, but such frames are invisible to taps such as tcpdump and
// dropped, not queued, on a full driver queue). With PACKET_VNET_HDR each
// slot holds a zeroed virtio_net_hdr before its frame, whose hdr_len asks
// the kernel to copy a frame of up to 16384 bytes (every jumbo frame) whole
// into the socket buffer: otherwise it attaches the payload as fragments of the ring's
// pages, which a veth device copies again into a page it allocates per
// frame (skb_copy_ubufs; bench/README.md, "The streaming path", has the
// measurements). Frames addressed to our own
// MAC always go through R's sendto(2) to lo instead. Every sendto is
// non-blocking (MSG_DONTWAIT) and made as a raw system call, without the
// Go runtime's entersyscall and exitsyscall: they cost about 0.1 us per
// call, and while the kernel runs a long kick (veth delivers every queued
// frame within the call) the runtime's monitor hands the caller's P to
// another thread, which cost a streaming sender about 9,300 context
// switches per second on its CPU (250 without; bench/README.md). A raw call
// must not sleep, which MSG_DONTWAIT guarantees. EAGAIN and ENOBUFS are retried a
// bounded number of times (yield, then short sleeps), then ErrTxBusy is
// returned; the GM layer retransmits. After the interface went down and up,
// the kernel reports a stale ENETDOWN once on the next send; the send is
// retried once, so only a still-down interface returns ENETDOWN. Sockets
// survive a down/up cycle (the kernel re-registers them on NETDEV_UP).
//
// # Concurrency
//
// One goroutine at a time may receive (Recv, Wait) and one may send (Send,
// SendBatch, TxSlot, TxCommit, Flush); they may be different goroutines.
// Wake, Stats, Mode, HardwareAddr, MTU, Name and Close are safe from any
// goroutine. The frames returned by Recv and Wait are views into the ring:
// valid until the next Recv or Wait call or Close, and must not be
// modified. A block (V2: a slot) that has returned views is given back to
// the kernel only at the start of the next Recv or Wait.
//
// Close marks the Link closed and writes the eventfd, which wakes a Wait
// sleeping in poll (a spinning Wait checks the closed flag); then it takes
// the receive and the send mutex, which Recv/Wait and the send methods hold
// for their whole duration, so it unmaps the rings and closes the sockets
// only after the reader and the sender have left. Any later call sees the
// closed flag (Wait returns ErrClosed, Recv 0). The mutexes are uncontended
// on the data path (~20 ns). A Recv that finds nothing costs the mutex and
// a few loads (rxRing.idle: no block to give back, num_pkts and
// block_status of the current block unchanged): the cost of each turn of a
// polling loop. The statistics counters have one writer at a time (under
// the receive or the send mutex); on 64-bit platforms it updates them with
// plain stores, which Stats reads atomically (a word-sized racing read sees
// the old or the new value), saving a locked instruction per counter. Stats holds its own mutex around the
// PACKET_STATISTICS read (which resets the kernel counters, so they are
// accumulated), and Wake holds a read lock while writing the eventfd so
// that Close cannot close it underneath.
//
// # Costs and limits
//
// With the defaults a Link pins 8 MiB of ring memory for receiving and
// 512 KiB for transmitting (16 KiB slots and 4 MiB with a 9000-byte MTU).
// Each Link runs its filter on every EtherGM frame of the network
// namespace (all interfaces, lo included); it is not a tap, so the frames
// the host sends cost it nothing.
// VLAN-tagged frames are not handled.
//
// # Measurements
//
// Tests and benchmarks of this package on the test VM (2 vCPUs, veth pair
// between two namespaces, 64-byte payload, 1000-20000 round trips; other
// jobs were loading the host at the same time, so the ranges are wide and
// the tails long):
//
//	path          both ends poll (Recv)   both ends block (Wait, SpinTime<0)
//	open-block    RTT p50 3.9-4.7 us      p50 10-24 us
//	v2-ring       RTT p50 4.3 us          p50 20-24 us
//	v3-block      ~1-2 ms                 p50 1.0 ms (one retire period)
//
// For comparison the reference measured 4.5 us (open block, busy-polled),
// 4.9 us (V2, busy-polled), 82 us (V2 + poll), 87.8 us (UDP, sockperf) and
// 999.7 us (V3 + poll). Blocking is cheaper here than in the reference
// because the VM's haltpoll idle driver keeps short sleeps short. Streaming
// 1514-byte frames with SendBatch (32 per kick) to a Wait receiver, window
// 2048-4096 frames: 2.0-4.4 Gbit/s open-block, 1.6-4.7 Gbit/s v3-block,
// 1.1-3.3 Gbit/s v2-ring, with and without QdiscBypass (reference best:
// 3.94 Gbit/s, V2 TX ring + bypass); run-to-run noise exceeded the
// differences between the variants. Recv, Wait, Send and SendBatch do not
// allocate (BenchmarkRecv, TestIntegrationAllocs).
package link
