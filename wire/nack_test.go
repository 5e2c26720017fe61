package wire

import "testing"

func TestAppendPortClosedNack(t *testing.T) {
	for _, f := range []HeaderFields{
		{Type: TypeData, TargetPort: 5, SourcePort: 2, Flags: FlagHigh | FlagAckRequest, TargetNode: 7, SourceNode: 3, Session: 0xabcdef, Seq: 42, MsgLen: 10},
		{Type: TypeOpen, TargetPort: 9, SourcePort: 4, TargetNode: 7, SourceNode: 1, Session: 11, Seq: 1},
		{Type: TypePut, TargetPort: 15, SourcePort: 0, TargetNode: 7, SourceNode: 2, Session: 12, Seq: 3, RemoteAddr: 0x1000},
	} {
		frame := AppendFrame(nil, macB, macA, EtherType, &f, []byte("payload"))
		h, err := ParseFrame(frame, EtherType)
		if err != nil {
			t.Fatal(err)
		}
		var scratch HeaderFields
		nack := AppendPortClosedNack(nil, &scratch, frame, h, macB, 7, EtherType)
		n, err := ParseFrameCRC(nack, EtherType)
		if err != nil {
			t.Fatalf("%v: the nack does not parse: %v", f.Type, err)
		}
		e := Ethernet(nack)
		want := HeaderFields{
			Type: TypeNack, TargetPort: f.SourcePort, SourcePort: f.TargetPort, Flags: f.Flags & FlagHigh,
			Status: uint8(NackPortClosed), TargetNode: f.SourceNode, SourceNode: 7, Session: f.Session, Seq: f.Seq,
		}
		if got := n.Fields(); got != want || e.Dst() != macA || e.Src() != macB || n.PayloadLen() != 0 {
			t.Errorf("%v: nack %+v from %x to %x, want %+v from %x to %x", f.Type, got, e.Src(), e.Dst(), want, macB, macA)
		}
	}
}

func TestAppendPortClosedNackAllocs(t *testing.T) {
	f := HeaderFields{Type: TypeData, TargetPort: 5, SourcePort: 2, TargetNode: 7, SourceNode: 3, Session: 1, Seq: 2}
	frame := AppendFrame(nil, macB, macA, EtherType, &f, nil)
	h, _ := ParseFrame(frame, EtherType)
	buf := make([]byte, 0, 128)
	var scratch HeaderFields
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendPortClosedNack(buf[:0], &scratch, frame, h, macB, 7, EtherType)
	}); n != 0 {
		t.Errorf("AppendPortClosedNack allocates %v times", n)
	}
}
