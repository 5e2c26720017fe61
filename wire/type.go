package wire

import (
	"strconv"
	"strings"
)

// Type is the EtherGM frame type, carried in byte 1 of the header. The zero
// value is not a valid type.
type Type uint8

// Frame types. Values not listed here are dropped by receivers (ErrUnknownType).
const (
	// TypeData carries a whole reliable message in one frame.
	TypeData Type = 1
	// TypeDataFirst carries the first segment of a segmented reliable message.
	TypeDataFirst Type = 2
	// TypeDataMiddle carries a segment that is neither first nor last.
	TypeDataMiddle Type = 3
	// TypeDataLast carries the last segment of a segmented reliable message.
	TypeDataLast Type = 4
	// TypeAck acknowledges reliable frames cumulatively; it has no payload.
	TypeAck Type = 5
	// TypeNack refuses one reliable frame; Status holds the NackReason.
	TypeNack Type = 6
	// TypePut writes its payload into the target's memory at RemoteAddr.
	TypePut Type = 7
	// TypeGet asks the target to send MsgLen bytes from its memory at
	// RemoteAddr back to the sender in GOT frames.
	TypeGet Type = 8
	// TypeGot carries data read by a GET, to be stored at the requester's
	// RemoteAddr.
	TypeGot Type = 9
	// TypeDatagram carries an unreliable single-frame message: no ack, no
	// retransmission, no ordering.
	TypeDatagram Type = 10
	// TypeOpen asks the receiver of a stream to start a new session (the
	// frame's Session) in place of the previous one (the frame's Ack field):
	// the first step of the session handshake.
	TypeOpen Type = 11
	// TypeOpenAck answers a TypeOpen, sent to the MAC the node map gives for
	// the stream's sender: it carries the new session's first sequence
	// number (Seq), chosen by the receiver, and, with FlagAckValid, the
	// cumulative ack of the previous session (Ack).
	TypeOpenAck Type = 12
	// TypeScout is broadcast by a mapper to discover hosts; its payload is a
	// HostInfo body describing the mapper.
	TypeScout Type = 0x20
	// TypeScoutReply answers a SCOUT; its payload is a HostInfo body
	// describing the replying host.
	TypeScoutReply Type = 0x21
	// TypeConfig carries (a slice of) the host table computed by the mapper;
	// its payload is a Config body.
	TypeConfig Type = 0x22
	// TypeConfigAck confirms that a host installed a map version; its
	// payload is a ConfigAck body.
	TypeConfigAck Type = 0x23
)

var typeNames = [...]string{
	TypeData:       "DATA",
	TypeDataFirst:  "DATA_FIRST",
	TypeDataMiddle: "DATA_MIDDLE",
	TypeDataLast:   "DATA_LAST",
	TypeAck:        "ACK",
	TypeNack:       "NACK",
	TypePut:        "PUT",
	TypeGet:        "GET",
	TypeGot:        "GOT",
	TypeDatagram:   "DATAGRAM",
	TypeOpen:       "OPEN",
	TypeOpenAck:    "OPEN_ACK",
	TypeScout:      "SCOUT",
	TypeScoutReply: "SCOUT_REPLY",
	TypeConfig:     "CONFIG",
	TypeConfigAck:  "CONFIG_ACK",
}

var allTypes = []Type{
	TypeData, TypeDataFirst, TypeDataMiddle, TypeDataLast, TypeAck, TypeNack,
	TypePut, TypeGet, TypeGot, TypeDatagram, TypeOpen, TypeOpenAck,
	TypeScout, TypeScoutReply, TypeConfig, TypeConfigAck,
}

// Types returns every defined frame type in ascending order. The caller may
// modify the returned slice.
func Types() []Type {
	return append([]Type(nil), allTypes...)
}

// String returns the type's name as used in docs/PROTOCOL.md (for example
// "DATA_FIRST"), or "Type(0xNN)" for an undefined value.
func (t Type) String() string {
	if t.Valid() {
		return typeNames[t]
	}
	return "Type(0x" + hex2(uint8(t)) + ")"
}

// Valid reports whether t is a defined frame type.
func (t Type) Valid() bool {
	return int(t) < len(typeNames) && typeNames[t] != ""
}

// HasRemoteAddr reports whether frames of type t carry the 8-byte remote
// address extension after the fixed header (PUT, GET and GOT).
func (t Type) HasRemoteAddr() bool {
	return t == TypePut || t == TypeGet || t == TypeGot
}

// IsData reports whether t is one of the reliable data types (DATA,
// DATA_FIRST, DATA_MIDDLE, DATA_LAST), which are sequenced and acknowledged.
func (t Type) IsData() bool {
	return t >= TypeData && t <= TypeDataLast
}

// IsReliable reports whether frames of type t are sequenced, acknowledged
// and retransmitted: the data types, PUT, GET and GOT.
func (t Type) IsReliable() bool {
	return t.IsData() || t == TypePut || t == TypeGet || t == TypeGot
}

// IsMapper reports whether t is a mapper type (SCOUT, SCOUT_REPLY, CONFIG,
// CONFIG_ACK) whose payload is a mapper body.
func (t Type) IsMapper() bool {
	return t >= TypeScout && t <= TypeConfigAck
}

// Flags is the 16-bit flag field at header offset 4. Undefined bits are sent
// as 0 and ignored on receipt.
type Flags uint16

// Flag bits.
const (
	// FlagHigh marks a frame of GM's high priority (priority 1); without it
	// the frame has low priority (priority 0).
	FlagHigh Flags = 1 << 0
	// FlagAckRequest asks the receiver to send an ACK now rather than delay it.
	FlagAckRequest Flags = 1 << 1
	// FlagAckValid says the Ack field carries a piggybacked cumulative ack
	// for the reverse direction (for ACK frames the Ack field is always valid).
	FlagAckValid Flags = 1 << 2
	// FlagRetransmit marks a frame sent again after a timeout or NACK.
	FlagRetransmit Flags = 1 << 3
	// FlagReply marks a frame of a reply stream: the stream from a port
	// that serves gets to the requester's port, which carries only GOT
	// transfers (and the OPEN, OPEN_ACK, ACK and NACK frames about it),
	// with a session and sequence space of its own, apart from both
	// priorities' streams. Part of the stream identity, like FlagHigh
	// (which a reply-stream frame never has). docs/PROTOCOL.md section 7.6.
	FlagReply Flags = 1 << 4
	// FlagSepReply, on a GET only, asks the target to send the reply on
	// its reply stream to the requester (FlagReply); a target that does
	// not know the flag ignores it and replies in its ordinary stream, as
	// before the flag.
	FlagSepReply Flags = 1 << 5
	// FlagAuth says the frame carries the cluster-key trailer (partition,
	// key id and MAC) right after its payload: docs/PROTOCOL.md section 19,
	// package wire/auth. Links without a cluster key never set it.
	FlagAuth Flags = 1 << 7
)

var flagNames = [...]struct {
	f    Flags
	name string
}{
	{FlagHigh, "HIGH"},
	{FlagAckRequest, "ACKREQ"},
	{FlagAckValid, "ACKVALID"},
	{FlagRetransmit, "RETRANSMIT"},
	{FlagReply, "REPLY"},
	{FlagSepReply, "SEPREPLY"},
	{FlagAuth, "AUTH"},
}

// String returns the set flags joined by "|" (for example "HIGH|ACKREQ"),
// with any undefined bits as a trailing hexadecimal value, or "0" when no
// bit is set.
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var sb strings.Builder
	for _, n := range flagNames {
		if f&n.f != 0 {
			if sb.Len() > 0 {
				sb.WriteByte('|')
			}
			sb.WriteString(n.name)
			f &^= n.f
		}
	}
	if f != 0 {
		if sb.Len() > 0 {
			sb.WriteByte('|')
		}
		sb.WriteString("0x")
		sb.WriteString(strconv.FormatUint(uint64(f), 16))
	}
	return sb.String()
}

// Has reports whether every bit of g is set in f.
func (f Flags) Has(g Flags) bool { return f&g == g }

// NackReason is the reason a NACK frame gives for refusing a frame; it is
// carried in the header's Status byte.
type NackReason uint8

// NACK reasons.
const (
	// NackNoBuffer: the target port has no receive buffer of the frame's
	// size class and priority right now. The sender backs off and retries.
	NackNoBuffer NackReason = 1
	// NackRejected: the size class is not acceptable to the target port.
	NackRejected NackReason = 2
	// NackPortClosed: the target port is not open.
	NackPortClosed NackReason = 3
	// NackStaleSession: the frame's session is not the receiver's current
	// session for the sender (for example after a restart); the sender
	// must open a new session.
	NackStaleSession NackReason = 4
)

var nackNames = [...]string{
	NackNoBuffer:     "NO_BUFFER",
	NackRejected:     "REJECTED",
	NackPortClosed:   "PORT_CLOSED",
	NackStaleSession: "STALE_SESSION",
}

// String returns the reason's name as used in docs/PROTOCOL.md (for example
// "NO_BUFFER"), or "NackReason(N)" for an undefined value.
func (r NackReason) String() string {
	if r.Valid() {
		return nackNames[r]
	}
	return "NackReason(" + strconv.Itoa(int(r)) + ")"
}

// Valid reports whether r is a defined NACK reason.
func (r NackReason) Valid() bool {
	return int(r) < len(nackNames) && nackNames[r] != ""
}

func hex2(b uint8) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}
