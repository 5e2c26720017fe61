package frameset

import (
	"errors"
	"slices"
	"testing"

	"github.com/ethergm/ethergm/wire"
)

var params = Params{
	Dst: [6]byte{2, 0, 0, 0, 0, 2}, Src: [6]byte{2, 0, 0, 0, 0, 1},
	SrcNode: 1, DstNode: 2, SrcPort: 2, DstPort: 3, Session: 0x5e55,
}

// TestBuild checks that the sample holds every type of wire.Types(), that
// every frame is valid for package wire (header, CRC, mapper body), fits a
// 1500-byte MTU and follows docs/PROTOCOL.md's per-type field rules.
func TestBuild(t *testing.T) {
	set, err := Build(&params)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[wire.Type]int)
	for _, f := range set {
		h, err := wire.ParseFrameCRC(f.Bytes, wire.EtherType)
		if err != nil {
			t.Errorf("%s: %v", f.Name, err)
			continue
		}
		if h.Type() != f.Type {
			t.Errorf("%s: type %v, Frame says %v", f.Name, h.Type(), f.Type)
		}
		if n := len(f.Bytes) - wire.EthHeaderLen; n > 1500 {
			t.Errorf("%s: %d bytes after the Ethernet header, more than a 1500-byte MTU", f.Name, n)
		}
		seen[f.Type]++
		switch t0 := h.Type(); {
		case t0.IsMapper():
			if h.TargetPort() != MapperPort || h.SourcePort() != MapperPort || h.Session() != 0 ||
				int(h.MsgLen()) != h.PayloadLen() {
				t.Errorf("%s: mapper frame with ports %d/%d, session %#x, msglen %d, paylen %d", f.Name,
					h.TargetPort(), h.SourcePort(), h.Session(), h.MsgLen(), h.PayloadLen())
			}
			if err := parseBody(h); err != nil {
				t.Errorf("%s: body: %v", f.Name, err)
			}
		case t0 == wire.TypeAck:
			if h.Seq() != 0 || h.Size() != 0 || h.MsgLen() != 0 {
				t.Errorf("%s: ACK with seq %d, size %d, msglen %d", f.Name, h.Seq(), h.Size(), h.MsgLen())
			}
		case t0 == wire.TypeNack:
			if !wire.NackReason(h.Status()).Valid() || h.Size() != 0 || h.MsgLen() != 0 || h.PayloadLen() != 0 {
				t.Errorf("%s: NACK with status %d, size %d, msglen %d, paylen %d", f.Name,
					h.Status(), h.Size(), h.MsgLen(), h.PayloadLen())
			}
		case t0 == wire.TypeOpen || t0 == wire.TypeOpenAck:
			// PROTOCOL.md 7.9: the proposed session; an OPEN carries no
			// msglen, an OPEN_ACK its receive window there.
			if h.Session() != params.Session || h.Size() != 0 || h.Offset() != 0 || h.PayloadLen() != 0 ||
				t0 == wire.TypeOpen && h.MsgLen() != 0 || t0 == wire.TypeOpenAck && h.MsgLen() != OpenWindow {
				t.Errorf("%s: session %#x, size %d, msglen %d, offset %d, paylen %d", f.Name,
					h.Session(), h.Size(), h.MsgLen(), h.Offset(), h.PayloadLen())
			}
		case t0 == wire.TypeGet:
			if h.PayloadLen() != 8 {
				t.Errorf("%s: GET payload of %d bytes, want the 8-byte local address", f.Name, h.PayloadLen())
			}
		case t0.IsData():
			if int(h.Offset())+h.PayloadLen() > int(h.MsgLen()) {
				t.Errorf("%s: segment outside its message", f.Name)
			}
		}
	}
	for _, ty := range wire.Types() {
		if seen[ty] == 0 {
			t.Errorf("no %v frame in the sample", ty)
		}
	}
	var reasons int
	for r := wire.NackReason(1); r.Valid(); r++ {
		reasons++
	}
	if seen[wire.TypeNack] != reasons {
		t.Errorf("%d NACK frames, want one per reason (%d)", seen[wire.TypeNack], reasons)
	}
}

func parseBody(h wire.Header) error {
	var err error
	switch h.Type() {
	case wire.TypeScout, wire.TypeScoutReply:
		_, err = wire.ParseHostInfo(h.Payload())
	case wire.TypeConfig:
		var c wire.Config
		c, err = wire.ParseConfig(h.Payload())
		if err == nil && c.Count < 2 {
			err = errSample
		}
	case wire.TypeConfigAck:
		_, err = wire.ParseConfigAck(h.Payload())
	}
	return err
}

var errSample = errors.New("CONFIG with fewer than 2 entries")

// TestSummary pins the summaries of the sample, the text the dissector's
// Info column shows (tests/wireshark checks that they agree).
func TestSummary(t *testing.T) {
	set, err := Build(&params)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"DATA":                   "DATA seq=101 1:2 -> 2:3 session=0x5e55 size=6 len=44 [ACKREQ]",
		"DATA_FIRST seg 1/3":     "DATA_FIRST seq=200 ack=41 1:2 -> 2:3 session=0x5e55 size=12 len=1000 msglen=2500 seg 1/3 [ACKVALID]",
		"DATA_MIDDLE seg 2/3":    "DATA_MIDDLE seq=201 ack=41 1:2 -> 2:3 session=0x5e55 size=12 len=1000 msglen=2500 seg 2/3 [ACKVALID]",
		"DATA_LAST seg 3/3":      "DATA_LAST seq=202 ack=41 1:2 -> 2:3 session=0x5e55 size=12 len=500 msglen=2500 seg 3/3 [ACKREQ|ACKVALID]",
		"ACK with selective ack": "ACK ack=202 1:2 -> 2:3 session=0x5e55 sack=204,206",
		"ACK go back":            "ACK ack=202 1:2 -> 2:3 session=0x5e55 [RETRANSMIT]",
		"NACK REJECTED":          "NACK seq=302 ack=301 1:2 -> 2:3 reason=REJECTED session=0x5e55 [ACKVALID]",
		"PUT":                    "PUT seq=102 1:2 -> 2:3 session=0x5e55 raddr=0x00007f00deadbe00 len=64 [HIGH|RETRANSMIT]",
		"GET":                    "GET seq=103 1:2 -> 2:3 session=0x5e55 raddr=0x00007f00deadbf00 read=256 laddr=0x0000000200000040 [SEPREPLY]",
		"GOT":                    "GOT seq=7 ack=3 1:2 -> 2:3 session=0x5e55 raddr=0x0000000200000040 len=256 [ACKVALID|REPLY]",
		"DATAGRAM":               "DATAGRAM 1:2 -> 2:3 size=5 len=22 [HIGH]",
		"OPEN":                   "OPEN 1:2 -> 2:3 session=0x5e55 replaces=0x5e54 [HIGH]",
		"OPEN_ACK":               "OPEN_ACK seq=200 ack=41 1:2 -> 2:3 session=0x5e55 window=448 [ACKVALID]",
		"SCOUT":                  `SCOUT 1:1 -> 0:1 round=5 host=02:00:00:00:00:01 "mapper-host" node=1 level=1 map=7`,
		"SCOUT_REPLY":            `SCOUT_REPLY 1:1 -> 2:1 round=5 host=02:00:00:00:00:01 "replying-host" node=1 level=0 map=6`,
		"CONFIG":                 "CONFIG 1:1 -> 2:1 round=5 map=7 mapper=02:00:00:00:00:01 entries=1..4/6",
		"CONFIG_ACK":             "CONFIG_ACK 1:1 -> 2:1 round=5 map=7 host=02:00:00:00:00:01 node=1",
	}
	var s Summarizer
	for _, f := range set {
		got := s.Summary(f.Bytes, wire.EtherType)
		if w, ok := want[f.Name]; ok && got != w {
			t.Errorf("%s:\n got %s\nwant %s", f.Name, got, w)
		}
	}
	bad := slices.Clone(set[0].Bytes)
	bad[len(bad)-1] ^= 1
	if got, want := s.Summary(bad, wire.EtherType), "malformed: "+wire.ErrCRC.Error(); got != want {
		t.Errorf("bad CRC: %q, want %q", got, want)
	}
}

// TestSegment checks segment numbering, including the cases that cannot be
// numbered.
func TestSegment(t *testing.T) {
	frame := func(ty wire.Type, off, n, msglen int, session uint32) wire.Header {
		f := wire.AppendFrame(nil, params.Dst, params.Src, wire.EtherType, &wire.HeaderFields{Type: ty,
			Session: session, MsgLen: uint32(msglen), Offset: uint32(off)}, make([]byte, n))
		return wire.Header(f[wire.EthHeaderLen:])
	}
	tests := []struct {
		name   string
		frames []wire.Header // fed in order; the last one is checked
		k, n   int
		ok     bool
	}{
		{name: "first", frames: []wire.Header{frame(wire.TypeDataFirst, 0, 100, 250, 1)}, k: 1, n: 3, ok: true},
		{name: "middle", frames: []wire.Header{frame(wire.TypeDataMiddle, 100, 100, 250, 1)}, k: 2, n: 3, ok: true},
		{name: "last after first", frames: []wire.Header{frame(wire.TypeDataFirst, 0, 100, 250, 1),
			frame(wire.TypeDataLast, 200, 50, 250, 1)}, k: 3, n: 3, ok: true},
		{name: "last alone", frames: []wire.Header{frame(wire.TypeDataLast, 200, 50, 250, 1)}},
		{name: "last of another session", frames: []wire.Header{frame(wire.TypeDataFirst, 0, 100, 250, 1),
			frame(wire.TypeDataLast, 200, 50, 250, 2)}},
		{name: "offset not a multiple", frames: []wire.Header{frame(wire.TypeDataMiddle, 150, 100, 350, 1)}},
		{name: "outside message", frames: []wire.Header{frame(wire.TypeDataMiddle, 200, 100, 250, 1)}},
		{name: "empty middle", frames: []wire.Header{frame(wire.TypeDataMiddle, 0, 0, 250, 1)}},
		{name: "whole DATA", frames: []wire.Header{frame(wire.TypeData, 0, 10, 10, 1)}},
	}
	for _, tt := range tests {
		var s Summarizer
		var k, n int
		var ok bool
		for _, h := range tt.frames {
			k, n, ok = s.Segment(h)
		}
		if k != tt.k || n != tt.n || ok != tt.ok {
			t.Errorf("%s: Segment = %d, %d, %v; want %d, %d, %v", tt.name, k, n, ok, tt.k, tt.n, tt.ok)
		}
	}
}

func TestSACKed(t *testing.T) {
	tests := []struct {
		ack    uint32
		bitmap []byte
		want   []uint32
	}{
		{7, nil, nil},
		{7, []byte{0}, nil},
		{7, []byte{0x01}, []uint32{8}},
		{7, []byte{0x0a}, []uint32{9, 11}},
		{7, []byte{0x00, 0x81}, []uint32{16, 23}},
		{0xFFFFFFFF, []byte{0x03}, []uint32{0, 1}},
	}
	for _, tt := range tests {
		if got := SACKed(tt.ack, tt.bitmap); !slices.Equal(got, tt.want) {
			t.Errorf("SACKed(%d, %x) = %v, want %v", tt.ack, tt.bitmap, got, tt.want)
		}
	}
}
