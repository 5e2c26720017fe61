// Package gmlayer decodes EtherGM frames with gopacket
// (github.com/google/gopacket). Importing it registers LayerTypeEtherGM and
// hooks the EtherGM decoder into layers.EthernetTypeMetadata for the default
// EtherType wire.EtherType, so that
//
//	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
//	if l, ok := p.Layer(gmlayer.LayerTypeEtherGM).(*gmlayer.EtherGM); ok {
//		fmt.Println(l.Type, l.Seq, l.CRCValid)
//	}
//
// yields an EtherGM layer with every header field. Call Register for a
// deployment that uses another EtherType. EtherGM also implements
// gopacket.DecodingLayer for use with gopacket.DecodingLayerParser.
//
// The package exists separately from package wire so that wire stays
// standard-library only; it is meant for tools and tests, not the data path.
package gmlayer
