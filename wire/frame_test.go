package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

var (
	macA = [6]byte{2, 0, 0, 0, 0, 1}
	macB = [6]byte{2, 0, 0, 0, 0, 2}
)

// golden holds frames whose exact bytes are pinned. The same vectors are
// quoted in docs/PROTOCOL.md; change both together, and only with a version
// change.
var golden = []struct {
	name     string
	dst, src [6]byte
	f        HeaderFields
	payload  []byte
	crc      uint32
	hex      string
}{
	{
		name: "DATA",
		dst:  macB, src: macA,
		f: HeaderFields{Type: TypeData, TargetPort: 4, SourcePort: 2, Flags: FlagAckRequest, Size: 5,
			TargetNode: 2, SourceNode: 1, Session: 0x01020304, Seq: 7, MsgLen: 20},
		payload: []byte("hello, ethergm world"),
		crc:     0x89433a1c,
		hex: "020000000002" + "020000000001" + "88b5" +
			"01" + "01" + "04" + "02" + "0002" + "05" + "00" +
			"00000002" + "00000001" + "01020304" + "00000007" + "00000000" +
			"00000014" + "00000000" + "0014" + "0000" + "89433a1c" +
			"68656c6c6f2c206574686572676d20776f726c64",
	},
	{
		name: "ACK",
		dst:  macA, src: macB,
		f: HeaderFields{Type: TypeAck, TargetPort: 2, SourcePort: 4,
			TargetNode: 1, SourceNode: 2, Session: 0x01020304, Ack: 7},
		crc: 0xeb54a819,
		hex: "020000000001" + "020000000002" + "88b5" +
			"01" + "05" + "02" + "04" + "0000" + "00" + "00" +
			"00000001" + "00000002" + "01020304" + "00000000" + "00000007" +
			"00000000" + "00000000" + "0000" + "0000" + "eb54a819",
	},
	{
		name: "NACK",
		dst:  macA, src: macB,
		f: HeaderFields{Type: TypeNack, TargetPort: 2, SourcePort: 4, Flags: FlagAckValid,
			Status: uint8(NackNoBuffer), TargetNode: 1, SourceNode: 2, Session: 0x01020304, Seq: 8, Ack: 7},
		crc: 0xa38bd722,
		hex: "020000000001" + "020000000002" + "88b5" +
			"01" + "06" + "02" + "04" + "0004" + "00" + "01" +
			"00000001" + "00000002" + "01020304" + "00000008" + "00000007" +
			"00000000" + "00000000" + "0000" + "0000" + "a38bd722",
	},
	{
		name: "PUT",
		dst:  macB, src: macA,
		f: HeaderFields{Type: TypePut, TargetPort: 4, SourcePort: 2, Flags: FlagHigh | FlagRetransmit,
			TargetNode: 2, SourceNode: 1, Session: 0x01020304, Seq: 9, MsgLen: 8, RemoteAddr: 0x0000010000001000},
		payload: []byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3},
		crc:     0x0a1ba8d1,
		hex: "020000000002" + "020000000001" + "88b5" +
			"01" + "07" + "04" + "02" + "0009" + "00" + "00" +
			"00000002" + "00000001" + "01020304" + "00000009" + "00000000" +
			"00000008" + "00000000" + "0008" + "0000" + "0a1ba8d1" +
			"0000010000001000" + "deadbeef00010203",
	},
	{
		name: "OPEN",
		dst:  macB, src: macA,
		f: HeaderFields{Type: TypeOpen, TargetPort: 4, SourcePort: 2,
			TargetNode: 2, SourceNode: 1, Session: 0x0a0b0c0d, Ack: 0x01020304},
		crc: 0x91790c54,
		hex: "020000000002" + "020000000001" + "88b5" +
			"01" + "0b" + "04" + "02" + "0000" + "00" + "00" +
			"00000002" + "00000001" + "0a0b0c0d" + "00000000" + "01020304" +
			"00000000" + "00000000" + "0000" + "0000" + "91790c54",
	},
	{
		name: "OPEN_ACK",
		dst:  macA, src: macB,
		f: HeaderFields{Type: TypeOpenAck, TargetPort: 2, SourcePort: 4, Flags: FlagAckValid,
			TargetNode: 1, SourceNode: 2, Session: 0x0a0b0c0d, Seq: 0x6b8b4567, Ack: 7, MsgLen: 448},
		crc: 0x43498f87,
		hex: "020000000001" + "020000000002" + "88b5" +
			"01" + "0c" + "02" + "04" + "0004" + "00" + "00" +
			"00000001" + "00000002" + "0a0b0c0d" + "6b8b4567" + "00000007" +
			"000001c0" + "00000000" + "0000" + "0000" + "43498f87",
	},
}

// refCRC32C is a bitwise CRC32C (reflected polynomial 0x82F63B78) written
// independently of hash/crc32, to check the table-driven implementation.
func refCRC32C(parts ...[]byte) uint32 {
	crc := ^uint32(0)
	for _, p := range parts {
		for _, b := range p {
			crc ^= uint32(b)
			for range 8 {
				if crc&1 != 0 {
					crc = crc>>1 ^ 0x82F63B78
				} else {
					crc >>= 1
				}
			}
		}
	}
	return ^crc
}

func TestRefCRC32C(t *testing.T) {
	// The standard CRC-32C check value (RFC 3720 / iSCSI).
	if got := refCRC32C([]byte("123456789")); got != 0xe3069283 {
		t.Fatalf("refCRC32C(123456789) = %08x, want e3069283", got)
	}
}

func TestGolden(t *testing.T) {
	for _, g := range golden {
		t.Run(g.name, func(t *testing.T) {
			want, err := hex.DecodeString(g.hex)
			if err != nil {
				t.Fatal(err)
			}
			got := AppendFrame(nil, g.dst, g.src, EtherType, &g.f, g.payload)
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendFrame:\n got %x\nwant %x", got, want)
			}
			h, err := ParseFrame(want, EtherType)
			if err != nil {
				t.Fatalf("ParseFrame: %v", err)
			}
			if h.CRC() != g.crc || !h.CheckCRC() {
				t.Fatalf("CRC = %08x (check %v), want %08x", h.CRC(), h.CheckCRC(), g.crc)
			}
			ref := refCRC32C(want[EthHeaderLen:EthHeaderLen+OffCRC], want[EthHeaderLen+HeaderLen:])
			if ref != g.crc {
				t.Fatalf("reference CRC32C = %08x, want %08x", ref, g.crc)
			}
			if f := h.Fields(); f != g.f {
				t.Fatalf("Fields = %+v, want %+v", f, g.f)
			}
			if !bytes.Equal(h.Payload(), g.payload) {
				t.Fatalf("Payload = %x, want %x", h.Payload(), g.payload)
			}
			if FrameLen(want) != len(want) {
				t.Fatalf("FrameLen = %d, want %d", FrameLen(want), len(want))
			}
		})
	}
}

func TestHeaderGetters(t *testing.T) {
	f := HeaderFields{
		Type: TypeGot, TargetPort: 0x11, SourcePort: 0x22, Flags: 0xa5c3, Size: 31, Status: 0x7e,
		TargetNode: 0x01020304, SourceNode: 0x05060708, Session: 0x090a0b0c, Seq: 0x0d0e0f10,
		Ack: 0x11121314, MsgLen: 0x15161718, Offset: 0x191a1b1c, RemoteAddr: 0x1d1e1f2021222324,
	}
	payload := []byte{1, 2, 3}
	fr := AppendFrame(nil, macB, macA, EtherType, &f, payload)
	h, err := ParseFrame(fr, EtherType)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want uint64
	}{
		{"Version", uint64(h.Version()), Version},
		{"Type", uint64(h.Type()), uint64(TypeGot)},
		{"TargetPort", uint64(h.TargetPort()), 0x11},
		{"SourcePort", uint64(h.SourcePort()), 0x22},
		{"Flags", uint64(h.Flags()), 0xa5c3},
		{"Size", uint64(h.Size()), 31},
		{"Status", uint64(h.Status()), 0x7e},
		{"NackReason", uint64(h.NackReason()), 0x7e},
		{"TargetNode", uint64(h.TargetNode()), 0x01020304},
		{"SourceNode", uint64(h.SourceNode()), 0x05060708},
		{"Session", uint64(h.Session()), 0x090a0b0c},
		{"Seq", uint64(h.Seq()), 0x0d0e0f10},
		{"Ack", uint64(h.Ack()), 0x11121314},
		{"MsgLen", uint64(h.MsgLen()), 0x15161718},
		{"Offset", uint64(h.Offset()), 0x191a1b1c},
		{"PayloadLen", uint64(h.PayloadLen()), 3},
		{"Reserved", uint64(h.Reserved()), 0},
		{"RemoteAddr", h.RemoteAddr(), 0x1d1e1f2021222324},
		{"Len", uint64(h.Len()), MaxHeaderLen},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %#x, want %#x", tt.name, tt.got, tt.want)
		}
	}
	// Each field lands at its documented offset.
	offsets := []struct {
		name string
		off  int
		want []byte
	}{
		{"version", OffVersion, []byte{1}},
		{"type", OffType, []byte{9}},
		{"tport", OffTargetPort, []byte{0x11}},
		{"sport", OffSourcePort, []byte{0x22}},
		{"flags", OffFlags, []byte{0xa5, 0xc3}},
		{"size", OffSize, []byte{31}},
		{"status", OffStatus, []byte{0x7e}},
		{"tnode", OffTargetNode, []byte{1, 2, 3, 4}},
		{"snode", OffSourceNode, []byte{5, 6, 7, 8}},
		{"session", OffSession, []byte{9, 10, 11, 12}},
		{"seq", OffSeq, []byte{13, 14, 15, 16}},
		{"ack", OffAck, []byte{0x11, 0x12, 0x13, 0x14}},
		{"msglen", OffMsgLen, []byte{0x15, 0x16, 0x17, 0x18}},
		{"offset", OffOffset, []byte{0x19, 0x1a, 0x1b, 0x1c}},
		{"paylen", OffPayloadLen, []byte{0, 3}},
		{"reserved", OffReserved, []byte{0, 0}},
		{"raddr", OffRemoteAddr, []byte{0x1d, 0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x24}},
		{"payload", MaxHeaderLen, []byte{1, 2, 3}},
	}
	for _, o := range offsets {
		if got := h[o.off : o.off+len(o.want)]; !bytes.Equal(got, o.want) {
			t.Errorf("%s at offset %d = %x, want %x", o.name, o.off, got, o.want)
		}
	}
	if f != h.Fields() {
		t.Errorf("Fields = %+v, want %+v", h.Fields(), f)
	}
	e := Ethernet(fr)
	if e.Dst() != macB || e.Src() != macA || e.EtherType() != EtherType {
		t.Errorf("Ethernet = %x %x %04x", e.Dst(), e.Src(), e.EtherType())
	}
	e.SetDst(macA)
	e.SetSrc(macB)
	if e.Dst() != macA || e.Src() != macB {
		t.Errorf("Ethernet setters: %x %x", e.Dst(), e.Src())
	}
}

func TestHeaderSetters(t *testing.T) {
	fr := AppendFrame(nil, macB, macA, EtherType, &HeaderFields{Type: TypeGet}, []byte("xy"))
	h, err := ParseFrame(fr, EtherType)
	if err != nil {
		t.Fatal(err)
	}
	want := HeaderFields{
		Type: TypeGet, TargetPort: 3, SourcePort: 5, Flags: FlagAckValid | FlagHigh, Size: 12,
		Status: 2, TargetNode: 10, SourceNode: 11, Session: 12, Seq: 13, Ack: 14, MsgLen: 15,
		Offset: 16, RemoteAddr: 17,
	}
	h.SetTargetPort(want.TargetPort)
	h.SetSourcePort(want.SourcePort)
	h.SetFlags(want.Flags)
	h.SetSize(want.Size)
	h.SetStatus(want.Status)
	h.SetTargetNode(want.TargetNode)
	h.SetSourceNode(want.SourceNode)
	h.SetSession(want.Session)
	h.SetSeq(want.Seq)
	h.SetAck(want.Ack)
	h.SetMsgLen(want.MsgLen)
	h.SetOffset(want.Offset)
	h.SetRemoteAddr(want.RemoteAddr)
	if h.CheckCRC() {
		t.Fatal("CRC still valid after changing fields")
	}
	h.UpdateCRC()
	if !h.CheckCRC() {
		t.Fatal("CRC invalid after UpdateCRC")
	}
	if got := h.Fields(); got != want {
		t.Fatalf("Fields = %+v, want %+v", got, want)
	}
	rebuilt := AppendFrame(nil, macB, macA, EtherType, &want, []byte("xy"))
	if !bytes.Equal(rebuilt, fr) {
		t.Fatalf("setters differ from AppendFrame:\n got %x\nwant %x", fr, rebuilt)
	}

	// SetPayloadLen: a frame resized in place matches the one built for
	// the new payload.
	long := append(bytes.Clone(fr), 'z')
	lh := Header(long[EthHeaderLen:])
	lh.SetPayloadLen(3)
	lh.UpdateCRC()
	if built := AppendFrame(nil, macB, macA, EtherType, &want, []byte("xyz")); !bytes.Equal(long, built) {
		t.Fatalf("SetPayloadLen differs from AppendFrame:\n got %x\nwant %x", long, built)
	}

	// SetRemoteAddr is a no-op on types without the extension.
	d := AppendFrame(nil, macB, macA, EtherType, &HeaderFields{Type: TypeData}, []byte("12345678"))
	dh := Header(d[EthHeaderLen:])
	dh.SetRemoteAddr(^uint64(0))
	if dh.RemoteAddr() != 0 || string(dh.Payload()) != "12345678" {
		t.Fatalf("SetRemoteAddr on DATA changed the frame: %x", d)
	}
}

func TestRemoteAddrOnlyForPutGetGot(t *testing.T) {
	for _, typ := range Types() {
		f := HeaderFields{Type: typ, RemoteAddr: 0x0102030405060708}
		fr := AppendFrame(nil, macB, macA, EtherType, &f, []byte{0xaa})
		h, err := ParseFrame(fr, EtherType)
		if err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		wantLen, wantAddr := HeaderLen, uint64(0)
		if typ.HasRemoteAddr() {
			wantLen, wantAddr = MaxHeaderLen, f.RemoteAddr
		}
		if h.Len() != wantLen || h.RemoteAddr() != wantAddr || len(fr) != EthHeaderLen+wantLen+1 {
			t.Errorf("%v: Len %d RemoteAddr %#x frame %d", typ, h.Len(), h.RemoteAddr(), len(fr))
		}
		if !bytes.Equal(h.Payload(), []byte{0xaa}) || !h.CheckCRC() {
			t.Errorf("%v: payload %x crc ok %v", typ, h.Payload(), h.CheckCRC())
		}
	}
}

func TestParseFrameErrors(t *testing.T) {
	good := AppendFrame(nil, macB, macA, EtherType, &golden[0].f, golden[0].payload)
	put := AppendFrame(nil, macB, macA, EtherType, &golden[3].f, golden[3].payload)
	mod := func(b []byte, fn func([]byte)) []byte {
		c := append([]byte(nil), b...)
		fn(c)
		return c
	}
	tests := []struct {
		name  string
		frame []byte
		et    uint16
		want  error
	}{
		{"empty", nil, EtherType, ErrShort},
		{"13 bytes", good[:13], EtherType, ErrShort},
		{"ethernet only", good[:14], EtherType, ErrShort},
		{"57 bytes", good[:57], EtherType, ErrShort},
		{"other EtherType", good, 0x0800, ErrEtherType},
		{"other EtherType short", good[:14], 0x0800, ErrEtherType},
		{"version 0", mod(good, func(b []byte) { b[14] = 0 }), EtherType, ErrVersion},
		{"version 2", mod(good, func(b []byte) { b[14] = 2 }), EtherType, ErrVersion},
		{"type 0", mod(good, func(b []byte) { b[15] = 0 }), EtherType, ErrUnknownType},
		{"type 13", mod(good, func(b []byte) { b[15] = 13 }), EtherType, ErrUnknownType},
		{"type 0x24", mod(good, func(b []byte) { b[15] = 0x24 }), EtherType, ErrUnknownType},
		{"payload cut", good[:len(good)-1], EtherType, ErrLength},
		{"payload length too big", mod(good, func(b []byte) { b[14+OffPayloadLen] = 0xff }), EtherType, ErrLength},
		{"DATA turned PUT", mod(good, func(b []byte) { b[15] = byte(TypePut) }), EtherType, ErrLength},
		{"PUT without extension", put[:MinFrameLen], EtherType, ErrLength},
		{"PUT cut", put[:len(put)-1], EtherType, ErrLength},
		{"good", good, EtherType, nil},
		{"good with padding", append(append([]byte(nil), good...), 0, 0, 0), EtherType, nil},
		{"good other EtherType", mod(good, func(b []byte) { b[12], b[13] = 0x88, 0xb6 }), 0x88b6, nil},
		{"bad CRC still parses", mod(good, func(b []byte) { b[len(b)-1] ^= 1 }), EtherType, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseFrame(tt.frame, tt.et)
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("ParseFrame error = %v, want %v", err, tt.want)
			}
			if err == nil && &h[0] != &tt.frame[EthHeaderLen] {
				t.Fatal("Header does not alias frame[14:]")
			}
			if err != nil && h != nil {
				t.Fatal("non-nil Header with error")
			}
		})
	}
}

func TestParseFrameCRC(t *testing.T) {
	good := AppendFrame(nil, macB, macA, EtherType, &golden[3].f, golden[3].payload)
	if _, err := ParseFrameCRC(good, EtherType); err != nil {
		t.Fatal(err)
	}
	// Every byte the CRC covers is checked; the Ethernet header and padding are not.
	for i := range len(good) {
		c := append([]byte(nil), good...)
		c[i] ^= 0x40
		_, err := ParseFrameCRC(c, EtherType)
		switch {
		case i < 12:
			if err != nil {
				t.Errorf("byte %d (MAC): %v", i, err)
			}
		case i < EthHeaderLen+OffType+1:
			if err == nil {
				t.Errorf("byte %d: flipped bit accepted", i)
			}
		case i == EthHeaderLen+OffType, i >= EthHeaderLen+OffPayloadLen && i < EthHeaderLen+OffPayloadLen+2:
			if err == nil {
				t.Errorf("byte %d: flipped bit accepted", i)
			}
		default:
			if !errors.Is(err, ErrCRC) {
				t.Errorf("byte %d: error %v, want ErrCRC", i, err)
			}
		}
	}
	padded := append(append([]byte(nil), good...), 1, 2, 3, 4)
	if _, err := ParseFrameCRC(padded, EtherType); err != nil {
		t.Fatalf("padding changed the CRC: %v", err)
	}
	if _, err := ParseFrameCRC(good[:20], EtherType); !errors.Is(err, ErrShort) {
		t.Fatalf("short: %v", err)
	}
}

func TestShortHeaderSafe(t *testing.T) {
	for n := range MaxHeaderLen + 2 {
		h := Header(make([]byte, n))
		if n > OffType {
			h[OffType] = byte(TypePut)
		}
		if n >= HeaderLen {
			h[OffPayloadLen+1] = 1
		}
		_ = h.Len()
		if h.Payload() != nil && n < MaxHeaderLen+1 {
			t.Errorf("len %d: Payload not nil", n)
		}
		if h.CheckCRC() && n < MaxHeaderLen+1 {
			t.Errorf("len %d: CheckCRC true", n)
		}
		if h.ComputeCRC() != 0 && n < MaxHeaderLen+1 {
			t.Errorf("len %d: ComputeCRC not 0", n)
		}
	}
}

func TestFrameLen(t *testing.T) {
	put := AppendFrame(nil, macB, macA, EtherType, &golden[3].f, golden[3].payload)
	tests := []struct {
		name  string
		frame []byte
		want  int
	}{
		{"nil", nil, -1},
		{"57", put[:57], -1},
		{"58 of PUT", put[:58], len(put)},
		{"PUT", put, len(put)},
		{"PUT padded", append(append([]byte(nil), put...), 0, 0), len(put)},
		{"ACK", AppendFrame(nil, macA, macB, EtherType, &golden[1].f, nil), MinFrameLen},
		{"max payload", func() []byte {
			b := make([]byte, MinFrameLen)
			b[EthHeaderLen+OffType] = byte(TypeData)
			b[EthHeaderLen+OffPayloadLen], b[EthHeaderLen+OffPayloadLen+1] = 0xff, 0xff
			return b
		}(), MinFrameLen + 0xffff},
	}
	for _, tt := range tests {
		if got := FrameLen(tt.frame); got != tt.want {
			t.Errorf("%s: FrameLen = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestAppendFrameAppends(t *testing.T) {
	prefix := []byte("prefix")
	b := AppendFrame(prefix, macB, macA, EtherType, &golden[0].f, golden[0].payload)
	if string(b[:6]) != "prefix" {
		t.Fatalf("prefix lost: %q", b[:6])
	}
	want, _ := hex.DecodeString(golden[0].hex)
	if !bytes.Equal(b[6:], want) {
		t.Fatalf("appended frame differs")
	}
	// Reusing a dirty buffer gives the same bytes.
	dirty := bytes.Repeat([]byte{0xee}, 200)[:0]
	d := AppendFrame(dirty, macA, macB, EtherType, &golden[1].f, nil)
	want1, _ := hex.DecodeString(golden[1].hex)
	if !bytes.Equal(d, want1) {
		t.Fatalf("dirty buffer:\n got %x\nwant %x", d, want1)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an oversized payload")
		}
	}()
	AppendFrame(nil, macB, macA, EtherType, &HeaderFields{Type: TypeData}, make([]byte, MaxPayloadLen+1))
}

func TestTypes(t *testing.T) {
	tests := []struct {
		t                                  Type
		name                               string
		raddr, data, reliable, mapper, val bool
	}{
		{0, "Type(0x00)", false, false, false, false, false},
		{TypeData, "DATA", false, true, true, false, true},
		{TypeDataFirst, "DATA_FIRST", false, true, true, false, true},
		{TypeDataMiddle, "DATA_MIDDLE", false, true, true, false, true},
		{TypeDataLast, "DATA_LAST", false, true, true, false, true},
		{TypeAck, "ACK", false, false, false, false, true},
		{TypeNack, "NACK", false, false, false, false, true},
		{TypePut, "PUT", true, false, true, false, true},
		{TypeGet, "GET", true, false, true, false, true},
		{TypeGot, "GOT", true, false, true, false, true},
		{TypeDatagram, "DATAGRAM", false, false, false, false, true},
		{TypeOpen, "OPEN", false, false, false, false, true},
		{TypeOpenAck, "OPEN_ACK", false, false, false, false, true},
		{13, "Type(0x0d)", false, false, false, false, false},
		{0x1f, "Type(0x1f)", false, false, false, false, false},
		{TypeScout, "SCOUT", false, false, false, true, true},
		{TypeScoutReply, "SCOUT_REPLY", false, false, false, true, true},
		{TypeConfig, "CONFIG", false, false, false, true, true},
		{TypeConfigAck, "CONFIG_ACK", false, false, false, true, true},
		{0x24, "Type(0x24)", false, false, false, false, false},
		{0xff, "Type(0xff)", false, false, false, false, false},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.name {
			t.Errorf("Type(%d).String() = %q, want %q", tt.t, got, tt.name)
		}
		if tt.t.Valid() != tt.val || tt.t.HasRemoteAddr() != tt.raddr || tt.t.IsData() != tt.data ||
			tt.t.IsReliable() != tt.reliable || tt.t.IsMapper() != tt.mapper {
			t.Errorf("%v: Valid %v HasRemoteAddr %v IsData %v IsReliable %v IsMapper %v", tt.t,
				tt.t.Valid(), tt.t.HasRemoteAddr(), tt.t.IsData(), tt.t.IsReliable(), tt.t.IsMapper())
		}
	}
	n := 0
	for v := range 256 {
		if Type(v).Valid() {
			n++
		}
	}
	ts := Types()
	if len(ts) != n || n != 16 {
		t.Fatalf("Types() has %d, %d valid values", len(ts), n)
	}
	for i, typ := range ts {
		if !typ.Valid() || (i > 0 && ts[i-1] >= typ) {
			t.Fatalf("Types() not valid ascending: %v", ts)
		}
	}
	ts[0] = 0
	if Types()[0] != TypeData {
		t.Fatal("Types() returns shared storage")
	}
}

func TestFlagsString(t *testing.T) {
	tests := []struct {
		f    Flags
		want string
	}{
		{0, "0"},
		{FlagHigh, "HIGH"},
		{FlagAckRequest, "ACKREQ"},
		{FlagAckValid, "ACKVALID"},
		{FlagRetransmit, "RETRANSMIT"},
		{FlagHigh | FlagRetransmit, "HIGH|RETRANSMIT"},
		{FlagHigh | FlagAckRequest | FlagAckValid | FlagRetransmit, "HIGH|ACKREQ|ACKVALID|RETRANSMIT"},
		{FlagReply, "REPLY"},
		{FlagSepReply, "SEPREPLY"},
		{FlagReply | FlagAckValid, "ACKVALID|REPLY"},
		{0x40, "0x40"},
		{FlagAckValid | 0xf000, "ACKVALID|0xf000"},
	}
	for _, tt := range tests {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("Flags(%#x).String() = %q, want %q", uint16(tt.f), got, tt.want)
		}
	}
	if !(FlagHigh | FlagAckValid).Has(FlagAckValid) || FlagHigh.Has(FlagHigh|FlagAckValid) {
		t.Error("Has")
	}
}

func TestNackReasonString(t *testing.T) {
	tests := []struct {
		r     NackReason
		want  string
		valid bool
	}{
		{0, "NackReason(0)", false},
		{NackNoBuffer, "NO_BUFFER", true},
		{NackRejected, "REJECTED", true},
		{NackPortClosed, "PORT_CLOSED", true},
		{NackStaleSession, "STALE_SESSION", true},
		{5, "NackReason(5)", false},
		{255, "NackReason(255)", false},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want || tt.r.Valid() != tt.valid {
			t.Errorf("NackReason(%d): %q valid %v, want %q %v", tt.r, got, tt.r.Valid(), tt.want, tt.valid)
		}
	}
}

func TestConstants(t *testing.T) {
	if EtherType != 0x88B5 || HeaderLen != 44 || RemoteAddrLen != 8 || EthHeaderLen != 14 ||
		Version != 1 || TargetPortOffset != OffTargetPort || PortNone != 0xFF || NumPorts != 16 ||
		MinFrameLen != 58 || MaxHeaderLen != 52 {
		t.Fatal("constants changed")
	}
	if !strings.HasPrefix(ErrCRC.Error(), "wire: ") {
		t.Fatal("error prefix")
	}
}

func TestParseHeader(t *testing.T) {
	fr := AppendFrame(nil, macB, macA, EtherType, &golden[3].f, golden[3].payload)
	h, err := ParseHeader(fr[EthHeaderLen:])
	if err != nil || h.Fields() != golden[3].f {
		t.Fatalf("ParseHeader: %v %+v", err, h.Fields())
	}
	if _, err := ParseHeader(fr[EthHeaderLen : EthHeaderLen+HeaderLen-1]); !errors.Is(err, ErrShort) {
		t.Fatalf("short: %v", err)
	}
	if _, err := ParseHeader(fr[EthHeaderLen : len(fr)-1]); !errors.Is(err, ErrLength) {
		t.Fatalf("cut: %v", err)
	}
}

func TestStream(t *testing.T) {
	base := HeaderFields{Type: TypeDataMiddle, TargetPort: 4, SourcePort: 2, Flags: FlagHigh | FlagAckRequest,
		TargetNode: 9, SourceNode: 7, Session: 0x01020304, Seq: 10, Offset: 100}
	h, err := ParseFrame(AppendFrame(nil, macB, macA, EtherType, &base, make([]byte, 10)), EtherType)
	if err != nil {
		t.Fatal(err)
	}
	want := Stream{SourceNode: 7, Session: 0x01020304, SourcePort: 2, TargetPort: 4, Priority: 1}
	if got := h.Stream(); got != want || h.Priority() != 1 {
		t.Fatalf("Stream = %+v, Priority %d; want %+v, 1", got, h.Priority(), want)
	}
	// Fields outside the stream's identity do not change it; each field of
	// it does.
	same := base
	same.Type, same.Seq, same.Offset, same.TargetNode, same.Flags = TypeDataLast, 11, 200, 10, FlagHigh|FlagRetransmit
	changes := []func(f *HeaderFields){
		func(f *HeaderFields) { f.SourceNode++ },
		func(f *HeaderFields) { f.Session++ },
		func(f *HeaderFields) { f.SourcePort++ },
		func(f *HeaderFields) { f.TargetPort++ },
		func(f *HeaderFields) { f.Flags &^= FlagHigh },
	}
	if s := Header(AppendFrame(nil, macB, macA, EtherType, &same, nil)[EthHeaderLen:]).Stream(); s != want {
		t.Fatalf("another frame of the stream: %+v", s)
	}
	for i, change := range changes {
		f := base
		change(&f)
		if s := FrameHeader(AppendFrame(nil, macB, macA, EtherType, &f, nil)).Stream(); s == want {
			t.Fatalf("change %d: same stream %+v", i, s)
		}
	}
}

func TestSeqBefore(t *testing.T) {
	for _, c := range []struct {
		a, b uint32
		want bool
	}{
		{1, 2, true}, {2, 1, false}, {5, 5, false},
		{0xFFFFFFFF, 0, true}, {0, 0xFFFFFFFF, false}, // across the wrap
		{0, 0x7FFFFFFF, true}, {0, 0x80000001, false},
	} {
		if got := SeqBefore(c.a, c.b); got != c.want {
			t.Errorf("SeqBefore(%#x, %#x) = %v", c.a, c.b, got)
		}
	}
}

func TestFrameHeader(t *testing.T) {
	f := golden[3].f
	frame := AppendFrame(nil, macB, macA, EtherType, &f, make([]byte, 5))
	if h := FrameHeader(frame); h.Fields() != f || &h[0] != &frame[EthHeaderLen] {
		t.Fatalf("FrameHeader: %+v, want %+v", h.Fields(), f)
	}
}
