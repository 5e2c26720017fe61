package gmlayer

import (
	"bytes"
	"testing"

	"github.com/ethergm/ethergm/wire"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

var (
	macA = [6]byte{2, 0, 0, 0, 0, 1}
	macB = [6]byte{2, 0, 0, 0, 0, 2}
)

func TestNewPacket(t *testing.T) {
	tests := []struct {
		name    string
		f       wire.HeaderFields
		payload []byte
		pad     int
	}{
		{"DATA", wire.HeaderFields{Type: wire.TypeData, TargetPort: 4, SourcePort: 2, Flags: wire.FlagAckRequest,
			Size: 5, TargetNode: 2, SourceNode: 1, Session: 0x01020304, Seq: 7, MsgLen: 20}, []byte("hello, ethergm world"), 0},
		{"ACK padded", wire.HeaderFields{Type: wire.TypeAck, TargetPort: 2, SourcePort: 4, TargetNode: 1,
			SourceNode: 2, Session: 0x01020304, Ack: 7}, nil, 2},
		{"NACK", wire.HeaderFields{Type: wire.TypeNack, Status: uint8(wire.NackPortClosed), Seq: 9}, nil, 0},
		{"PUT", wire.HeaderFields{Type: wire.TypePut, Flags: wire.FlagHigh | wire.FlagRetransmit, Seq: 3,
			MsgLen: 4, RemoteAddr: 0x0102030405060708}, []byte{9, 8, 7, 6}, 0},
		{"GET padded", wire.HeaderFields{Type: wire.TypeGet, MsgLen: 4096, RemoteAddr: 42}, []byte{1}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := wire.AppendFrame(nil, macB, macA, wire.EtherType, &tt.f, tt.payload)
			frame = append(frame, make([]byte, tt.pad)...)
			p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
			if el := p.ErrorLayer(); el != nil {
				t.Fatalf("decode error: %v", el.Error())
			}
			eth, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
			if eth == nil || eth.EthernetType != layers.EthernetType(wire.EtherType) {
				t.Fatalf("no Ethernet layer: %v", p)
			}
			g, _ := p.Layer(LayerTypeEtherGM).(*EtherGM)
			if g == nil {
				t.Fatalf("no EtherGM layer: %v", p)
			}
			if g.HeaderFields != tt.f {
				t.Errorf("fields %+v, want %+v", g.HeaderFields, tt.f)
			}
			hl := wire.HeaderLen
			if tt.f.Type.HasRemoteAddr() {
				hl = wire.MaxHeaderLen
			}
			h := wire.Header(frame[wire.EthHeaderLen:])
			if g.Version != wire.Version || int(g.PayloadLen) != len(tt.payload) || g.Reserved != 0 ||
				g.CRC != h.CRC() || !g.CRCValid {
				t.Errorf("version %d paylen %d reserved %d crc %08x valid %v", g.Version, g.PayloadLen,
					g.Reserved, g.CRC, g.CRCValid)
			}
			if len(g.LayerContents()) != hl || !bytes.Equal(g.LayerPayload(), tt.payload) {
				t.Errorf("contents %d bytes, payload %x", len(g.LayerContents()), g.LayerPayload())
			}
			if len(tt.payload) > 0 {
				app := p.ApplicationLayer()
				if app == nil || !bytes.Equal(app.Payload(), tt.payload) {
					t.Errorf("application layer %v", app)
				}
			}
			if g.LayerType() != LayerTypeEtherGM || g.CanDecode() != LayerTypeEtherGM {
				t.Error("layer type")
			}
		})
	}
}

func TestBadCRC(t *testing.T) {
	frame := wire.AppendFrame(nil, macB, macA, wire.EtherType, &wire.HeaderFields{Type: wire.TypeDatagram}, []byte("abc"))
	frame[len(frame)-1] ^= 1
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	g, _ := p.Layer(LayerTypeEtherGM).(*EtherGM)
	if g == nil || g.CRCValid {
		t.Fatalf("layer %v", g)
	}
}

func TestMalformed(t *testing.T) {
	frame := wire.AppendFrame(nil, macB, macA, wire.EtherType, &wire.HeaderFields{Type: wire.TypeData}, []byte("abcdef"))
	tests := []struct {
		name      string
		frame     []byte
		truncated bool
	}{
		{"cut payload", frame[:len(frame)-1], true},
		{"cut header", frame[:30], true},
		{"bad version", func() []byte { c := bytes.Clone(frame); c[14] = 9; return c }(), false},
		{"bad type", func() []byte { c := bytes.Clone(frame); c[15] = 0x7f; return c }(), false},
	}
	for _, tt := range tests {
		p := gopacket.NewPacket(tt.frame, layers.LayerTypeEthernet, gopacket.Default)
		if p.ErrorLayer() == nil {
			t.Errorf("%s: no error layer", tt.name)
		}
		if p.Layer(LayerTypeEtherGM) != nil {
			t.Errorf("%s: EtherGM layer present", tt.name)
		}
		if p.Metadata().Truncated != tt.truncated {
			t.Errorf("%s: truncated %v", tt.name, p.Metadata().Truncated)
		}
	}
}

func TestRegisterOtherEtherType(t *testing.T) {
	const et = 0x88B6
	frame := wire.AppendFrame(nil, macB, macA, et, &wire.HeaderFields{Type: wire.TypeScout, Seq: 1}, []byte("x"))
	Register(et)
	defer func() { layers.EthernetTypeMetadata[et] = layers.EnumMetadata{} }()
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	g, _ := p.Layer(LayerTypeEtherGM).(*EtherGM)
	if g == nil || g.Type != wire.TypeScout || g.Seq != 1 {
		t.Fatalf("layer %v", p)
	}
}

func TestDecodingLayerParser(t *testing.T) {
	var (
		eth     layers.Ethernet
		gm      EtherGM
		payload gopacket.Payload
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &gm, &payload)
	decoded := make([]gopacket.LayerType, 0, 3)
	f := wire.HeaderFields{Type: wire.TypeGot, Seq: 11, RemoteAddr: 99, MsgLen: 2}
	frame := wire.AppendFrame(nil, macB, macA, wire.EtherType, &f, []byte{1, 2})
	if err := parser.DecodeLayers(frame, &decoded); err != nil {
		t.Fatal(err)
	}
	want := []gopacket.LayerType{layers.LayerTypeEthernet, LayerTypeEtherGM, gopacket.LayerTypePayload}
	if len(decoded) != 3 || decoded[0] != want[0] || decoded[1] != want[1] || decoded[2] != want[2] {
		t.Fatalf("decoded %v", decoded)
	}
	if gm.HeaderFields != f || !bytes.Equal(payload, []byte{1, 2}) {
		t.Fatalf("fields %+v payload %x", gm.HeaderFields, []byte(payload))
	}
	ack := wire.AppendFrame(nil, macB, macA, wire.EtherType, &wire.HeaderFields{Type: wire.TypeAck, Ack: 5}, nil)
	if err := parser.DecodeLayers(ack, &decoded); err != nil {
		t.Fatal(err)
	}
	if len(decoded) != 2 || gm.Ack != 5 || gm.NextLayerType() != gopacket.LayerTypeZero {
		t.Fatalf("ACK decoded %v", decoded)
	}
}
