package proto

import (
	"bytes"
	"testing"
	"time"

	"github.com/ethergm/ethergm/wire"
)

// fakeMem is a Memory of pages over a Go slice that starts at address
// base: Slice answers only for registered pages. before, if set, runs at
// the start of every Slice call.
type fakeMem struct {
	base   uint64
	buf    []byte
	reg    map[uint64]bool // page number -> registered
	calls  int
	before func(addr uint64, n uint32)
}

const fakeBase = 0x7f12_3456_0000

func newFakeMem(pages int, registered ...int) *fakeMem {
	m := &fakeMem{base: fakeBase, buf: make([]byte, pages*4096), reg: map[uint64]bool{}}
	for _, pg := range registered {
		m.reg[fakeBase>>12+uint64(pg)] = true
	}
	return m
}

func (m *fakeMem) Slice(addr uint64, n uint32) ([]byte, bool) {
	m.calls++
	if m.before != nil {
		m.before(addr, n)
	}
	if addr < m.base || addr+uint64(n) > m.base+uint64(len(m.buf)) {
		return nil, false
	}
	last := addr >> 12
	if n > 0 {
		last = (addr + uint64(n) - 1) >> 12
	}
	for pg := addr >> 12; pg <= last; pg++ {
		if !m.reg[pg] {
			return nil, false
		}
	}
	return m.buf[addr-m.base : addr-m.base+uint64(n)], true
}

// memPair returns a (node 1, port 2) and b (node 2, port 4) on n, b with
// the Memory m and remote access allowed.
func memPair(n *simnet, m *fakeMem) (a, b *Engine) {
	a = n.add(1, 2, nil)
	b = n.add(2, 4, nil)
	b.SetMemory(m)
	b.AllowRemoteAccess()
	return a, b
}

// TestMemoryPutGetPages: with a Memory, remote pointers are addresses; a
// put and a get that span pages registered apart succeed; a transfer that
// touches one unregistered page is refused (SendRejected) and writes
// nothing; the region table is not consulted.
func TestMemoryPutGetPages(t *testing.T) {
	n := newSimnet(t, 41)
	m := newFakeMem(4, 0, 1, 2) // page 3 is not registered
	a, b := memPair(n, m)
	if ptr, err := b.RegisterMemory(make([]byte, 100)); err != nil || ptr>>RegionShift != 1 {
		t.Fatal(ptr, err)
	}
	var comps []completion
	src := pattern(9000, 1) // pages 0, 1 and 2
	if err := a.Put(n.now, src, fakeBase+1000, len(src), 0, 2, 4, nil, 1); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 11000)
	if err := a.Get(n.now, fakeBase+500, dst, len(dst), 0, 2, 4, nil, 2); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 2, 10*time.Second)
	if comps[0] != (completion{1, StatusSuccess}) || comps[1] != (completion{2, StatusSuccess}) {
		t.Fatalf("%+v", comps)
	}
	if !bytes.Equal(m.buf[1000:10000], src) || !bytes.Equal(m.buf[:1000], make([]byte, 1000)) {
		t.Fatal("the put did not land at its address")
	}
	if !bytes.Equal(dst, m.buf[500:11500]) {
		t.Fatal("the get read other bytes")
	}

	// 12000..13000 reaches page 3: refused, nothing written.
	before := bytes.Clone(m.buf)
	if err := a.Put(n.now, pattern(1000, 2), fakeBase+12000, 1000, 1, 2, 4, nil, 3); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 3, time.Second)
	if comps[2] != (completion{3, StatusSendRejected}) || !bytes.Equal(m.buf, before) {
		t.Fatalf("put into an unregistered page: %+v, memory changed %v", comps[2], !bytes.Equal(m.buf, before))
	}
	// A get ending in page 3, and one at an address below the memory.
	if err := a.Get(n.now, fakeBase+4*4096-10, make([]byte, 20), 20, 0, 2, 4, nil, 4); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 4, time.Second)
	if err := a.Resume(n.now, 0, 2, 4, nil, 5); err != nil {
		t.Fatal(err)
	}
	if err := a.Get(n.now, 4096, make([]byte, 20), 20, 0, 2, 4, nil, 6); err != nil {
		t.Fatal(err)
	}
	waitComps(t, n, a, &comps, 6, time.Second)
	if comps[3] != (completion{4, StatusSendRejected}) || comps[5] != (completion{6, StatusSendRejected}) {
		t.Fatalf("%+v", comps)
	}
	if a.PendingGets() != 0 || b.Pending() != 0 {
		t.Fatalf("pending gets %d, target events %d", a.PendingGets(), b.Pending())
	}
}

// TestMemoryDeregisterMidPut: a page deregistered while a put is being
// received is not written by the put's later frames (every frame looks its
// bytes up again); the pages still registered are, and the put completes.
func TestMemoryDeregisterMidPut(t *testing.T) {
	n := newSimnet(t, 42)
	m := newFakeMem(3, 0, 1, 2)
	a, _ := memPair(n, m)
	page1 := uint64(fakeBase>>12 + 1)
	m.before = func(addr uint64, n uint32) {
		if addr>>12 == page1 || (addr+uint64(n)-1)>>12 == page1 && n < 4096 {
			// The first frame that writes into page 1 finds it gone.
			m.reg[page1] = false
		}
	}
	src := pattern(3*4096, 3)
	if err := a.Put(n.now, src, fakeBase, len(src), 0, 2, 4, nil, 1); err != nil {
		t.Fatal(err)
	}
	var comps []completion
	waitComps(t, n, a, &comps, 1, 10*time.Second)
	if comps[0] != (completion{1, StatusSuccess}) {
		t.Fatalf("%+v", comps)
	}
	if !bytes.Equal(m.buf[:4096], src[:4096]) || !bytes.Equal(m.buf[8192:], src[8192:]) {
		t.Fatal("the registered pages do not hold the put's data")
	}
	if !bytes.Equal(m.buf[4096:8192], make([]byte, 4096)) {
		t.Fatal("the put wrote into a page deregistered before its frames arrived")
	}
	if m.calls < len(src)/92 {
		t.Fatalf("%d lookups for %d frames: frames are not checked when written", m.calls, len(src)/92)
	}
}

// TestMemoryDetachReply: a reply (GOT) that waits to be sent reads the
// target memory when its frames are built; DetachMemory makes it take a
// copy, so that memory changed (or unmapped) afterwards is not read.
func TestMemoryDetachReply(t *testing.T) {
	for _, detach := range []bool{false, true} {
		n := newSimnet(t, 43)
		m := newFakeMem(2, 0, 1)
		copy(m.buf, pattern(len(m.buf), 4))
		a, b := memPair(n, m)
		hold := true
		n.lose = func(f []byte) bool {
			h, err := wire.ParseFrame(f, 0x88b5)
			return err == nil && hold && h.Type() == wire.TypeGot
		}
		want := bytes.Clone(m.buf[100:5000])
		dst := make([]byte, len(want))
		if err := a.Get(n.now, fakeBase+100, dst, len(dst), 1, 2, 4, nil, 1); err != nil {
			t.Fatal(err)
		}
		n.run(time.Second, func() bool { return freeReplies(b) < ReplySlots && n.sent > 3 })
		if detach {
			b.DetachMemory(fakeBase+4096, 4096) // page 1
		}
		for i := range m.buf {
			m.buf[i] = 0xEE
		}
		hold = false
		var comps []completion
		waitComps(t, n, a, &comps, 1, 5*time.Second)
		if comps[0] != (completion{1, StatusSuccess}) {
			t.Fatalf("%+v", comps)
		}
		if detach != bytes.Equal(dst, want) {
			t.Fatalf("detach %v: the reply read the memory as it was at the get %v", detach, bytes.Equal(dst, want))
		}
	}
}
