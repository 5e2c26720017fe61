package gmlayer

import (
	"errors"

	"github.com/ethergm/ethergm/wire"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// LayerTypeNumber is the gopacket layer type number of EtherGM. gopacket
// reserves numbers below 2000 for its own layers.
const LayerTypeNumber = 2085

// LayerTypeEtherGM is the gopacket layer type of an EtherGM header.
var LayerTypeEtherGM = gopacket.RegisterLayerType(LayerTypeNumber, gopacket.LayerTypeMetadata{
	Name:    "EtherGM",
	Decoder: gopacket.DecodeFunc(decodeEtherGM),
})

func init() {
	Register(wire.EtherType)
}

// Register makes gopacket's Ethernet decoder hand frames of etherType to the
// EtherGM decoder. It is called for wire.EtherType at initialisation; call it
// for a configured non-default EtherType. Like any change to
// layers.EthernetTypeMetadata it is not safe to call while packets are
// being decoded.
func Register(etherType uint16) {
	layers.EthernetTypeMetadata[etherType] = layers.EnumMetadata{
		DecodeWith: gopacket.DecodeFunc(decodeEtherGM),
		Name:       "EtherGM",
		LayerType:  LayerTypeEtherGM,
	}
}

// EtherGM is a decoded EtherGM header. The embedded HeaderFields hold the
// header fields; Contents is the header with its remote address extension
// and Payload the PayloadLen payload bytes (Ethernet padding excluded). Both
// alias the decoded data.
type EtherGM struct {
	layers.BaseLayer
	wire.HeaderFields
	// Version is the protocol version (always wire.Version after a
	// successful decode).
	Version uint8
	// PayloadLen is the payload length field.
	PayloadLen uint16
	// Reserved is the reserved field (0 from conforming senders).
	Reserved uint16
	// CRC is the CRC32C carried in the header.
	CRC uint32
	// CRCValid reports whether CRC matches the header and payload.
	CRCValid bool
}

var (
	_ gopacket.Layer         = (*EtherGM)(nil)
	_ gopacket.DecodingLayer = (*EtherGM)(nil)
)

// LayerType returns LayerTypeEtherGM.
func (g *EtherGM) LayerType() gopacket.LayerType { return LayerTypeEtherGM }

// CanDecode returns LayerTypeEtherGM.
func (g *EtherGM) CanDecode() gopacket.LayerClass { return LayerTypeEtherGM }

// NextLayerType returns gopacket.LayerTypePayload if the frame carries a
// payload and gopacket.LayerTypeZero otherwise.
func (g *EtherGM) NextLayerType() gopacket.LayerType {
	if len(g.Payload) == 0 {
		return gopacket.LayerTypeZero
	}
	return gopacket.LayerTypePayload
}

// DecodeFromBytes decodes data, which starts at the EtherGM header, with
// wire.ParseHeader; it returns the same errors. Bytes after the payload
// (Ethernet padding) are ignored. A frame whose declared lengths exceed data
// is marked truncated in df.
func (g *EtherGM) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	h, err := wire.ParseHeader(data)
	if err != nil {
		if errors.Is(err, wire.ErrLength) || errors.Is(err, wire.ErrShort) {
			df.SetTruncated()
		}
		return err
	}
	n := h.Len()
	*g = EtherGM{
		BaseLayer:    layers.BaseLayer{Contents: h[:n:n], Payload: h.Payload()},
		HeaderFields: h.Fields(),
		Version:      h.Version(),
		PayloadLen:   uint16(h.PayloadLen()),
		Reserved:     h.Reserved(),
		CRC:          h.CRC(),
		CRCValid:     h.CheckCRC(),
	}
	return nil
}

func decodeEtherGM(data []byte, p gopacket.PacketBuilder) error {
	g := &EtherGM{}
	if err := g.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(g)
	return p.NextDecoder(g.NextLayerType())
}
