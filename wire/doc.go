// Package wire defines the EtherGM frame format: GM-style messages carried
// directly in Ethernet frames under a private EtherType. It only encodes and
// decodes bytes; it does no I/O and starts no goroutines. docs/PROTOCOL.md is
// the normative description of the format; this package implements it.
//
// # Frame
//
// All multi-byte fields are big-endian (network byte order).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Ethernet: destination MAC (6) | source MAC (6) |     |
//	|          EtherType (2, default 0x88B5)                        |   14 bytes
//	+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
//	|    version    |     type      |  target port  |  source port  |  0
//	+---------------+---------------+---------------+---------------+
//	|             flags             |  size class   |    status     |  4
//	+---------------+---------------+---------------+---------------+
//	|                        target node id                         |  8
//	+---------------------------------------------------------------+
//	|                        source node id                         | 12
//	+---------------------------------------------------------------+
//	|                            session                            | 16
//	+---------------------------------------------------------------+
//	|                        sequence number                        | 20
//	+---------------------------------------------------------------+
//	|                        cumulative ack                         | 24
//	+---------------------------------------------------------------+
//	|                        message length                         | 28
//	+---------------------------------------------------------------+
//	|                        segment offset                         | 32
//	+-------------------------------+-------------------------------+
//	|        payload length         |           reserved            | 36
//	+-------------------------------+-------------------------------+
//	|              CRC32C (bytes 0..39 + extension + payload)       | 40
//	+---------------------------------------------------------------+
//	|             remote address (64 bits, PUT/GET/GOT only)        | 44
//	|                                                               |
//	+---------------------------------------------------------------+
//	|                 payload (payload length bytes)                | 44 or 52
//	+---------------------------------------------------------------+
//	|          Ethernet padding to 60 bytes, ignored                |
//
// # Use
//
// Senders build frames with AppendFrame into a reused buffer. Receivers call
// ParseFrame (or ParseFrameCRC) on each frame and read fields through the
// returned Header view, which aliases the frame. Neither allocates. The
// payloads of the mapper types (SCOUT, SCOUT_REPLY, CONFIG, CONFIG_ACK) are
// built with AppendHostInfo, AppendConfig and AppendConfigAck and read with
// ParseHostInfo, ParseConfig and ParseConfigAck; each starts with its
// revision (MapperRev), and the parsers drop other revisions
// (ErrMapperRev).
//
// Size classes (GM's size = ceil(log2(len+8))) are computed in package
// token; the header only carries the number.
package wire
