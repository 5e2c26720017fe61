package gm

import (
	"fmt"

	"github.com/ethergm/ethergm/gm/internal/proto"
)

// EventType is enum gm_recv_event_type. The values are GM's, unchanged.
type EventType uint8

// The GM event types. Receive returns the receive types, NoRecvEvent,
// AlarmEvent, SentTokensEvent and (EtherGM's own) PortClosedEvent; the
// others exist so that ported code compiles and are never produced (see
// docs/GM-API.md).
const (
	NoRecvEvent             EventType = 0  // GM_NO_RECV_EVENT: nothing pending
	SendsFailedEvent        EventType = 1  // GM_SENDS_FAILED_EVENT (deprecated; never produced)
	AlarmEvent              EventType = 2  // GM_ALARM_EVENT: pass to Unknown, which runs alarm callbacks
	SentEvent               EventType = 3  // GM_SENT_EVENT (legacy gm_send; never produced)
	SleepEvent              EventType = 4  // _GM_SLEEP_EVENT (never produced: blocking receives block themselves)
	RawRecvEvent            EventType = 5  // GM_RAW_RECV_EVENT (mapper only; never produced)
	BadSendDetectedEvent    EventType = 6  // GM_BAD_SEND_DETECTED_EVENT (never produced)
	SendTokenViolationEvent EventType = 7  // GM_SEND_TOKEN_VIOLATION_EVENT (sends return ErrNoSendToken instead)
	RecvTokenViolationEvent EventType = 8  // GM_RECV_TOKEN_VIOLATION_EVENT (provides return ErrNoReceiveToken instead)
	BadRecvTokenEvent       EventType = 9  // GM_BAD_RECV_TOKEN_EVENT (never produced)
	AlarmViolationEvent     EventType = 10 // GM_ALARM_VIOLATION_EVENT (never produced)
	RecvEvent               EventType = 11 // GM_RECV_EVENT: low-priority message in Buffer
	HighRecvEvent           EventType = 12 // GM_HIGH_RECV_EVENT: high-priority message in Buffer
	PeerRecvEvent           EventType = 13 // GM_PEER_RECV_EVENT: low priority, sender port == this port
	HighPeerRecvEvent       EventType = 14 // GM_HIGH_PEER_RECV_EVENT
	FastRecvEvent           EventType = 15 // GM_FAST_RECV_EVENT: small low-priority message in Message, not yet in Buffer
	FastHighRecvEvent       EventType = 16 // GM_FAST_HIGH_RECV_EVENT
	FastPeerRecvEvent       EventType = 17 // GM_FAST_PEER_RECV_EVENT
	FastHighPeerRecvEvent   EventType = 18 // GM_FAST_HIGH_PEER_RECV_EVENT
	RejectedSendEvent       EventType = 19 // GM_REJECTED_SEND_EVENT (failures arrive as SentTokensEvent)
	OrphanedSendEvent       EventType = 20 // GM_ORPHANED_SEND_EVENT (never produced)
	BadResendDetectedEvent  EventType = 24 // GM_BAD_RESEND_DETECTED_EVENT (never produced)
	DroppedSendEvent        EventType = 25 // GM_DROPPED_SEND_EVENT (drops arrive as SentTokensEvent)
	BadSendVMAEvent         EventType = 26 // GM_BAD_SEND_VMA_EVENT (never produced)
	BadRecvVMAEvent         EventType = 27 // GM_BAD_RECV_VMA_EVENT (never produced)
	FlushedAlarmEvent       EventType = 28 // _GM_FLUSHED_ALARM_EVENT (never produced)
	SentTokensEvent         EventType = 29 // GM_SENT_TOKENS_EVENT: pass to Unknown, which runs send callbacks
	IgnoreRecvEvent         EventType = 30 // GM_IGNORE_RECV_EVENT (never produced)
	EthernetRecvEvent       EventType = 31 // GM_ETHERNET_RECV_EVENT (never produced)
	FatalFirmwareErrorEvent EventType = 32 // GM_FATAL_FIRMWARE_ERROR_EVENT (never produced)

	// PortClosedEvent is EtherGM's own event type (GM has none: its
	// receive calls on a closed port are undefined): Receive and the
	// blocking receives return it on a closed port, every time, and a
	// BlockingReceive that is waiting when the port closes returns it.
	// A receive loop ends on it; Unknown ignores it. Its value follows
	// GM's last event type.
	PortClosedEvent EventType = 33 // no GM equivalent
)

var eventNames = map[EventType]string{
	0: "GM_NO_RECV_EVENT", 1: "GM_SENDS_FAILED_EVENT", 2: "GM_ALARM_EVENT", 3: "GM_SENT_EVENT",
	4: "_GM_SLEEP_EVENT", 5: "GM_RAW_RECV_EVENT", 6: "GM_BAD_SEND_DETECTED_EVENT",
	7: "GM_SEND_TOKEN_VIOLATION_EVENT", 8: "GM_RECV_TOKEN_VIOLATION_EVENT",
	9: "GM_BAD_RECV_TOKEN_EVENT", 10: "GM_ALARM_VIOLATION_EVENT", 11: "GM_RECV_EVENT",
	12: "GM_HIGH_RECV_EVENT", 13: "GM_PEER_RECV_EVENT", 14: "GM_HIGH_PEER_RECV_EVENT",
	15: "GM_FAST_RECV_EVENT", 16: "GM_FAST_HIGH_RECV_EVENT", 17: "GM_FAST_PEER_RECV_EVENT",
	18: "GM_FAST_HIGH_PEER_RECV_EVENT", 19: "GM_REJECTED_SEND_EVENT", 20: "GM_ORPHANED_SEND_EVENT",
	24: "GM_BAD_RESEND_DETECTED_EVENT", 25: "GM_DROPPED_SEND_EVENT", 26: "GM_BAD_SEND_VMA_EVENT",
	27: "GM_BAD_RECV_VMA_EVENT", 28: "_GM_FLUSHED_ALARM_EVENT", 29: "GM_SENT_TOKENS_EVENT",
	30: "GM_IGNORE_RECV_EVENT", 31: "GM_ETHERNET_RECV_EVENT", 32: "GM_FATAL_FIRMWARE_ERROR_EVENT",
	33: "GM_PORT_CLOSED_EVENT",
}

// String returns the GM name of the event type.
func (t EventType) String() string {
	if s, ok := eventNames[t]; ok {
		return s
	}
	return fmt.Sprintf("GM_EVENT(%d)", uint8(t))
}

// IsRecv reports whether t is one of the eight receive event types.
func (t EventType) IsRecv() bool { return t >= RecvEvent && t <= FastHighPeerRecvEvent }

// IsFast reports whether t is one of the four FAST receive event types.
func (t EventType) IsFast() bool { return t >= FastRecvEvent && t <= FastHighPeerRecvEvent }

// MaxFastRecvBytes is GM_MAX_FAST_RECV_BYTES: messages of at most this
// many bytes arrive as FAST events, with the data in Event.Message.
const MaxFastRecvBytes = proto.MaxFastRecvBytes

// Event is union gm_recv_event, in Go form. Receive and its blocking
// variants return a pointer to an Event owned by the port; it (and, for
// FAST events, Message) is valid only until the next Receive,
// BlockingReceive, BlockingReceiveNoSpin or Unknown call on the port. Fields
// are in host byte order (GM's are big-endian; there is no gm_ntoh here).
type Event struct {
	// Type is the event type; switch on it.
	Type EventType
	// Message holds the data: for FAST events the message, held by the
	// port (the one copy made from the received frame) and valid as long
	// as the event (call MemorizeMessage to keep it); for the other
	// receive events Buffer[:Length] (GM leaves it undefined there).
	Message []byte
	// Buffer is the receive buffer the client provided, exactly as
	// provided; it and its receive token now belong to the client again.
	// For non-FAST events the message is in Buffer[:Length].
	Buffer []byte
	// Length is the message length in bytes.
	Length int
	// SenderNode is the sending node's id.
	SenderNode NodeID
	// SenderPort is the sending port's id.
	SenderPort int
	// Tag is the tag the buffer was provided with.
	Tag uint8
	// Size is the size class of the buffer (and of the message).
	Size uint8
	// Priority is the message priority.
	Priority Priority
}

// MemorizeMessage is gm_memorize_message: it copies the first length
// bytes of message (a FAST event's Message) into buffer, unless they are
// already there, and returns buffer[:length]. Afterwards the event can be
// handled like a normal receive.
func MemorizeMessage(message, buffer []byte, length int) []byte {
	if length > len(buffer) {
		length = len(buffer)
	}
	if length > 0 && &message[0] != &buffer[0] {
		copy(buffer[:length], message[:length])
	}
	return buffer[:length]
}

// Memorize is MemorizeMessage for e: it copies a FAST event's message into
// e.Buffer, points e.Message at it and returns it.
func (e *Event) Memorize() []byte {
	if e.Type.IsFast() {
		e.Message = MemorizeMessage(e.Message, e.Buffer, e.Length)
	}
	return e.Message
}
