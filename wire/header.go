package wire

import "encoding/binary"

// Protocol constants.
const (
	// EtherType is the default EtherType of EtherGM frames: 0x88B5, IEEE
	// 802 "local experimental EtherType 1". Deployments may configure another.
	EtherType uint16 = 0x88B5
	// EthHeaderLen is the length of the Ethernet header (destination MAC,
	// source MAC, EtherType) in front of the EtherGM header.
	EthHeaderLen = 14
	// HeaderLen is the length of the fixed EtherGM header.
	HeaderLen = 44
	// RemoteAddrLen is the length of the remote address extension that
	// follows the fixed header in PUT, GET and GOT frames.
	RemoteAddrLen = 8
	// MaxHeaderLen is the longest EtherGM header: HeaderLen + RemoteAddrLen.
	MaxHeaderLen = HeaderLen + RemoteAddrLen
	// MinFrameLen is the shortest frame ParseFrame accepts:
	// EthHeaderLen + HeaderLen.
	MinFrameLen = EthHeaderLen + HeaderLen
	// MaxPayloadLen is the largest payload one frame can describe (the
	// payload length field has 16 bits). The link MTU is usually smaller.
	MaxPayloadLen = 0xFFFF
	// Version is the protocol version this package speaks, carried in byte 0.
	Version = 1
	// TargetPortOffset is the offset of the target port byte in the EtherGM
	// header (frame offset EthHeaderLen+TargetPortOffset = 16); BPF filters
	// test this byte.
	TargetPortOffset = 2
	// PortNone is a target port no GM port can have. The link's start-up
	// self-test frames are DATAGRAMs addressed to it.
	PortNone uint8 = 0xFF
	// NumPorts is the number of GM ports per interface (GM_NUM_PORTS);
	// valid port ids are 0..NumPorts-1.
	NumPorts = 16
)

// Byte offsets of the header fields, from the start of the EtherGM header.
const (
	OffVersion    = 0  // u8 protocol version
	OffType       = 1  // u8 Type
	OffTargetPort = 2  // u8 target port
	OffSourcePort = 3  // u8 source port
	OffFlags      = 4  // u16 Flags
	OffSize       = 6  // u8 GM size class
	OffStatus     = 7  // u8 status (NackReason in NACK frames)
	OffTargetNode = 8  // u32 target node id
	OffSourceNode = 12 // u32 source node id
	OffSession    = 16 // u32 session
	OffSeq        = 20 // u32 sequence number
	OffAck        = 24 // u32 cumulative ack
	OffMsgLen     = 28 // u32 message length
	OffOffset     = 32 // u32 segment offset
	OffPayloadLen = 36 // u16 payload length
	OffReserved   = 38 // u16 reserved
	OffCRC        = 40 // u32 CRC32C
	OffRemoteAddr = 44 // u64 remote address (PUT, GET, GOT)
)

// Header is a view of an EtherGM header, starting at its first byte (frame
// offset EthHeaderLen) and normally extending to the end of the frame. Obtain
// one from ParseFrame, which checks that the fixed header, the extension and
// the payload are all present; the getters and setters then never panic.
// Getters on a Header shorter than its declared contents may panic, except
// Payload, Len and ComputeCRC, which are safe on any input.
//
// A Header does not copy: it aliases the frame buffer, so it is valid only as
// long as that buffer is, and setters modify the frame in place. After
// changing any field, call UpdateCRC before sending the frame again.
type Header []byte

// Version returns the protocol version (byte 0).
func (h Header) Version() uint8 { return h[OffVersion] }

// Type returns the frame type (byte 1).
func (h Header) Type() Type { return Type(h[OffType]) }

// TargetPort returns the GM port the frame is addressed to.
func (h Header) TargetPort() uint8 { return h[OffTargetPort] }

// SourcePort returns the GM port that sent the frame.
func (h Header) SourcePort() uint8 { return h[OffSourcePort] }

// Flags returns the flag bits.
func (h Header) Flags() Flags { return Flags(binary.BigEndian.Uint16(h[OffFlags:])) }

// Size returns the GM size class of the message (0 where not meaningful).
func (h Header) Size() uint8 { return h[OffSize] }

// Status returns the status byte: the NackReason of a NACK frame, else 0.
func (h Header) Status() uint8 { return h[OffStatus] }

// NackReason returns the status byte as a NackReason (meaningful for NACK
// frames only).
func (h Header) NackReason() NackReason { return NackReason(h[OffStatus]) }

// TargetNode returns the node id of the destination host.
func (h Header) TargetNode() uint32 { return binary.BigEndian.Uint32(h[OffTargetNode:]) }

// SourceNode returns the node id of the sending host.
func (h Header) SourceNode() uint32 { return binary.BigEndian.Uint32(h[OffSourceNode:]) }

// Session returns the session of the data sender the frame belongs to.
func (h Header) Session() uint32 { return binary.BigEndian.Uint32(h[OffSession:]) }

// Seq returns the sequence number.
func (h Header) Seq() uint32 { return binary.BigEndian.Uint32(h[OffSeq:]) }

// Ack returns the cumulative ack: the highest in-order sequence number
// received (valid in ACK frames, and in others when FlagAckValid is set).
func (h Header) Ack() uint32 { return binary.BigEndian.Uint32(h[OffAck:]) }

// MsgLen returns the length of the whole message the frame belongs to; in
// an OPEN_ACK, the receive window the receiver advertises (PROTOCOL.md 7.9).
func (h Header) MsgLen() uint32 { return binary.BigEndian.Uint32(h[OffMsgLen:]) }

// Offset returns the offset of this frame's payload within the message.
func (h Header) Offset() uint32 { return binary.BigEndian.Uint32(h[OffOffset:]) }

// PayloadLen returns the number of payload bytes in this frame.
func (h Header) PayloadLen() int { return int(binary.BigEndian.Uint16(h[OffPayloadLen:])) }

// Reserved returns the reserved 16-bit field, which senders set to 0 and
// receivers ignore.
func (h Header) Reserved() uint16 { return binary.BigEndian.Uint16(h[OffReserved:]) }

// CRC returns the CRC32C stored in the header.
func (h Header) CRC() uint32 { return binary.BigEndian.Uint32(h[OffCRC:]) }

// RemoteAddr returns the 64-bit remote address of a PUT, GET or GOT frame,
// or 0 for types without the extension.
func (h Header) RemoteAddr() uint64 {
	if !h.Type().HasRemoteAddr() {
		return 0
	}
	return binary.BigEndian.Uint64(h[OffRemoteAddr:])
}

// Len returns the length of the header including the remote address
// extension: HeaderLen, or HeaderLen+RemoteAddrLen for PUT, GET and GOT. It
// returns HeaderLen if h is too short to hold a type byte.
func (h Header) Len() int {
	if len(h) > OffType && h.Type().HasRemoteAddr() {
		return MaxHeaderLen
	}
	return HeaderLen
}

// Payload returns the PayloadLen bytes after the header, aliasing the frame.
// It returns nil if h is too short to hold them.
func (h Header) Payload() []byte {
	if len(h) < HeaderLen {
		return nil
	}
	start := h.Len()
	end := start + h.PayloadLen()
	if end > len(h) {
		return nil
	}
	return h[start:end:end]
}

// ComputeCRC computes the CRC32C (Castagnoli) of header bytes 0..39, the
// remote address extension (if any) and the payload: everything the header
// declares except the CRC field itself. It returns 0 if h is too short to
// hold what it declares.
func (h Header) ComputeCRC() uint32 {
	if len(h) < HeaderLen {
		return 0
	}
	end := h.Len() + h.PayloadLen()
	if end > len(h) {
		return 0
	}
	return crc32cTwo(h[:OffCRC], h[HeaderLen:end])
}

// CheckCRC reports whether the stored CRC matches ComputeCRC. It returns
// false if h is too short to hold what it declares.
func (h Header) CheckCRC() bool {
	if len(h) < HeaderLen || h.Len()+h.PayloadLen() > len(h) {
		return false
	}
	return h.ComputeCRC() == h.CRC()
}

// UpdateCRC computes the CRC and stores it in the header. Call it after any
// setter before sending the frame.
func (h Header) UpdateCRC() { h.SetCRC(h.ComputeCRC()) }

// SetTargetPort sets the target port.
func (h Header) SetTargetPort(p uint8) { h[OffTargetPort] = p }

// SetSourcePort sets the source port.
func (h Header) SetSourcePort(p uint8) { h[OffSourcePort] = p }

// SetFlags sets the flag bits.
func (h Header) SetFlags(f Flags) { binary.BigEndian.PutUint16(h[OffFlags:], uint16(f)) }

// SetSize sets the GM size class.
func (h Header) SetSize(s uint8) { h[OffSize] = s }

// SetStatus sets the status byte.
func (h Header) SetStatus(s uint8) { h[OffStatus] = s }

// SetTargetNode sets the target node id.
func (h Header) SetTargetNode(n uint32) { binary.BigEndian.PutUint32(h[OffTargetNode:], n) }

// SetSourceNode sets the source node id.
func (h Header) SetSourceNode(n uint32) { binary.BigEndian.PutUint32(h[OffSourceNode:], n) }

// SetSession sets the session.
func (h Header) SetSession(s uint32) { binary.BigEndian.PutUint32(h[OffSession:], s) }

// SetSeq sets the sequence number.
func (h Header) SetSeq(s uint32) { binary.BigEndian.PutUint32(h[OffSeq:], s) }

// SetAck sets the cumulative ack.
func (h Header) SetAck(a uint32) { binary.BigEndian.PutUint32(h[OffAck:], a) }

// SetMsgLen sets the message length.
func (h Header) SetMsgLen(n uint32) { binary.BigEndian.PutUint32(h[OffMsgLen:], n) }

// SetOffset sets the segment offset.
func (h Header) SetOffset(o uint32) { binary.BigEndian.PutUint32(h[OffOffset:], o) }

// SetPayloadLen sets the payload length: the payload that follows the
// header must be n bytes long.
func (h Header) SetPayloadLen(n int) { binary.BigEndian.PutUint16(h[OffPayloadLen:], uint16(n)) }

// SetCRC stores c in the CRC field without checking it.
func (h Header) SetCRC(c uint32) { binary.BigEndian.PutUint32(h[OffCRC:], c) }

// SetRemoteAddr sets the remote address of a PUT, GET or GOT frame. It does
// nothing for other types, which have no extension.
func (h Header) SetRemoteAddr(a uint64) {
	if h.Type().HasRemoteAddr() {
		binary.BigEndian.PutUint64(h[OffRemoteAddr:], a)
	}
}

// Priority returns the frame's GM priority: 1 (high) with FlagHigh, else 0.
func (h Header) Priority() uint8 { return uint8(h.Flags() & FlagHigh) }

// Stream returns the reliable stream a frame belongs to (meaningful for
// frames whose Type IsReliable).
func (h Header) Stream() Stream {
	return Stream{
		SourceNode: h.SourceNode(), Session: h.Session(),
		SourcePort: h.SourcePort(), TargetPort: h.TargetPort(), Priority: h.Priority(),
		Reply: h.Flags()&FlagReply != 0,
	}
}

// Stream identifies a reliable stream as its receiver sees it: the
// sender's node and session, the sending and target ports and the
// priority, or Reply for a reply stream (FlagReply). Frames of one stream have equal Streams and are ordered by
// their sequence numbers (SeqBefore).
type Stream struct {
	SourceNode, Session              uint32
	SourcePort, TargetPort, Priority uint8
	Reply                            bool
}

// SeqBefore reports whether sequence number a comes before b in serial
// number arithmetic: a-b, read as a signed 32-bit number, is negative.
func SeqBefore(a, b uint32) bool { return int32(a-b) < 0 }

// FrameHeader returns the EtherGM header of an Ethernet frame that is
// known to be well formed (checked by ParseFrame on receipt, or built by
// AppendFrame): a view from offset EthHeaderLen, checked no further.
func FrameHeader(frame []byte) Header { return Header(frame[EthHeaderLen:]) }

// Fields returns a copy of the header's fields (everything except version,
// payload length, reserved and CRC).
func (h Header) Fields() HeaderFields {
	return HeaderFields{
		Type:       h.Type(),
		TargetPort: h.TargetPort(),
		SourcePort: h.SourcePort(),
		Flags:      h.Flags(),
		Size:       h.Size(),
		Status:     h.Status(),
		TargetNode: h.TargetNode(),
		SourceNode: h.SourceNode(),
		Session:    h.Session(),
		Seq:        h.Seq(),
		Ack:        h.Ack(),
		MsgLen:     h.MsgLen(),
		Offset:     h.Offset(),
		RemoteAddr: h.RemoteAddr(),
	}
}

// HeaderFields holds the header fields a sender chooses. AppendFrame fills in
// the version, the payload length, the reserved field and the CRC.
type HeaderFields struct {
	// Type is the frame type.
	Type Type
	// TargetPort and SourcePort are the destination and sending GM ports.
	TargetPort, SourcePort uint8
	// Flags holds the flag bits.
	Flags Flags
	// Size is the GM size class of the message, 0 where not meaningful.
	Size uint8
	// Status is the NackReason for NACK frames, else 0.
	Status uint8
	// TargetNode and SourceNode are the destination and sending node ids.
	TargetNode, SourceNode uint32
	// Session identifies the data sender's session.
	Session uint32
	// Seq is the sequence number.
	Seq uint32
	// Ack is the cumulative ack.
	Ack uint32
	// MsgLen is the length of the whole message (OPEN_ACK: the receive
	// window).
	MsgLen uint32
	// Offset is the offset of the payload within the message.
	Offset uint32
	// RemoteAddr is the remote address; it is sent only for PUT, GET and
	// GOT and must be 0 for other types.
	RemoteAddr uint64
}
