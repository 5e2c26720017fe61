// Package proto is EtherGM's sans-I/O port engine: GM's reliable, ordered,
// size-class-matched messaging as a state machine. It never reads the clock
// and never touches a socket: the caller passes the current time, feeds it
// received frames with Input, calls Tick after each batch, and supplies an
// Out through which the engine emits frames. The gm package wraps it with a
// link, a mutex and a progress goroutine; the tests drive two engines over an
// in-memory lossy pipe.
//
// # Streams, sessions and sequence numbers
//
// A stream is (this port, priority) -> (target node, target port, same
// priority), GM's subport pair. Each sending stream has its own session, a
// random nonzero 32-bit number, and a random initial sequence number; every
// data frame carries both. A stream's session changes when the sending port
// starts (a new process incarnation), when a disabled stream is resumed or
// its sends dropped, and when the receiver answers NackStaleSession. The
// receiver keeps, per (source node, source port, priority), the session it
// follows, the next expected sequence number and the message being
// reassembled.
//
// A receiver that sees a new session on a frame that starts a message (DATA
// or DATA_FIRST) abandons the old session's state (a partly filled buffer
// goes back to the head of its pool), remembers the old session as retired
// (its late frames are dropped silently) and follows the new one. A frame of
// an unknown session that does not start a message is answered with
// NackStaleSession; the sender then restarts the stream in a new session from
// the start of its oldest unacknowledged message.
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
// gaps, when they go out at the end of the current batch.
//
// The sender keeps at most Window frames in flight per stream and numbers
// every transmission. An unacknowledged frame below the highest selectively
// acked one is lost once a frame transmitted more than reorderSlack
// transmissions after it has been acked; lost frames (including lost
// retransmissions) are resent at once. The sender goes back to its oldest
// unacknowledged frame, skipping selectively acked ones, when the
// retransmission timeout expires (RTO = SRTT + 4 RTTVAR, clamped to [MinRTO, MaxRTO],
// doubled on every expiry).
//
// # Flow control and errors
//
// A receiver without a matching buffer answers NackNoBuffer; the sender
// rewinds to that message, backs off exponentially and then probes with the
// message's first frame alone until a buffer appears. If none appears within
// ProgressTimeout the send fails with GM_SEND_TIMED_OUT. NackRejected fails
// the send with GM_SEND_REJECTED, NackPortClosed with
// GM_SEND_TARGET_PORT_CLOSED; no answer at all within LivenessTimeout fails
// it with GM_SEND_TARGET_NODE_UNREACHABLE. Every failure disables the stream
// until Resume or Drop.
package proto
