// Package frameset builds a sample of EtherGM traffic: at least one frame of
// every type in wire.Types(), with the variants that matter to a decoder (a
// whole message and the first, middle and last segments of a segmented one,
// a NACK for every reason, PUT/GET/GOT with a remote address, mapper bodies
// including a CONFIG with several entries). cmd/gm_frames sends it, and the
// dissector tests in tests/wireshark compare tshark's decoding of it with
// package wire's. It does no I/O.
//
// A type added to wire.Types() without a builder here still gets a frame
// (a header with no payload), so the dissector tests notice a type the
// dissector does not know.
package frameset
