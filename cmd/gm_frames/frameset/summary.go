package frameset

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/ethergm/ethergm/wire"
)

// Summarizer formats one-line summaries of frames, the same text the Lua
// dissector (wire/wireshark/ethergm.lua) puts in Wireshark's Info column,
// for example
//
//	DATA_MIDDLE seq=201 ack=41 1:2 -> 2:3 session=0x5e55 size=12 len=1000 msglen=2500 seg 2/3 [ACKVALID]
//	OPEN_ACK seq=200 ack=41 1:2 -> 2:3 session=0x5e55 window=448 [ACKVALID]
//
// It remembers the segment length of each message stream so that the last
// segment of a message can be numbered, as the dissector does. The zero
// value is ready to use; a Summarizer is not safe for concurrent use.
type Summarizer struct {
	segLen map[string]int
}

// Summary returns the summary of frame, an Ethernet frame whose EtherType is
// etherType, or a description of why package wire rejects it (for example
// "malformed: wire: CRC mismatch").
func (s *Summarizer) Summary(frame []byte, etherType uint16) string {
	h, err := wire.ParseFrameCRC(frame, etherType)
	if err != nil {
		return "malformed: " + err.Error()
	}
	t := h.Type()
	isData := t.IsData()
	hasRA := t.HasRemoteAddr()
	reliable := t.IsReliable()
	var parts []string
	add := func(f string, a ...any) { parts = append(parts, fmt.Sprintf(f, a...)) }
	add("%v", t)
	if reliable || t == wire.TypeNack || t == wire.TypeOpenAck {
		add("seq=%d", h.Seq())
	}
	if t == wire.TypeAck || h.Flags().Has(wire.FlagAckValid) {
		add("ack=%d", h.Ack())
	}
	add("%d:%d -> %d:%d", h.SourceNode(), h.SourcePort(), h.TargetNode(), h.TargetPort())
	if h.TargetPort() == wire.PortNone {
		add("[self-test]")
	}
	if t == wire.TypeNack {
		add("reason=%v", h.NackReason())
	}
	if reliable || t == wire.TypeAck || t == wire.TypeNack || t == wire.TypeOpen || t == wire.TypeOpenAck {
		add("session=0x%x", h.Session())
	}
	switch {
	case t == wire.TypeOpen && h.Ack() != 0:
		add("replaces=0x%x", h.Ack())
	case t == wire.TypeOpenAck:
		add("window=%d", h.MsgLen())
	}
	if isData || t == wire.TypeDatagram {
		add("size=%d", h.Size())
	}
	if hasRA {
		add("raddr=0x%016x", h.RemoteAddr())
	}
	switch {
	case t == wire.TypeGet:
		add("read=%d", h.MsgLen())
	case reliable || t == wire.TypeDatagram:
		add("len=%d", h.PayloadLen())
		if int(h.MsgLen()) != h.PayloadLen() {
			add("msglen=%d", h.MsgLen())
		}
	}
	if t.IsMapper() {
		add("round=%d", h.Seq())
	}
	if t != wire.TypeData && isData {
		if k, n, ok := s.Segment(h); ok {
			add("seg %d/%d", k, n)
		} else if t == wire.TypeDataLast {
			add("seg last")
		}
	}
	switch {
	case t.IsMapper():
		parts = append(parts, bodySummary(t, h.Payload()))
	case t == wire.TypeAck:
		if seqs := SACKed(h.Ack(), h.Payload()); len(seqs) > 0 {
			var sb strings.Builder
			for i, q := range seqs {
				if i > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprint(&sb, q)
			}
			add("sack=%s", sb.String())
		}
	case t == wire.TypeGet && h.PayloadLen() == 8:
		add("laddr=0x%016x", binary.BigEndian.Uint64(h.Payload()))
	}
	if f := h.Flags(); f != 0 {
		add("[%v]", f)
	}
	return strings.Join(parts, " ")
}

// Segment numbers a DATA_FIRST, DATA_MIDDLE or DATA_LAST frame: segment k
// of n, with ok false when that cannot be told (a last segment whose
// message's other segments this Summarizer has not seen, an offset that is
// not a multiple of the segment length, a segment outside its message). The
// segment length of a message is that of its first and middle segments. It
// mirrors seg_numbers in the dissector; call it in capture order.
func (s *Summarizer) Segment(h wire.Header) (k, n int, ok bool) {
	off, pl, ml := int(h.Offset()), h.PayloadLen(), int(h.MsgLen())
	if off+pl > ml {
		return 0, 0, false
	}
	key := fmt.Sprintf("%d:%d>%d:%d/%d/%d", h.SourceNode(), h.SourcePort(), h.TargetNode(), h.TargetPort(),
		h.Session(), ml)
	var seg int
	switch h.Type() {
	case wire.TypeDataFirst, wire.TypeDataMiddle:
		if pl == 0 {
			return 0, 0, false
		}
		seg = pl
		if s.segLen == nil {
			s.segLen = make(map[string]int)
		}
		s.segLen[key] = seg
	case wire.TypeDataLast:
		var known bool
		if seg, known = s.segLen[key]; !known {
			if off == 0 && pl == ml {
				return 1, 1, true
			}
			return 0, 0, false
		}
	default:
		return 0, 0, false
	}
	if off%seg != 0 {
		return 0, 0, false
	}
	k = off/seg + 1
	n = (ml + seg - 1) / seg
	if h.Type() == wire.TypeDataLast {
		n = k
	}
	return k, n, true
}

func mac(b [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5])
}

// bodySummary summarises a mapper body as the dissector does.
func bodySummary(t wire.Type, body []byte) string {
	switch t {
	case wire.TypeScout, wire.TypeScoutReply:
		hi, err := wire.ParseHostInfo(body)
		if err != nil {
			return "[bad body]"
		}
		return fmt.Sprintf("host=%s \"%s\" node=%d level=%d map=%d", mac(hi.UniqueID),
			hi.Name, hi.NodeID, hi.Level, hi.MapVersion)
	case wire.TypeConfig:
		c, err := wire.ParseConfig(body)
		if err != nil {
			return "[bad body]"
		}
		r := "-"
		if c.Count > 0 {
			r = fmt.Sprintf("%d..%d", c.First, int(c.First)+int(c.Count)-1)
		}
		return fmt.Sprintf("map=%d mapper=%s entries=%s/%d", c.MapVersion, mac(c.MapperID), r, c.TotalHosts)
	case wire.TypeConfigAck:
		a, err := wire.ParseConfigAck(body)
		if err != nil {
			return "[bad body]"
		}
		return fmt.Sprintf("map=%d host=%s node=%d", a.MapVersion, mac(a.UniqueID), a.NodeID)
	}
	return ""
}

// SACKed returns the sequence numbers an ACK's selective-ack bitmap reports
// as received out of order: bit i (byte i/8, least significant bit first)
// stands for ack + 1 + i (docs/PROTOCOL.md, section 7.2).
func SACKed(ack uint32, bitmap []byte) []uint32 {
	var seqs []uint32
	for i, b := range bitmap {
		for j := range 8 {
			if b&(1<<j) != 0 {
				seqs = append(seqs, ack+1+uint32(i*8+j))
			}
		}
	}
	return seqs
}
