package wire

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// FuzzFrame checks that ParseFrame never panics, that anything it accepts
// re-encodes to the same bytes up to FrameLen, and that encoding arbitrary
// fields and a payload parses back to the same fields.
func FuzzFrame(f *testing.F) {
	for _, g := range golden {
		b, _ := hex.DecodeString(g.hex)
		f.Add(b)
	}
	b, _ := hex.DecodeString(scoutHex)
	f.Add(b)
	// A reply stream's GOT and a GET asking for it (PROTOCOL.md 7.5, 7.6).
	for _, hf := range []HeaderFields{
		{Type: TypeGot, TargetPort: 2, SourcePort: 4, Flags: FlagReply | FlagAckValid, TargetNode: 1, SourceNode: 2,
			Session: 9, Seq: 3, Ack: 2, MsgLen: 4, RemoteAddr: 1 << 40},
		{Type: TypeGet, TargetPort: 4, SourcePort: 2, Flags: FlagSepReply | FlagHigh, TargetNode: 2, SourceNode: 1,
			Session: 8, Seq: 5, MsgLen: 4, RemoteAddr: 7 << 40},
	} {
		f.Add(AppendFrame(nil, [6]byte{2}, [6]byte{3}, EtherType, &hf, []byte{0, 0, 1, 0, 0, 0, 0, 0}))
	}
	f.Add([]byte{})
	f.Add(make([]byte, MinFrameLen))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Direction 1: parse arbitrary bytes.
		h, err := ParseFrame(data, EtherType)
		if fl := FrameLen(data); err == nil {
			if fl < MinFrameLen || fl > len(data) {
				t.Fatalf("FrameLen %d outside [%d, %d]", fl, MinFrameLen, len(data))
			}
			fields := h.Fields()
			e := Ethernet(data)
			re := AppendFrame(nil, e.Dst(), e.Src(), EtherType, &fields, h.Payload())
			// The re-encoding has a fresh CRC and a zero reserved field;
			// restore what the input carried before comparing.
			rh := Header(re[EthHeaderLen:])
			copy(rh[OffReserved:OffReserved+2], h[OffReserved:OffReserved+2])
			rh.SetCRC(h.CRC())
			if !bytes.Equal(re, data[:fl]) {
				t.Fatalf("re-encoding differs:\n got %x\nwant %x", re, data[:fl])
			}
			if h.CheckCRC() != (h.ComputeCRC() == h.CRC()) {
				t.Fatal("CheckCRC inconsistent")
			}
			_ = h.Flags().String() + h.Type().String() + h.NackReason().String()
			if h.Type().IsMapper() {
				switch h.Type() {
				case TypeScout, TypeScoutReply:
					_, _ = ParseHostInfo(h.Payload())
				case TypeConfig:
					if c, err := ParseConfig(h.Payload()); err == nil {
						for range c.All() {
						}
					}
				case TypeConfigAck:
					_, _ = ParseConfigAck(h.Payload())
				}
			}
		} else if fl != -1 && len(data) < MinFrameLen {
			t.Fatalf("FrameLen %d for %d bytes", fl, len(data))
		}

		// Direction 2: use the bytes as field values and payload.
		if len(data) < 48 {
			return
		}
		types := Types()
		fields := HeaderFields{
			Type:       types[int(data[0])%len(types)],
			TargetPort: data[1], SourcePort: data[2],
			Flags: Flags(be16(data[3:])), Size: data[5], Status: data[6],
			TargetNode: be32(data[7:]), SourceNode: be32(data[11:]), Session: be32(data[15:]),
			Seq: be32(data[19:]), Ack: be32(data[23:]), MsgLen: be32(data[27:]), Offset: be32(data[31:]),
		}
		if fields.Type.HasRemoteAddr() {
			fields.RemoteAddr = uint64(be32(data[35:]))<<32 | uint64(be32(data[39:]))
		}
		payload := data[48:]
		fr := AppendFrame(nil, [6]byte(data[36:42]), [6]byte(data[42:48]), EtherType, &fields, payload)
		h2, err := ParseFrameCRC(fr, EtherType)
		if err != nil {
			t.Fatalf("encoded frame does not parse: %v", err)
		}
		if h2.Fields() != fields || !bytes.Equal(h2.Payload(), payload) || FrameLen(fr) != len(fr) {
			t.Fatalf("round trip: %+v, want %+v", h2.Fields(), fields)
		}
	})
}

// FuzzMapperBodies checks that the mapper body parsers never panic and that
// whatever they accept re-encodes to the same bytes.
func FuzzMapperBodies(f *testing.F) {
	hi, _ := AppendHostInfo(nil, &scoutInfo)
	f.Add(byte(0), hi)
	c, _ := AppendConfig(nil, &ConfigHeader{TotalHosts: 4}, testEntries(4))
	f.Add(byte(1), c)
	f.Add(byte(2), AppendConfigAck(nil, &ConfigAck{MapVersion: 1, NodeID: 2}))
	f.Fuzz(func(t *testing.T, kind byte, body []byte) {
		var re []byte
		switch kind % 3 {
		case 0:
			h, err := ParseHostInfo(body)
			if err != nil {
				return
			}
			if re, err = AppendHostInfo(nil, &h); err != nil {
				t.Fatal(err)
			}
			// Reserved bytes are re-encoded as 0.
			re[19] = body[19]
			for r := range int(h.NumRails) {
				off := HostInfoLen + r*HostRailLen + 7
				re[off] = body[off]
			}
		case 1:
			cfg, err := ParseConfig(body)
			if err != nil {
				return
			}
			var es []ConfigEntry
			for _, e := range cfg.All() {
				es = append(es, e)
			}
			if len(es) != int(cfg.Count) {
				t.Fatalf("%d entries, Count %d", len(es), cfg.Count)
			}
			if re, err = AppendConfig(nil, &cfg.ConfigHeader, es); err != nil {
				t.Fatal(err)
			}
			// The reserved fields are re-encoded as 0.
			re[18], re[19] = body[18], body[19]
			off := ConfigLen
			for i := range es {
				for r := range int(es[i].NumRails) {
					k := off + ConfigEntryLen + r*ConfigRailLen + 7
					re[k] = body[k]
				}
				off += es[i].EncodedLen()
			}
		case 2:
			a, err := ParseConfigAck(body)
			if err != nil {
				return
			}
			re = AppendConfigAck(nil, &a)
		}
		if !bytes.Equal(re, body) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", re, body)
		}
	})
}

func be16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
