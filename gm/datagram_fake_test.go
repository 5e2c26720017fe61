package gm_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
)

// TestFakeDatagram: a datagram arrives as an ordinary receive event in a
// buffer of its size and priority, its callback runs with Success, it is
// dropped (and counted) without a buffer, and misuse returns errors.
func TestFakeDatagram(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	a, b := n.open(t, 0, 2, nil), n.open(t, 1, 4, nil)
	if m := a.DatagramMax(); m < 1000 || m > 9000 {
		t.Fatalf("DatagramMax %d", m)
	}
	size := gm.MinSizeForLength(100)
	c := newCompletions()
	la := startLoop(a, nil)
	defer la.Stop()
	// No buffer yet: dropped.
	if err := a.DatagramSend(pattern(100, 1), size, 100, gm.HighPriority, b.NodeID(), 4, c.cb, 0); err != nil {
		t.Fatal(err)
	}
	if x := c.wait(t, 1, 5*time.Second); x[0] != (completion{0, gm.Success}) {
		t.Fatalf("%+v", x)
	}
	waitFor(t, 5*time.Second, "the datagram dropped", func() bool { b.Receive(); return b.Stats().DatagramsNoBuffer == 1 })

	if err := b.ProvideReceiveBuffer(make([]byte, gm.MaxLengthForSize(size)), size, gm.HighPriority, 9); err != nil {
		t.Fatal(err)
	}
	msg := pattern(100, 2)
	if err := a.DatagramSend(msg, size, len(msg), gm.HighPriority, b.NodeID(), 4, c.cb, 1); err != nil {
		t.Fatal(err)
	}
	got, e := recvOne(t, b, 5*time.Second)
	if !bytes.Equal(got, msg) || e.Type != gm.HighRecvEvent || e.Tag != 9 || e.SenderNode != a.NodeID() || e.SenderPort != 2 || e.Size != size {
		t.Fatalf("received %v from %d:%d tag %d size %d", e.Type, e.SenderNode, e.SenderPort, e.Tag, e.Size)
	}
	if x := c.wait(t, 2, 5*time.Second); x[1] != (completion{1, gm.Success}) {
		t.Fatalf("%+v", x)
	}
	if s := b.Stats(); s.DatagramsReceived != 1 || s.AcksSent != 0 {
		t.Fatalf("target stats: %d received, %d acks sent", s.DatagramsReceived, s.AcksSent)
	}

	big := make([]byte, a.DatagramMax()+1)
	if err := a.DatagramSend(big, 31, len(big), gm.LowPriority, b.NodeID(), 4, nil, nil); !errors.Is(err, gm.ErrLength) {
		t.Fatalf("a datagram longer than a frame: %v", err)
	}
	if err := a.DatagramSend(big, 31, len(big)-1, gm.LowPriority, b.NodeID(), 16, nil, nil); !errors.Is(err, gm.ErrPortID) {
		t.Fatalf("port 16: %v", err)
	}
	if err := a.DatagramSend(big, 2, 1, gm.LowPriority, b.NodeID(), 4, nil, nil); !errors.Is(err, gm.ErrSize) {
		t.Fatalf("size 2: %v", err)
	}
}
