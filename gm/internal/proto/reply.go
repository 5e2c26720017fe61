package proto

import (
	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

// Reply streams: a port serves gets (GOT transfers) on a stream of its own
// to each requester's port, apart from the streams of both priorities that
// carry the application's sends (docs/PROTOCOL.md section 7.6). A GET asks
// for it with wire.FlagSepReply; the reply stream's frames carry
// wire.FlagReply. It has its own session, sequence space, window,
// acknowledgements and retransmissions (it is an ordinary stream in every
// other respect: index replyPri of a peer's streams), so a get is served
// while the target's own sends to the requester are disabled (after an
// error, or gm_drop_sends), refused for lack of receive buffers, or queued,
// and its reply does not wait behind them. Nothing but GOT transfers is
// ever queued on it, and Resume and Drop do not reach it.

const (
	// replyPri is the index of the reply stream among a peer's streams to
	// one port, after the priorities'.
	replyPri = token.NumPriorities
	// numStreams is the number of streams per (peer, port) and direction.
	numStreams = token.NumPriorities + 1
	// streamFlags are the flags that identify a frame's stream (with its
	// ports and nodes); control frames copy them from the stream they are
	// about.
	streamFlags = wire.FlagHigh | wire.FlagReply
)

// priFlags returns the stream flags of the frames of stream pri.
func priFlags(pri uint8) wire.Flags {
	switch pri {
	case 0:
		return 0
	case replyPri:
		return wire.FlagReply
	}
	return wire.FlagHigh
}

// framePri returns the stream index of a frame with flags fl. A frame with
// both FlagReply and FlagHigh belongs to no stream: it is given to the
// reply stream, whose checks (replyType, rdmaNewMsg) refuse what is not a
// reply.
func framePri(fl wire.Flags) uint8 {
	if fl&wire.FlagReply != 0 {
		return replyPri
	}
	return uint8(fl & wire.FlagHigh)
}

// replyType reports whether frames of type t may belong to a reply stream:
// GOT transfers and the control frames about them. Anything else claiming
// to be of a reply stream is malformed (a reply stream delivers no message
// and takes no PUT, GET or datagram).
func replyType(t wire.Type) bool {
	switch t {
	case wire.TypeGot, wire.TypeAck, wire.TypeNack, wire.TypeOpen, wire.TypeOpenAck:
		return true
	}
	return false
}
