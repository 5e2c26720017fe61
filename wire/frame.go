package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// castagnoli is the CRC32C table, built once at package initialisation.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32Update(crc uint32, p []byte) uint32 {
	return crc32.Update(crc, castagnoli, p)
}

// AppendFrame appends a whole frame to b and returns the extended slice: the
// Ethernet header (dst, src, etherType), the EtherGM header built from f with
// version Version, the payload length, a zero reserved field and the CRC, the
// remote address extension if f.Type has one, and payload. It does not pad
// the frame to the Ethernet minimum of 60 bytes; receivers ignore any
// padding added by the kernel or the NIC. It does not allocate when cap(b)
// has room for the frame.
//
// AppendFrame panics if len(payload) > MaxPayloadLen, a programming error:
// callers segment messages to the link MTU first.
func AppendFrame(b []byte, dst, src [6]byte, etherType uint16, f *HeaderFields, payload []byte) []byte {
	if len(payload) > MaxPayloadLen {
		panic("wire: AppendFrame payload longer than MaxPayloadLen")
	}
	hlen := HeaderLen
	if f.Type.HasRemoteAddr() {
		hlen = MaxHeaderLen
	}
	n := len(b)
	b = grow(b, EthHeaderLen+hlen+len(payload))
	e := b[n:]
	copy(e[0:6], dst[:])
	copy(e[6:12], src[:])
	binary.BigEndian.PutUint16(e[12:14], etherType)
	h := Header(e[EthHeaderLen:])
	h[OffVersion] = Version
	h[OffType] = byte(f.Type)
	h[OffTargetPort] = f.TargetPort
	h[OffSourcePort] = f.SourcePort
	binary.BigEndian.PutUint16(h[OffFlags:], uint16(f.Flags))
	h[OffSize] = f.Size
	h[OffStatus] = f.Status
	binary.BigEndian.PutUint32(h[OffTargetNode:], f.TargetNode)
	binary.BigEndian.PutUint32(h[OffSourceNode:], f.SourceNode)
	binary.BigEndian.PutUint32(h[OffSession:], f.Session)
	binary.BigEndian.PutUint32(h[OffSeq:], f.Seq)
	binary.BigEndian.PutUint32(h[OffAck:], f.Ack)
	binary.BigEndian.PutUint32(h[OffMsgLen:], f.MsgLen)
	binary.BigEndian.PutUint32(h[OffOffset:], f.Offset)
	binary.BigEndian.PutUint16(h[OffPayloadLen:], uint16(len(payload)))
	binary.BigEndian.PutUint16(h[OffReserved:], 0)
	if hlen == MaxHeaderLen {
		binary.BigEndian.PutUint64(h[OffRemoteAddr:], f.RemoteAddr)
	}
	copy(h[hlen:], payload)
	h.UpdateCRC()
	return b
}

// grow extends b by n bytes, reallocating only if cap(b) is too small. The
// new bytes are not cleared; the caller overwrites all of them.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// ParseFrame checks that frame is an EtherGM frame and returns a view of its
// EtherGM header, frame[EthHeaderLen:]. It checks, in this order, that the
// frame holds an Ethernet header (ErrShort), that its EtherType is etherType
// (ErrEtherType), that it holds a fixed EtherGM header (ErrShort), the
// version (ErrVersion), the type (ErrUnknownType), and that the remote
// address extension and PayloadLen bytes of payload fit in the frame
// (ErrLength). Bytes after the payload (Ethernet padding) are ignored. It
// does not check the CRC: call Header.CheckCRC, or use ParseFrameCRC. It does
// not allocate.
func ParseFrame(frame []byte, etherType uint16) (Header, error) {
	if len(frame) < EthHeaderLen {
		return nil, ErrShort
	}
	if binary.BigEndian.Uint16(frame[12:14]) != etherType {
		return nil, ErrEtherType
	}
	return ParseHeader(frame[EthHeaderLen:])
}

// ParseHeader is ParseFrame for bytes that start at the EtherGM header, with
// the Ethernet header already removed (as in a gopacket decoder or a capture
// of the payload only). It checks the length (ErrShort), version
// (ErrVersion), type (ErrUnknownType) and that the extension and payload
// fit (ErrLength), and returns b as a Header. It does not allocate.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return nil, ErrShort
	}
	h := Header(b)
	if h.Version() != Version {
		return nil, ErrVersion
	}
	if !h.Type().Valid() {
		return nil, ErrUnknownType
	}
	if h.Len()+h.PayloadLen() > len(h) {
		return nil, ErrLength
	}
	return h, nil
}

// ParseFrameCRC is ParseFrame followed by Header.CheckCRC: it returns ErrCRC
// if everything else is valid but the CRC does not match. It does not
// allocate.
func ParseFrameCRC(frame []byte, etherType uint16) (Header, error) {
	h, err := ParseFrame(frame, etherType)
	if err != nil {
		return nil, err
	}
	if !h.CheckCRC() {
		return nil, ErrCRC
	}
	return h, nil
}

// FrameLen returns the total frame length the EtherGM header declares,
// EthHeaderLen + header length (with extension) + PayloadLen, or -1 if frame
// is shorter than MinFrameLen. It checks neither the EtherType nor the
// version nor that the declared bytes are present.
func FrameLen(frame []byte) int {
	if len(frame) < MinFrameLen {
		return -1
	}
	h := Header(frame[EthHeaderLen:])
	return EthHeaderLen + h.Len() + h.PayloadLen()
}

// Ethernet is a view of an Ethernet II header at the start of a frame. Its
// methods panic if it is shorter than EthHeaderLen.
type Ethernet []byte

// Dst returns the destination MAC address.
func (e Ethernet) Dst() [6]byte { return [6]byte(e[0:6]) }

// Src returns the source MAC address.
func (e Ethernet) Src() [6]byte { return [6]byte(e[6:12]) }

// EtherType returns the EtherType.
func (e Ethernet) EtherType() uint16 { return binary.BigEndian.Uint16(e[12:14]) }

// SetDst sets the destination MAC address. The EtherGM CRC does not cover
// the Ethernet header, so it need not be updated.
func (e Ethernet) SetDst(mac [6]byte) { copy(e[0:6], mac[:]) }

// SetSrc sets the source MAC address.
func (e Ethernet) SetSrc(mac [6]byte) { copy(e[6:12], mac[:]) }

// Broadcast is the Ethernet broadcast address, used by SCOUT frames and by
// CONFIG frames sent to every host.
var Broadcast = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
