package ctl

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

func TestParsePorts(t *testing.T) {
	list := []byte(`Num       RefCount Protocol Flags    Type St Inode Path
0000000000000001: 00000002 00000000 00010000 0001 01 100 @ethergm/eth0/port2
0000000000000002: 00000003 00000000 00000000 0001 03 101 @ethergm/eth0/port2
0000000000000003: 00000002 00000000 00010000 0001 01 102 @ethergm/eth0/port15
0000000000000004: 00000002 00000000 00010000 0001 01 103 @ethergm/eth0/port16
0000000000000005: 00000002 00000000 00010000 0001 01 104 @ethergm/eth0/port02
0000000000000006: 00000002 00000000 00010000 0001 01 105 @ethergm/xeth0/port3
0000000000000007: 00000002 00000000 00010000 0001 01 106 @ethergm/a/eth0/port4
0000000000000008: 00000002 00000000 00000000 0001 01 107 @ethergm/eth0/port5
0000000000000009: 00000002 00000000 00010000 0001 01 108 @ethergm/eth0/port6x
000000000000000a: 00000002 00000000 00010000 0001 01 109 /run/ethergm/eth0/port7
000000000000000b: 00000002 00000000 00010000 0001 01 111 @ethergm/eth0/mapper
000000000000000c: 00000002 00000000 00010000 0001 01 112 @ethergm/eth0/mapper-watch
000000000000000d: 00000003 00000000 00000000 0001 03 113
000000000000000e: 00000002 00000000 00010000 0001 01 110 @ethergm/eth0/port0`)
	got := parsePorts(list, []byte("@ethergm/eth0/port"))
	// Listening sockets of eth0 only: ports 2, 15 and 0 (the last line
	// has no newline). Connected sockets (5, the second 2), numbers out of
	// range or malformed, other units, the mapper's names and files do not
	// count.
	if want := uint32(1<<0 | 1<<2 | 1<<15); got != want {
		t.Fatalf("parsePorts = %#x, want %#x", got, want)
	}
}

func testUnit() string {
	return fmt.Sprintf("ctltest%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
}

func TestPortList(t *testing.T) {
	unit := testUnit()
	l, err := OpenPortList(unit)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s3, err := Listen(PortName(unit, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	s12, err := Listen(PortName(unit, 12), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s12.Close()
	if m, err := l.Ports(); err != nil || m != 1<<3|1<<12 {
		t.Fatalf("Ports = %#x, %v; want ports 3 and 12", m, err)
	}
	s3.Close()
	if m, err := l.Ports(); err != nil || m != 1<<12 {
		t.Fatalf("Ports = %#x, %v after closing port 3; want port 12", m, err)
	}
}

// TestWatch registers ports with a Watch and ends their connections: the
// Watch counts them and hears each end as it happens; a port hears what
// the mapper publishes, and that the mapper went away.
func TestWatch(t *testing.T) {
	unit := testUnit()
	if _, err := DialWatch(unit, 2, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DialWatch without a mapper: %v, want ErrNotFound", err)
	}
	events := make(chan struct{}, 64)
	w, err := ListenWatch(unit, func() { events <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := ListenWatch(unit, nil); !errors.Is(err, ErrInUse) {
		t.Fatalf("second ListenWatch: %v, want ErrInUse", err)
	}
	var heard atomic.Int32
	changed := make(chan struct{}, 64)
	c2, err := DialWatch(unit, 2, func() { heard.Add(1); changed <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	c7, err := DialWatch(unit, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-events
	<-events
	if conn, ended := w.Take(); conn != 1<<2|1<<7 || ended != 0 {
		t.Fatalf("Take = %#x %#x, want ports 2 and 7 connected", conn, ended)
	}
	<-changed // the mapper's view on registration
	c7.Close()
	<-events
	if conn, ended := w.Take(); conn != 1<<2 || ended != 1<<7 {
		t.Fatalf("Take = %#x %#x after port 7 closed, want port 2 connected, port 7 ended", conn, ended)
	}
	if opens, closes := w.Counts(); opens != 2 || closes != 1 {
		t.Fatalf("Counts = %d %d, want 2 1", opens, closes)
	}
	w.Publish(1 << 7)
	<-changed
	if g := c2.Gone(); g != 1<<7 {
		t.Fatalf("Gone = %#x, want port 7", g)
	}
	w.Close()
	<-changed
	if !c2.Done() || c2.Gone() != 0 {
		t.Fatalf("after the mapper closed: Done %v Gone %#x, want true 0", c2.Done(), c2.Gone())
	}
	c2.Close()
}
