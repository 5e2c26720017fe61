package frameset

import (
	"encoding/binary"
	"fmt"

	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

// Params says between which endpoints the sample travels. Frames go from
// (SrcNode, SrcPort) at Src to (DstNode, DstPort) at Dst, except the
// replies (ACK, NACK, GOT, OPEN_ACK, SCOUT_REPLY, CONFIG_ACK), which are addressed
// the same way so that one receiver sees them all; only their fields say
// they are replies.
type Params struct {
	// Dst and Src are the Ethernet destination and source addresses.
	Dst, Src [6]byte
	// EtherType is the frames' EtherType; 0 means wire.EtherType.
	EtherType uint16
	// SrcNode, DstNode, SrcPort and DstPort are the EtherGM endpoints.
	SrcNode, DstNode uint32
	SrcPort, DstPort uint8
	// Session is the data sender's session.
	Session uint32
}

// Frame is one frame of the sample.
type Frame struct {
	// Name describes the frame, for example "DATA_MIDDLE seg 2/3" or
	// "NACK NO_BUFFER".
	Name string
	// Type is the frame's type.
	Type wire.Type
	// Bytes is the whole Ethernet frame, without padding.
	Bytes []byte
}

// SegmentLen is the payload length of the segments of the segmented
// message, and MessageLen that message's length: three segments of 1000,
// 1000 and 500 bytes.
const (
	SegmentLen = 1000
	MessageLen = 2500
)

// Addresses carried by the PUT, GET and GOT frames: RemoteAddr in the
// target's memory (PUT, and GET at RemoteAddr+0x100), LocalAddr the
// requester's address a GET asks the data to be stored at, which the GOT
// carries back as its remote address.
const (
	RemoteAddr uint64 = 0x00007f00deadbe00
	LocalAddr  uint64 = 0x0000000200000040
)

// OpenWindow is the receive window the OPEN_ACK advertises (448: half the
// default receive ring at MTU 9000).
const OpenWindow = 448

// MapperPort is the GM port mapper frames are exchanged on.
const MapperPort = 1

// pattern returns n bytes of a recognisable payload starting at off.
func pattern(n, off int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte((off + i) * 7)
	}
	return b
}

// Build returns the sample, in the order of wire.Types(), each type's
// variants together. It returns an error only if a mapper body cannot be
// built (a programming error).
func Build(p *Params) ([]Frame, error) {
	et := p.EtherType
	if et == 0 {
		et = wire.EtherType
	}
	var out []Frame
	seq := uint32(100)
	add := func(name string, dst [6]byte, hf wire.HeaderFields, payload []byte) {
		if !hf.Type.IsMapper() {
			hf.TargetPort, hf.SourcePort = p.DstPort, p.SrcPort
		}
		hf.TargetNode, hf.SourceNode = p.DstNode, p.SrcNode
		switch hf.Type {
		case wire.TypeAck, wire.TypeNack, wire.TypeOpen, wire.TypeOpenAck:
			hf.Session = p.Session
		default:
			if hf.Type.IsReliable() {
				hf.Session = p.Session
			}
		}
		out = append(out, Frame{
			Name:  name,
			Type:  hf.Type,
			Bytes: wire.AppendFrame(nil, dst, p.Src, et, &hf, payload),
		})
	}
	// Mapper frames go between mapper ports, carry the mapper's round in seq
	// and msglen = paylen (docs/PROTOCOL.md, section 7.8).
	round := uint32(5)
	addMapper := func(name string, dst [6]byte, t wire.Type, tnode uint32, body []byte) {
		hf := wire.HeaderFields{Type: t, TargetPort: MapperPort, SourcePort: MapperPort,
			TargetNode: tnode, SourceNode: p.SrcNode, Seq: round, MsgLen: uint32(len(body))}
		out = append(out, Frame{
			Name:  name,
			Type:  t,
			Bytes: wire.AppendFrame(nil, dst, p.Src, et, &hf, body),
		})
	}
	for _, t := range wire.Types() {
		switch t {
		case wire.TypeData:
			msg := []byte("hello from gm_frames: one whole DATA message")
			seq++
			add("DATA", p.Dst, wire.HeaderFields{Type: t, Flags: wire.FlagAckRequest,
				Size: token.MinSizeForLength(len(msg)), Seq: seq, MsgLen: uint32(len(msg))}, msg)
		case wire.TypeDataFirst, wire.TypeDataMiddle, wire.TypeDataLast:
			// One segment of the 3-segment message per type.
			k := int(t - wire.TypeDataFirst)
			off := k * SegmentLen
			n := min(SegmentLen, MessageLen-off)
			flags := wire.FlagAckValid
			if t == wire.TypeDataLast {
				flags |= wire.FlagAckRequest
			}
			add(fmt.Sprintf("%v seg %d/3", t, k+1), p.Dst, wire.HeaderFields{Type: t, Flags: flags,
				Size: token.MinSizeForLength(MessageLen), Seq: 200 + uint32(k), Ack: 41,
				MsgLen: MessageLen, Offset: uint32(off)}, pattern(n, off))
		case wire.TypeAck:
			// Acks 202 and reports 204 and 206 received out of order.
			add("ACK with selective ack", p.Dst, wire.HeaderFields{Type: t, Ack: 202}, []byte{0x0a})
			add("ACK go back", p.Dst, wire.HeaderFields{Type: t, Flags: wire.FlagRetransmit, Ack: 202}, nil)
		case wire.TypeNack:
			for r := wire.NackReason(1); r.Valid(); r++ {
				add("NACK "+r.String(), p.Dst, wire.HeaderFields{Type: t, Flags: wire.FlagAckValid,
					Status: uint8(r), Seq: 300 + uint32(r), Ack: 299 + uint32(r)}, nil)
			}
		case wire.TypePut:
			seq++
			add("PUT", p.Dst, wire.HeaderFields{Type: t, Flags: wire.FlagHigh | wire.FlagRetransmit,
				Seq: seq, MsgLen: 64, RemoteAddr: RemoteAddr}, pattern(64, 0))
		case wire.TypeGet:
			seq++
			laddr := binary.BigEndian.AppendUint64(nil, LocalAddr)
			add("GET", p.Dst, wire.HeaderFields{Type: t, Flags: wire.FlagSepReply, Seq: seq, MsgLen: 256,
				RemoteAddr: RemoteAddr + 0x100}, laddr)
		case wire.TypeGot:
			// On the reply stream (docs/PROTOCOL.md, section 7.6), whose
			// reverse stream this frame acknowledges.
			add("GOT", p.Dst, wire.HeaderFields{Type: t, Flags: wire.FlagReply | wire.FlagAckValid, Seq: 7, Ack: 3,
				MsgLen: 256, RemoteAddr: LocalAddr}, pattern(256, 0x100))
		case wire.TypeDatagram:
			msg := []byte("an unreliable DATAGRAM")
			add("DATAGRAM", p.Dst, wire.HeaderFields{Type: t, Flags: wire.FlagHigh,
				Size: token.MinSizeForLength(len(msg)), MsgLen: uint32(len(msg))}, msg)
		case wire.TypeOpen:
			// Session 0x5e55 replaces 0x5e54 (the session before it).
			add("OPEN", p.Dst, wire.HeaderFields{Type: t, Flags: wire.FlagHigh, Ack: p.Session - 1}, nil)
		case wire.TypeOpenAck:
			// The session starts at seq 200; 41 frames of the replaced one
			// arrived; the receiver takes OpenWindow frames in flight.
			add("OPEN_ACK", p.Dst, wire.HeaderFields{Type: t, Flags: wire.FlagAckValid, Seq: 200, Ack: 41,
				MsgLen: OpenWindow}, nil)
		case wire.TypeScout, wire.TypeScoutReply:
			// The sender is the mapper (level 1) scouting in round 5; the
			// receiver replies with what it holds.
			hi := wire.HostInfo{UniqueID: p.Src, Level: 1, MapVersion: 7, MapperID: p.Src,
				NodeID: p.SrcNode, Name: []byte("mapper-host")}
			dst, tnode := wire.Broadcast, uint32(0)
			if t == wire.TypeScoutReply {
				hi = wire.HostInfo{UniqueID: p.Src, MapVersion: 6, MapperID: p.Dst,
					NodeID: p.SrcNode, Name: []byte("replying-host")}
				dst, tnode = p.Dst, p.DstNode
			}
			body, err := wire.AppendHostInfo(nil, &hi)
			if err != nil {
				return nil, fmt.Errorf("frameset: %v body: %w", t, err)
			}
			addMapper(t.String(), dst, t, tnode, body)
		case wire.TypeConfig:
			entries := []wire.ConfigEntry{
				{NodeID: 1, UniqueID: [6]byte{2, 0, 0, 0, 0, 1}, Name: []byte("node-one")},
				{NodeID: 2, UniqueID: p.Dst, Name: []byte("node-two.example")},
				{NodeID: 3, UniqueID: p.Src, Name: nil},
				{NodeID: 4, UniqueID: [6]byte{2, 0, 0, 0, 0, 4}, Name: []byte("n4")},
			}
			body, err := wire.AppendConfig(nil, &wire.ConfigHeader{MapVersion: 7, MapperID: p.Src,
				TotalHosts: 6, First: 1}, entries)
			if err != nil {
				return nil, fmt.Errorf("frameset: CONFIG body: %w", err)
			}
			addMapper("CONFIG", p.Dst, t, p.DstNode, body)
		case wire.TypeConfigAck:
			body := wire.AppendConfigAck(nil, &wire.ConfigAck{MapVersion: 7, UniqueID: p.Src, NodeID: p.SrcNode})
			addMapper("CONFIG_ACK", p.Dst, t, p.DstNode, body)
		default:
			// A type this package does not know yet: header only.
			add(t.String()+" (generic)", p.Dst, wire.HeaderFields{Type: t}, nil)
		}
	}
	return out, nil
}
