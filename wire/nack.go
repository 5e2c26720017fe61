package wire

// AppendPortClosedNack appends to b the NACK PORT_CLOSED that answers
// frame, a frame (parsed as h) that arrived at node self, from src, for a
// port that is not open, and returns the extended slice. The answer comes
// from the closed port (h's target port) to the sending port, to the MAC
// the frame came from, and echoes what the sender's stream matches a nack
// with: the frame's session, its sequence number and its priority flag. It
// carries no cumulative ack (a closed port has no receive state). f is
// scratch space for the header (a caller's field, so that nothing escapes
// to the heap); AppendPortClosedNack does not allocate when cap(b) has
// room for the frame.
//
// Both answerers of closed ports build it here: a GM port that answers for
// the closed ports of its host, and the mapper daemon.
func AppendPortClosedNack(b []byte, f *HeaderFields, frame []byte, h Header, src [6]byte, self uint32, etherType uint16) []byte {
	*f = HeaderFields{
		Type: TypeNack, TargetPort: h.SourcePort(), SourcePort: h.TargetPort(),
		Flags: h.Flags() & FlagHigh, Status: uint8(NackPortClosed),
		TargetNode: h.SourceNode(), SourceNode: self,
		Session: h.Session(), Seq: h.Seq(),
	}
	return AppendFrame(b, Ethernet(frame).Src(), src, etherType, f, nil)
}
