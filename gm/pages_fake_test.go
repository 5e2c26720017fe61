package gm_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethergm/ethergm/gm"
)

// Remote memory by virtual address (Config.VirtualAddresses, pages.go).

// mmapPages maps n anonymous pages, unmapped at the end of the test, and
// returns them with their address.
func mmapPages(t *testing.T, n int) ([]byte, uintptr) {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, n*gm.PageLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	return mem, uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
}

// pagesScenario runs puts and gets from a to port 4 of node bn, b, whose
// remote pointers are addresses: mmap'd memory registered as two adjacent
// registrations of two pages each, a put and a get that span both, then a
// put into a page deregistered (SendRejected), and deregistration errors.
func pagesScenario(t *testing.T, a, b *gm.Port, bn gm.NodeID) {
	mem, base := mmapPages(t, 4)
	copy(mem, pattern(len(mem), 7))
	if err := b.RegisterPages(base, 2*gm.PageLen); err != nil {
		t.Fatal(err)
	}
	if err := b.RegisterPages(base+2*gm.PageLen+100, 2*gm.PageLen-200); err != nil { // rounded out: pages 2, 3
		t.Fatal(err)
	}
	if n := b.RegisteredPages(); n != 4 {
		t.Fatalf("%d pages registered", n)
	}
	if err := b.AllowRemoteMemoryAccess(); err != nil {
		t.Fatal(err)
	}
	la := startLoop(a, nil)
	defer la.Stop()
	lb := startLoop(b, func(e *gm.Event) { t.Errorf("event at the target: %v", e.Type) })
	defer lb.Stop()

	c := newCompletions()
	src := pattern(3*gm.PageLen, 8)
	remote := gm.RemotePtr(base)
	if err := a.Put(src, remote.Add(1000), len(src), gm.LowPriority, bn, 4, c.cb, 0); err != nil {
		t.Fatal(err)
	}
	if x := c.wait(t, 1, 10*time.Second); x[0] != (completion{0, gm.Success}) {
		t.Fatalf("put over two registrations: %+v", x[0])
	}
	syncWith(b)
	if !bytes.Equal(mem[1000:1000+len(src)], src) {
		t.Fatal("the put is not at its address")
	}
	dst := make([]byte, 3*gm.PageLen+500)
	if err := a.Get(remote.Add(200), dst, len(dst), gm.HighPriority, bn, 4, c.cb, 1); err != nil {
		t.Fatal(err)
	}
	if x := c.wait(t, 2, 10*time.Second); x[1] != (completion{1, gm.Success}) {
		t.Fatalf("get over two registrations: %+v", x[1])
	}
	syncWith(b)
	if !bytes.Equal(dst, mem[200:200+len(dst)]) {
		t.Fatal("the get read other bytes")
	}

	// Page 3 deregistered: a put that touches it is refused and writes
	// nothing; the pages before it still take puts (after DropSends).
	if err := b.DeregisterPages(base+3*gm.PageLen, 1); err != nil {
		t.Fatal(err)
	}
	syncWith(b)
	before := bytes.Clone(mem)
	if err := a.Put(pattern(20, 9), remote.Add(3*gm.PageLen-10), 20, gm.LowPriority, bn, 4, c.cb, 2); err != nil {
		t.Fatal(err)
	}
	if x := c.wait(t, 3, 10*time.Second); x[2] != (completion{2, gm.SendRejected}) {
		t.Fatalf("put into a deregistered page: %+v", x[2])
	}
	if err := a.DropSends(gm.LowPriority, bn, 4, c.cb, 3); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(pattern(20, 10), remote.Add(3*gm.PageLen-20), 20, gm.LowPriority, bn, 4, c.cb, 4); err != nil {
		t.Fatal(err)
	}
	if x := c.wait(t, 5, 10*time.Second); x[3] != (completion{3, gm.Success}) || x[4] != (completion{4, gm.Success}) {
		t.Fatalf("after DropSends: %+v", x[3:])
	}
	syncWith(b)
	copy(before[3*gm.PageLen-20:], pattern(20, 10))
	if !bytes.Equal(mem, before) {
		t.Fatal("memory differs from the accepted puts")
	}

	// Page 3 is no longer registered: deregistering pages 2..3 fails and
	// leaves page 2 registered.
	if err := b.DeregisterPages(base+2*gm.PageLen, 2*gm.PageLen); !errors.Is(err, gm.InvalidParameter) {
		t.Fatalf("deregistration over an unregistered page: %v", err)
	}
	if n := b.RegisteredPages(); n != 3 {
		t.Fatalf("%d pages registered", n)
	}
	if err := b.DeregisterPages(base, 3*gm.PageLen); err != nil || b.RegisteredPages() != 0 {
		t.Fatal(err, b.RegisteredPages())
	}
}

// TestFakePages: puts and gets by virtual address over fake links, and
// the misuse of the two registration APIs.
func TestFakePages(t *testing.T) {
	n := newFakeNet(t, 2, 1)
	va := func(c *gm.Config) { c.VirtualAddresses = true }
	a, b := n.open(t, 0, 2, nil), n.open(t, 1, 4, va)
	if _, err := b.RegisterMemory(make([]byte, 10)); !errors.Is(err, gm.InvalidParameter) || !strings.Contains(err.Error(), "RegisterPages") {
		t.Fatalf("RegisterMemory with VirtualAddresses: %v", err)
	}
	if err := b.DeregisterMemory(1 << gm.RemotePtrRegionShift); !errors.Is(err, gm.InvalidParameter) || !strings.Contains(err.Error(), "DeregisterPages") {
		t.Fatalf("DeregisterMemory with VirtualAddresses: %v", err)
	}
	if err := a.RegisterPages(0x10000, 10); !errors.Is(err, gm.InvalidParameter) || !strings.Contains(err.Error(), "VirtualAddresses") {
		t.Fatalf("RegisterPages without VirtualAddresses: %v", err)
	}
	if err := a.DeregisterPages(0x10000, 10); !errors.Is(err, gm.InvalidParameter) || !strings.Contains(err.Error(), "VirtualAddresses") {
		t.Fatalf("DeregisterPages without VirtualAddresses: %v", err)
	}
	if err := b.RegisterPages(0x10000, 0); !errors.Is(err, gm.InvalidParameter) {
		t.Fatalf("RegisterPages of 0 bytes: %v", err)
	}
	pagesScenario(t, a, b, b.NodeID())
	b.Close()
	if err := b.RegisterPages(0x10000, 10); !errors.Is(err, gm.ErrClosed) {
		t.Fatalf("RegisterPages on a closed port: %v", err)
	}
}
