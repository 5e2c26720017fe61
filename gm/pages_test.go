package gm

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The page table of ports with Config.VirtualAddresses (pages.go).

const pgBase = 0x7f00_0000_0000 // a page-aligned address (never dereferenced here)

// fakeTable is a page table that does not ask the kernel whether the
// pages are mapped (the addresses of these tests are made up).
func fakeTable() *pageTable { t := newPageTable(); t.checkMapped = false; return t }

// TestPagesRounding: a registration covers the pages its range touches,
// rounded outward; the access check is per page.
func TestPagesRounding(t *testing.T) {
	pt := fakeTable()
	if err := pt.register(pgBase+4000, 200); err != nil { // touches pages 0 and 1
		t.Fatal(err)
	}
	if pt.pages() != 2 {
		t.Fatalf("%d pages", pt.pages())
	}
	for _, c := range []struct {
		addr uint64
		n    uint32
		ok   bool
	}{
		{pgBase, 8192, true}, {pgBase, 0, true}, {pgBase + 8191, 1, true}, {pgBase + 8191, 2, false},
		{pgBase - 1, 1, false}, {pgBase - 1, 2, false}, {pgBase + 8192, 0, false}, {^uint64(0) - 1, 10, false},
	} {
		if got := pt.registered(c.addr, c.n); got != c.ok {
			t.Errorf("registered(%#x, %d) = %v", c.addr, c.n, got)
		}
	}
	// One byte registers its page.
	if err := pt.register(pgBase+3*PageLen+5, 1); err != nil || pt.pages() != 3 {
		t.Fatal(err, pt.pages())
	}
	// Page 2 is missing: a span over pages 1..3 is refused.
	if pt.registered(pgBase+PageLen, 3*PageLen) {
		t.Fatal("a range with a hole is reachable")
	}
}

// TestPagesCounts: a page registered twice needs two deregistrations, and
// adjacent registrations make one reachable range.
func TestPagesCounts(t *testing.T) {
	pt := fakeTable()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(pt.register(pgBase, 2*PageLen))         // pages 0, 1
	must(pt.register(pgBase+PageLen, 2*PageLen)) // pages 1, 2: page 1 twice
	if !pt.registered(pgBase, 3*PageLen) {
		t.Fatal("adjacent registrations do not make one range")
	}
	must(pt.deregister(pgBase, 2*PageLen)) // page 0 gone, page 1 once
	if pt.registered(pgBase, 1) || !pt.registered(pgBase+PageLen, 2*PageLen) || pt.pages() != 2 {
		t.Fatalf("after one deregistration: %d pages", pt.pages())
	}
	must(pt.deregister(pgBase+PageLen, 2*PageLen))
	if pt.pages() != 0 || pt.registered(pgBase+PageLen, 1) {
		t.Fatalf("%d pages left", pt.pages())
	}
}

// TestPagesErrors: bad lengths, a deregistration of a range with an
// unregistered page and a count overflow are refused and change nothing.
func TestPagesErrors(t *testing.T) {
	pt := fakeTable()
	for _, l := range []int{0, -1} {
		if err := pt.register(pgBase, l); !errors.Is(err, InvalidParameter) {
			t.Errorf("register length %d: %v", l, err)
		}
		if err := pt.deregister(pgBase, l); !errors.Is(err, InvalidParameter) {
			t.Errorf("deregister length %d: %v", l, err)
		}
	}
	if err := pt.register(^uintptr(0)-10, 100); !errors.Is(err, InvalidParameter) {
		t.Errorf("wrapping range: %v", err)
	}
	if err := pt.register(pgBase, PageLen); err != nil {
		t.Fatal(err)
	}
	// Pages 0 and 1, of which 1 is not registered: nothing changes.
	if err := pt.deregister(pgBase, 2*PageLen); !errors.Is(err, InvalidParameter) {
		t.Fatalf("partial deregistration: %v", err)
	}
	if !pt.registered(pgBase, PageLen) || pt.pages() != 1 {
		t.Fatal("a refused deregistration changed the table")
	}
	// Overflow: page 0 reaches MaxPageRefs; a range over pages 1 and 0
	// fails as a whole.
	for i := 1; i < MaxPageRefs; i++ {
		if err := pt.register(pgBase, 1); err != nil {
			t.Fatal(i, err)
		}
	}
	err := pt.register(pgBase-PageLen, 2*PageLen)
	if !errors.Is(err, PTERefCntOverflow) {
		t.Fatalf("overflow: %v", err)
	}
	if pt.pages() != 1 || pt.refs[pgBase>>pageShift] != MaxPageRefs {
		t.Fatal("an overflowing registration changed the table")
	}
	for i := 0; i < MaxPageRefs; i++ {
		if err := pt.deregister(pgBase, 1); err != nil {
			t.Fatal(i, err)
		}
	}
	if pt.pages() != 0 {
		t.Fatal("pages left")
	}
}

// TestPagesSlice: Slice returns the registered memory itself (mmap'd here).
func TestPagesSlice(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, 3*PageLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	addr := uintptrOf(mem)
	pt := newPageTable()
	if err := pt.register(addr+10, PageLen); err != nil { // pages 0, 1
		t.Fatal(err)
	}
	b, ok := pt.Slice(uint64(addr)+100, 2*PageLen-100)
	if !ok || len(b) != 2*PageLen-100 {
		t.Fatal(ok, len(b))
	}
	b[0], b[len(b)-1] = 1, 2
	if mem[100] != 1 || mem[2*PageLen-1] != 2 {
		t.Fatal("Slice is not the memory at the address")
	}
	if _, ok := pt.Slice(uint64(addr)+100, 2*PageLen); ok {
		t.Fatal("Slice reaches an unregistered page")
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// TestPagesUnmapped: memory that is not mapped in the process is not
// registered (MemoryFault), so that no remote access can fault it; a page
// already registered is counted again without asking.
func TestPagesUnmapped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mapped memory is checked on Linux only")
	}
	mem, err := unix.Mmap(-1, 0, 3*PageLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	addr := uintptrOf(mem)
	defer unix.Munmap(mem)                                                                    // the whole mapping; its page 2 is gone already
	if _, _, errno := unix.Syscall(unix.SYS_MUNMAP, addr+2*PageLen, PageLen, 0); errno != 0 { // page 2 goes
		t.Fatal(errno)
	}
	pt := newPageTable()
	if err := pt.register(addr, 3*PageLen); !errors.Is(err, MemoryFault) {
		t.Fatalf("unmapped page: %v", err)
	}
	if pt.pages() != 0 {
		t.Fatal("a refused registration changed the table")
	}
	if err := pt.register(addr+100, 2*PageLen-100); err != nil {
		t.Fatal(err)
	}
	if err := pt.register(0, 1); !errors.Is(err, MemoryFault) {
		t.Fatalf("the null page: %v", err)
	}
	if pt.pages() != 2 {
		t.Fatal(pt.pages())
	}
}
