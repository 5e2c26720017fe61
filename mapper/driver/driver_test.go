package driver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

func TestParseUnixSockets(t *testing.T) {
	data := []byte(`Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 31001 @ethergm/eth0/port2
0000000000000000: 00000002 00000000 00010000 0001 01 31002 @ethergm/eth0/port15
0000000000000000: 00000002 00000000 00010000 0001 01 31003 @ethergm/eth0/mapper
0000000000000000: 00000002 00000000 00000000 0001 03 31004 @ethergm/eth0/port4
0000000000000000: 00000002 00000000 00010000 0001 01 31005 @ethergm/eth1/port5
0000000000000000: 00000002 00000000 00010000 0001 01 31006 @ethergm/eth0/port16
0000000000000000: 00000002 00000000 00010000 0001 01 31007 @ethergm/eth0/port12x
0000000000000000: 00000003 00000000 00000000 0001 03 31008
`)
	got := parseUnixSockets(data, "eth0")
	if want := uint32(1<<2 | 1<<15); got != want {
		t.Fatalf("open ports %#x, want %#x (listening sockets of unit eth0 only)", got, want)
	}
}

func TestClosedNack(t *testing.T) {
	sender := nodemap.MAC{2, 0, 0, 0, 0, 1}
	us := nodemap.MAC{2, 0, 0, 0, 0, 2}
	f := wire.HeaderFields{
		Type: wire.TypeDataFirst, TargetPort: 7, SourcePort: 4, Flags: wire.FlagHigh,
		TargetNode: 2, SourceNode: 1, Session: 0xabcdef01, Seq: 12345, MsgLen: 9000,
	}
	frame := wire.AppendFrame(nil, us, sender, wire.EtherType, &f, make([]byte, 100))
	h, err := wire.ParseFrameCRC(frame, wire.EtherType)
	if err != nil {
		t.Fatal(err)
	}
	var hdr wire.HeaderFields
	nack := appendClosedNack(nil, &hdr, frame, h, us, 2, wire.EtherType)
	n, err := wire.ParseFrameCRC(nack, wire.EtherType)
	if err != nil {
		t.Fatalf("nack does not parse: %v", err)
	}
	eth := wire.Ethernet(nack)
	switch {
	case eth.Dst() != sender || eth.Src() != us:
		t.Errorf("nack from %x to %x, want %x to %x", eth.Src(), eth.Dst(), us, sender)
	case n.Type() != wire.TypeNack || n.NackReason() != wire.NackPortClosed:
		t.Errorf("nack type %v reason %v", n.Type(), n.NackReason())
	case n.TargetPort() != 4 || n.SourcePort() != 7:
		t.Errorf("nack ports %d <- %d, want 4 <- 7", n.TargetPort(), n.SourcePort())
	case n.TargetNode() != 1 || n.SourceNode() != 2:
		t.Errorf("nack nodes %d <- %d, want 1 <- 2", n.TargetNode(), n.SourceNode())
	case n.Session() != f.Session || n.Seq() != f.Seq:
		t.Errorf("nack session %#x seq %d, want %#x %d", n.Session(), n.Seq(), f.Session, f.Seq)
	case n.Flags() != wire.FlagHigh:
		t.Errorf("nack flags %v, want the priority only", n.Flags())
	}
}

func TestNackRate(t *testing.T) {
	var n nackState
	n.init()
	sent := 0
	for range 1000 {
		if n.take(0) {
			sent++
		}
	}
	if sent != nackBurst {
		t.Fatalf("burst %d, want %d", sent, nackBurst)
	}
	if !n.take(10 * time.Millisecond) {
		t.Fatal("no token after 10 ms")
	}
}

func TestWriteAtomicAndLoadState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "u.hosts")
	if s, err := loadState(path); err != nil || s.LastVersion != 0 || len(s.Hosts) != 0 {
		t.Fatalf("missing hosts file: %+v, %v; want a fresh start", s, err)
	}
	if err := nodemap.WriteFileAtomic(path, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := nodemap.WriteFileAtomic(path, []byte("y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "y\n" {
		t.Fatalf("%q, %v", b, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func TestAnswerable(t *testing.T) {
	for _, tt := range []struct {
		t    wire.Type
		want bool
	}{
		{wire.TypeOpen, true}, {wire.TypeData, true}, {wire.TypeDataFirst, true}, {wire.TypeDataMiddle, true},
		{wire.TypeDataLast, true}, {wire.TypePut, true}, {wire.TypeGet, true}, {wire.TypeGot, true},
		{wire.TypeAck, false}, {wire.TypeNack, false}, {wire.TypeOpenAck, false}, {wire.TypeDatagram, false},
		{wire.TypeScout, false}, {wire.TypeConfig, false},
	} {
		if got := answerable(tt.t); got != tt.want {
			t.Errorf("answerable(%v) = %v, want %v", tt.t, got, tt.want)
		}
	}
}
