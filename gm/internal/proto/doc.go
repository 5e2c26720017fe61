// Package proto is EtherGM's sans-I/O port engine: GM's reliable, ordered,
// size-class-matched messaging as a state machine. It never reads the clock
// and never touches a socket: the caller passes the current time, feeds it
// received frames with Input, calls Pump after each batch (Tick once
// NextDeadline has passed), and supplies an
// Out through which the engine emits frames. The gm package wraps it with a
// link, a mutex and a progress goroutine; the tests drive two engines over an
// in-memory lossy pipe.
//
// # Streams, sessions and sequence numbers
//
// A stream is (this port, priority) -> (target node, target port, same
// priority), GM's subport pair. Each sending stream has its own session, a
// nonzero 32-bit number from crypto/rand, and sequence numbers that start
// where the receiver says. A stream's session changes when the sending port
// starts (a new process incarnation), when a disabled stream is resumed or
// its sends dropped, and when the receiver answers NackStaleSession. The
// receiver keeps, per (source node, source port, priority), the session it
// follows, the next expected sequence number, the messages being
// reassembled, the last four sessions it left with their final cumulative
// acks, and the pending proposal of a new session.
//
// Every session starts with a handshake (PROTOCOL.md sections 5.8 and
// 7.9). The sender proposes the session in an OPEN that names the session
// it replaces, and sends nothing of it until the answer. The receiver
// answers with an OPEN_ACK sent to the MAC its node map gives for the
// claimed sender (Config.Resolve), never to the frame's source: it carries
// the session's first sequence number, drawn from crypto/rand by the
// receiver, and, if the OPEN names a session the receiver follows or left,
// that session's final cumulative ack; the receiver stops accepting frames
// of a session an OPEN names. The receiver follows the new session only
// from its first frame: a frame that starts a message or transfer, of the
// pending session, at exactly the number it chose. So a forged or stray
// frame neither starts a session nor displaces the one followed (only a
// host that saw the OPEN_ACK could), and on a session change the sender
// completes the messages the receiver delivered in the replaced session
// and sends only the others again: no message is delivered twice or
// skipped, however many acks were lost, and whether a stale-session answer
// that caused the change was genuine or not. The steady state (frames of
// the session followed) costs nothing more than a comparison of the
// session. A receiver that does not know the replaced session is a new
// incarnation of the port: what went out to the old one unacknowledged,
// which it may have delivered, completes with an error status and never
// reaches the new one (Engine.orphan); a port that closed told its final
// ack (NackPortClosed with FlagAckValid), and then nothing fails.
//
// A frame of a session the receiver does not follow is dropped and
// answered with NackStaleSession (for a session it left, at most once per
// millisecond per stream): a sender that has moved on (or is gone) ignores
// the answer; a live sender opens a new session.
//
// # Reliability
//
// Frames of the message being reassembled are accepted in any order (they
// land at their offset in the bound buffer); frames of later messages are
// accepted only in order. ACKs carry the cumulative ack (the highest
// in-order sequence number) and, when frames beyond it arrived, a selective
// ack bitmap as payload (bit i of byte i/8, LSB first, is sequence number
// ack+1+i). An ACK with FlagRetransmit asks the sender to go back to ack+1
// (the receiver dropped frames of a later message). Acks are delayed
// (AckDelay) and piggybacked on reverse data frames (FlagAckValid), except
// when FlagAckRequest is set, every AckEvery frames, and on duplicates or
// gaps, when they go out at the end of the current batch (Pump or Tick).
// The ack requested by the frame that completes a message waits until the
// application has taken the message (TakeEvent), at most AckDelay: an
// answer sent at once carries it. A sender sends what the acks of a batch
// allow in Pump or Tick, in one burst.
//
// The sender keeps at most Window frames in flight per stream (fewer if the
// receiver's OPEN_ACK advertises a smaller receive window) and numbers
// every transmission. An unacknowledged frame below the highest selectively
// acked one is lost once a frame transmitted more than reorderSlack
// transmissions after it has been acked; lost frames (including lost
// retransmissions) are resent at once. When the retransmission timeout
// expires (RTO = SRTT + 4 RTTVAR + MaxAckDelay, clamped to [MinRTO, MaxRTO],
// doubled on every expiry) the sender resends its newest unacknowledged
// frame alone, with FlagAckRequest; once that frame is acknowledged, every
// frame sent before it and still unacknowledged is lost. (An ack describes
// every frame read before the one it acknowledges, so it does not matter
// whether it answers the probe or the first transmission; a merely late
// receiver costs one duplicate.) If the probe goes unanswered, the next
// timeout resends the oldest unacknowledged frame, the one after that the
// newest again. Receivers answer every duplicate and every retransmitted
// frame at once (with an ack, or the nack of the message they refuse).
// SRTT and RTTVAR come from one timed frame per stream at a time; with
// Config.Clock (a caller whose times lag the clock), from at most one per
// SampleGap, stamped by Clock at both ends.
//
// # Congestion control
//
// Every stream may also have no more frames in flight than its
// destination host's congestion window (cc.go, docs/PROTOCOL.md section
// 20): it starts at 64 frames, doubles per round trip up to the window
// while the path is clear, halves on a loss (a frame resent because
// selective acks, a timeout's probe or a go-back showed it lost; down to
// 64 when the round trip shows no queue: random loss), and, once the path
// has dropped, shrinks Swift-like when a round-trip sample exceeds the
// path's smallest plus 1 to 2 ms (more for small windows, for fairness),
// at most once per round trip. If the queue never drains for 50 ms (a
// competing TCP flow), delay is ignored until it does. The samples are
// the flights' RTT samples above (a caller with congestion control on
// passes exact times and sets no Config.Clock, so every flight is timed).
//
// # Flow control and errors
//
// A receiver without a matching buffer answers NackNoBuffer, naming the
// first sequence number of the refused message; it refuses every frame of
// the message that reaches it but answers a round of them with one nack
// (the message's first frame is always answered), and it does not ask the
// sender to go back for frames of later messages, which the sender resends
// anyway. The sender rewinds to the refused message on the first nack of a
// round, backs off exponentially (from 2 SRTT, between 200 us and 50 ms),
// and then probes with the message's first frame alone until a buffer
// appears. Refusals of frames sent before the rewind neither move the probe
// nor grow the back-off, however many trickle in. The progress timeout
// runs only while the refused message is the oldest unacknowledged one; a
// probe always goes out at its deadline, and the send fails with
// GM_SEND_TIMED_OUT when that probe (or a later one) is refused, so the
// decision is never taken without asking the receiver, and never postponed
// by refusals.
//
// NackRejected fails the send with GM_SEND_REJECTED, NackPortClosed with
// GM_SEND_TARGET_PORT_CLOSED. A stream with queued messages that hears
// nothing at all from the peer (no ACK, NACK or piggybacked ack) for
// LivenessTimeout fails with GM_SEND_TARGET_NODE_UNREACHABLE, also when its
// frames cannot even be sent. A peer that answers but never lets the stream
// advance (its oldest frame is never acknowledged, e.g. because a frame is
// lost every time) fails it with GM_SEND_TIMED_OUT after the larger of
// ProgressTimeout and LivenessTimeout without progress. Every failure
// disables the stream until Resume or Drop.
//
// # Datagrams
//
// Datagram sends one DATAGRAM frame at once, outside every stream: no
// session, no sequence number, no ack, no retransmission. It carries its
// sender's 64-bit datagram counter (SetDatagramCounter) in the session and
// seq fields, and a receiver keeps a 64-wide anti-replay window per source
// (node, port): a datagram is delivered at most once, as an ordinary
// receive event, if a buffer of its size and priority waits, and dropped
// (counted) otherwise (datagram.go, docs/PROTOCOL.md section 7.7).
//
// # Timers and input
//
// Tick runs the timers, which judge the peer, so the caller must call it
// only after feeding every frame received before now (a link drained
// empty); after a batch that may have left frames unread it calls Pump,
// which sends due acks and frames but runs no timer. Otherwise a loaded
// machine, where a process may not get to read its link for a long time,
// could fail a stream whose answers are waiting unread.
//
// # Diagnostics
//
// Dump describes every stream (sequence numbers relative to the session's
// first, frames in flight, retransmission, probe and back-off state,
// timers) and the last exceptional protocol events from a small trace ring
// (nacks, probes, go-backs, retransmission timeouts, failures).
package proto
