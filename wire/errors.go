package wire

import "errors"

// Sentinel errors returned by the parsers of this package. Callers compare
// them with errors.Is. None of them is fatal to a link: a receiver drops the
// offending frame, counts it and carries on.
var (
	// ErrShort reports a frame too short to hold an Ethernet header and a
	// fixed EtherGM header. The receiver should drop the frame and count it
	// as malformed.
	ErrShort = errors.New("wire: frame too short")

	// ErrEtherType reports a frame whose EtherType is not the one the
	// receiver was configured for. It is not EtherGM traffic; the receiver
	// should ignore it silently (a BPF filter normally keeps such frames out).
	ErrEtherType = errors.New("wire: wrong EtherType")

	// ErrVersion reports an EtherGM header whose version is not Version. The
	// receiver should drop the frame and count it; it may come from a newer
	// or older implementation (see "Versioning" in docs/PROTOCOL.md).
	ErrVersion = errors.New("wire: unsupported protocol version")

	// ErrUnknownType reports a header whose type is not a defined Type. The
	// receiver should drop the frame and count it; new types may be added
	// by newer implementations without a version change.
	ErrUnknownType = errors.New("wire: unknown frame type")

	// ErrLength reports a header whose declared lengths (header, remote
	// address and payload) do not fit in the received frame, or a payload
	// too long to describe. The receiver should drop the frame and count it
	// as malformed; the sender recovers a reliable frame by retransmission.
	ErrLength = errors.New("wire: declared length exceeds frame")

	// ErrCRC reports a frame whose CRC32C does not match its contents. The
	// receiver should drop the frame and count a CRC error; a reliable frame
	// is recovered by the sender's retransmission.
	ErrCRC = errors.New("wire: CRC mismatch")

	// ErrBody reports a malformed mapper body (SCOUT, SCOUT_REPLY, CONFIG
	// or CONFIG_ACK payload): a length field that disagrees with the bytes
	// present, a host name that is too long or contains a NUL byte, or an
	// entry range outside the host table. The receiver should drop the
	// frame and count it as malformed.
	ErrBody = errors.New("wire: malformed mapper body")

	// ErrMapperRev reports a mapper body whose revision (byte 0) is not
	// MapperRev. The receiver should drop the frame and count it; it comes
	// from an older or newer mapper.
	ErrMapperRev = errors.New("wire: unsupported mapper body revision")

	// ErrName reports, when building a mapper body, a host name longer than
	// MaxHostNameLen bytes or containing a NUL byte. It is a caller error;
	// nothing was appended.
	ErrName = errors.New("wire: invalid host name")
)
