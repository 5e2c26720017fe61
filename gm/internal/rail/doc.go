// Package rail is the set of links (rails) of a GM port: one per interface
// of the port's unit. The port always talks to a Set, of one rail or of
// several: the protocol engine sends through it (it is a proto.SlotOut and
// a proto.SlotNexter, the send side of its links' link.Endpoint),
// the port drains it, sleeps on it and reads its counters through it, and
// it holds the peers' MAC addresses (resolution for the engine, the rails'
// pairing) in one table, rebuilt by SetMap when the node map changes.
//
// # One path for any number of rails
//
// A set of one rail is the ordinary case of the same code: frames are
// routed (to rail 0), drained through the same merge (of one ring) and
// the set sleeps through a link.Waiter (link.NewWaiter) for one rail or
// several; Wait reads nothing, the next Drain does. One rail is never
// suspect (it is a peer's last working rail), and a down one is reported
// but still used (every peer's usable rails fall back to it). The one
// shortcut is Set.railPeer: with one rail there is no choice to make and
// nothing to learn about which rail a peer answers on, so the per-peer
// rail state is not kept (BenchmarkFakeRails1Hop shows that it pays).
//
// The set uses its links through link.Endpoint only: it reads and sends
// as the owner of their receive and send sides (RecvOwned, SendOwned:
// without their locks where the link has link.CapOwnedReceive and
// CapOwnedSend), asks RecvIdle only if every link has link.CapIdle, and
// commits a frame built in place with the link's TxCommitNext.
//
// # Several rails
//
// Pairing. The rail number of an interface is the position of its MAC
// address in this host's node map entry (its index in Unit.Interfaces if
// the map does not list it). The rail numbered n of this host reaches rail
// n of a peer: frames sent on it carry the peer's n-th MAC address. A peer
// with fewer rails is reached on the rails it has; one that has none of
// this unit's rail numbers is reached through the unit's first interface
// and the peer's first MAC (best effort, as with one rail). A map made by a
// mapper (routed) says instead which of the peer's MACs each interface
// reaches.
//
// Striping. Every reliable stream (this port, priority -> node, port) has
// a home rail (a hash of the stream over the rails that work). The frames
// of a message go out in chunks of chunkFrames frames: chunk k of every
// message on the k-th working rail after the home rail. So every message
// starts on the home rail, in order with the starts of the stream's other
// messages, and a message of up to chunkFrames frames (every small
// message) travels on one rail, in order. A large message is spread over
// all rails: bandwidth aggregation. Retransmissions, datagrams and tier-2
// frames go on the home rail. Acks and nacks go, in turn, on the rails on
// which the peer sent frames since this port last sent it something
// (answers follow the peer's use of the rails; see "Failover").
//
// Why chunks of a message and not frames or messages. The receiver
// reassembles a message from frames in any order once it has seen the
// stream's segment length, but it drops a frame of a message that starts
// beyond the next expected message (and asks for a go-back), and the
// sender counts a frame as lost once frames sent 3 transmissions after it
// are acknowledged. Striping single frames, or whole messages, across
// rails lets frames of a later message (or chunk) overtake earlier ones by
// as little as one frame; with chunks inside messages, only a skew of more
// than chunkFrames frames between rails can reorder message starts.
// Two more things keep the order: the sender starts each run of frames for
// one rail (one system call) before the next run of the batch, so the rails
// carry the frames in send order; and the receiver merges the rails' rings
// back into stream order (see Set.Drain), so that reading one ring before
// the other reorders nothing. On veth, striping then causes no
// retransmission (the port's TestIntegrationRails checks it; without these
// two, some frames were resent needlessly).
//
// Failover. A rail is down for every peer when its interface is down or
// has no carrier (Endpoint.Running, checked every carrierEvery) or a send
// on it fails with ENETDOWN (detected at once: the frame goes out on
// another rail). A rail is suspect for one peer when reliable frames sent
// to that peer on it are not answered on it while the peer's answers
// arrive on other rails (evidenceAcks acks or nacks, each at least
// evidenceWait after the first unanswered frame), or when the peer
// answers nothing on it for silence while this port keeps sending on
// it. Down and suspect rails carry no traffic to the peer; the frames lost
// on them are retransmitted by the protocol engine on the working rails,
// so the application sees no error. A rail comes back as soon as a frame
// arrives on it (any frame from the peer clears the suspicion), its
// carrier returns, or a probe answers: every probeEvery, a copy of a
// recent frame to the peer (a duplicate the peer acknowledges) is sent on
// each of its suspect rails.
//
// Frame headers are read through package wire's accessors (wire.FrameHeader,
// Header.Stream, wire.SeqBefore).
package rail
