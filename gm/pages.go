package gm

import (
	"fmt"
	"unsafe"
)

// Remote memory by virtual address: GM's own model, for programs (C ones,
// through libgm) that hand their peers raw addresses.
//
// A port opened with Config.VirtualAddresses takes puts and gets aimed at
// its process's virtual addresses: the RemotePtr a peer uses is the address
// itself. Memory is registered by page (PageLen bytes) with RegisterPages
// and DeregisterPages; every page has a reference count (registering a
// page twice needs two deregistrations), a transfer may span adjacent
// registrations, and the access check is per page: a put or get is served
// only if every page it touches is registered (and the port called
// AllowRemoteMemoryAccess), else it fails at its sender with SendRejected.
//
// The memory must not be Go memory: C memory (malloc, gm_dma_malloc) or
// memory mapped with mmap, which the garbage collector neither moves nor
// frees. The caller guarantees that the registered pages stay mapped (and
// writable) while they are registered; the port does not touch them after
// DeregisterPages returns (a get being answered then sends a copy taken at
// deregistration). Puts write the memory while the port processes frames,
// with no event, as with RegisterMemory.

// PageLen is GM_PAGE_LEN, the unit of RegisterPages.
const PageLen = 4096

const pageShift = 12

// MaxPageRefs is how many registrations a page may have at once; one more
// fails with PTERefCntOverflow.
const MaxPageRefs = 1<<16 - 1

// MaxRegisteredPages bounds the number of distinct pages registered with
// a port at once (64 GiB); more fail with PageTableFull.
const MaxRegisteredPages = 1 << 24

// pageTable is the registered pages of a port with virtual addresses, and
// the proto.Memory its engine reads and writes. It is guarded by the
// port's mutex (the engine calls Slice under it).
type pageTable struct {
	refs map[uint64]uint16 // page number -> registrations
	// checkMapped: registrations of pages not registered yet must be
	// mapped memory (mapped); off in the page table's own tests, which
	// use made-up addresses.
	checkMapped bool
}

func newPageTable() *pageTable { return &pageTable{refs: map[uint64]uint16{}, checkMapped: true} }

// pageRange returns the pages [first, last] that [addr, addr+length)
// touches, or an error for an empty or wrapping range.
func pageRange(addr uintptr, length int) (first, last uint64, err error) {
	if length <= 0 {
		return 0, 0, fmt.Errorf("%w: cannot register or deregister %d bytes: the length must be positive", InvalidParameter, length)
	}
	end := uint64(addr) + uint64(length) - 1
	if end < uint64(addr) {
		return 0, 0, fmt.Errorf("%w: the range %#x + %d wraps around the address space", InvalidParameter, addr, length)
	}
	return uint64(addr) >> pageShift, end >> pageShift, nil
}

// register adds one registration to every page of [addr, addr+length);
// on an error it changes nothing.
func (t *pageTable) register(addr uintptr, length int) error {
	first, last, err := pageRange(addr, length)
	if err != nil {
		return err
	}
	added := uint64(0)
	for pg := first; ; pg++ {
		c := t.refs[pg]
		if c == MaxPageRefs {
			return fmt.Errorf("%w: page %#x is registered %d times already (deregister it first)", PTERefCntOverflow, pg<<pageShift, c)
		}
		if c == 0 {
			added++
		}
		if pg == last {
			break // last may be the highest page
		}
	}
	if uint64(len(t.refs))+added > MaxRegisteredPages {
		return fmt.Errorf("%w: registering %d more pages would exceed %d registered pages", PageTableFull, added, MaxRegisteredPages)
	}
	if added > 0 && t.checkMapped {
		if err := mapped(first, last); err != nil {
			return err
		}
	}
	for pg := first; ; pg++ {
		t.refs[pg]++
		if pg == last {
			break
		}
	}
	return nil
}

// deregister removes one registration from every page of [addr,
// addr+length); if a page is not registered it changes nothing.
func (t *pageTable) deregister(addr uintptr, length int) error {
	first, last, err := pageRange(addr, length)
	if err != nil {
		return err
	}
	for pg := first; ; pg++ {
		if t.refs[pg] == 0 {
			return fmt.Errorf("%w: page %#x of [%#x, %#x) is not registered with this port: nothing was deregistered", InvalidParameter, pg<<pageShift, addr, uint64(addr)+uint64(length))
		}
		if pg == last {
			break
		}
	}
	for pg := first; ; pg++ {
		if c := t.refs[pg]; c == 1 {
			delete(t.refs, pg)
		} else {
			t.refs[pg] = c - 1
		}
		if pg == last {
			break
		}
	}
	return nil
}

// registered reports whether every page of [addr, addr+n) is registered
// (for n == 0, the page of addr).
func (t *pageTable) registered(addr uint64, n uint32) bool {
	last := addr >> pageShift
	if n > 0 {
		end := addr + uint64(n) - 1
		if end < addr {
			return false
		}
		last = end >> pageShift
	}
	for pg := addr >> pageShift; ; pg++ {
		if t.refs[pg] == 0 {
			return false
		}
		if pg == last {
			return true
		}
	}
}

// pages returns the number of pages registered.
func (t *pageTable) pages() int { return len(t.refs) }

// Slice implements proto.Memory: the n bytes at addr, if every page they
// touch is registered.
func (t *pageTable) Slice(addr uint64, n uint32) ([]byte, bool) {
	if !t.registered(addr, n) {
		return nil, false
	}
	if n == 0 {
		return []byte{}, true
	}
	// Registered memory is C or mmap'd memory that the registrant keeps
	// mapped while registered (see RegisterPages): never the Go heap.
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(addr))), int(n)), true
}

// RegisterPages is gm_register_memory for a port opened with
// Config.VirtualAddresses: it registers the pages of [addr, addr+length),
// rounded outward to PageLen, for puts and gets of peers (once
// AllowRemoteMemoryAccess was called), whose remote pointers are then
// addresses in it. Each page's registrations are counted: a page stays
// registered until it is deregistered as many times as it was registered,
// and adjacent registrations make one range for transfers.
//
// The memory must be C memory or mapped with mmap, never Go memory, and
// must stay mapped until it is deregistered (see the package's notes on
// remote memory by virtual address).
//
// Errors (nothing is registered then): InvalidParameter for length <= 0
// or a range that wraps, MemoryFault if a page of the range is not mapped
// in this process (Linux: mincore), PTERefCntOverflow if a page already has
// MaxPageRefs registrations, PageTableFull beyond MaxRegisteredPages, and
// an error if the port was not opened with Config.VirtualAddresses (use
// RegisterMemory), or is closed (ErrClosed).
func (p *Port) RegisterPages(addr uintptr, length int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	if p.pages == nil {
		return fmt.Errorf("%w: RegisterPages needs a port opened with Config.VirtualAddresses; this port's remote pointers are regions: use RegisterMemory", InvalidParameter)
	}
	return p.pages.register(addr, length)
}

// DeregisterPages is gm_deregister_memory for a port opened with
// Config.VirtualAddresses: it removes one registration from every page of
// [addr, addr+length), rounded outward to PageLen. A page left with none
// is no longer reachable: later puts and gets that touch it fail with
// SendRejected, the rest of a put being received is not written into it,
// and a get being answered sends the bytes it had at this call. Once it
// returns, the port does not touch the pages' memory (the caller may unmap
// it if no other registration covers it).
//
// If a page of the range is not registered it returns an error that wraps
// InvalidParameter and deregisters nothing; it also fails for length <= 0,
// on a port without Config.VirtualAddresses (use DeregisterMemory), and on
// a closed port (ErrClosed).
func (p *Port) DeregisterPages(addr uintptr, length int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	if p.pages == nil {
		return fmt.Errorf("%w: DeregisterPages needs a port opened with Config.VirtualAddresses; this port's remote pointers are regions: use DeregisterMemory", InvalidParameter)
	}
	if err := p.pages.deregister(addr, length); err != nil {
		return err
	}
	// Pages whose last registration went away are no longer read by
	// replies still to be sent (they take a copy now).
	first, last, _ := pageRange(addr, length)
	run := -1 // pages [first+run, pg) are no longer registered
	for pg := first; ; pg++ {
		gone := !p.pages.registered(pg<<pageShift, 0)
		if gone && run < 0 {
			run = int(pg - first)
		}
		if run >= 0 && (!gone || pg == last) {
			end := pg
			if gone {
				end = pg + 1
			}
			lo := first + uint64(run)
			p.eng.DetachMemory(lo<<pageShift, (end-lo)<<pageShift)
			run = -1
		}
		if pg == last {
			break
		}
	}
	return nil
}

// RegisteredPages returns the number of distinct pages registered with
// RegisterPages (0 on a port without Config.VirtualAddresses).
func (p *Port) RegisteredPages() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pages == nil {
		return 0
	}
	return p.pages.pages()
}
