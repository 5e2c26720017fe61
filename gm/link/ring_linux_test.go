package link

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethergm/ethergm/wire"
)

func TestRingLayout(t *testing.T) {
	var bd unix.TpacketBlockDesc
	var h1 unix.TpacketHdrV1
	hdr := unsafe.Offsetof(bd.Hdr)
	var p unix.Tpacket3Hdr
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"block_status", hdr + unsafe.Offsetof(h1.Block_status), bdBlockStatus},
		{"num_pkts", hdr + unsafe.Offsetof(h1.Num_pkts), bdNumPkts},
		{"offset_to_first_pkt", hdr + unsafe.Offsetof(h1.Offset_to_first_pkt), bdFirstPkt},
		{"blk_len", hdr + unsafe.Offsetof(h1.Blk_len), bdBlkLen},
		{"sizeof(tpacket_block_desc)", unsafe.Sizeof(bd), bdSize},
		{"tp_next_offset", unsafe.Offsetof(p.Next_offset), p3NextOffset},
		{"tp_sec", unsafe.Offsetof(p.Sec), p3Sec},
		{"tp_nsec", unsafe.Offsetof(p.Nsec), p3Nsec},
		{"tp_snaplen", unsafe.Offsetof(p.Snaplen), p3Snaplen},
		{"tp_len", unsafe.Offsetof(p.Len), p3Len},
		{"tp_status", unsafe.Offsetof(p.Status), p3Status},
		{"tp_mac", unsafe.Offsetof(p.Mac), p3Mac},
		{"tp_net", unsafe.Offsetof(p.Net), p3Net},
		{"sizeof(tpacket3_hdr)", unsafe.Sizeof(p), p3Size},
		{"SizeofTpacket3Hdr", unix.SizeofTpacket3Hdr, p3Size},
		// TX: frame at TPACKET3_HDRLEN - sizeof(sockaddr_ll) (tpacket_fill_skb).
		{"TX data offset", uintptr(tpacket3HdrLen - unix.SizeofSockaddrLinklayer), txDataOff},
		// RX, SOCK_RAW: macoff = TPACKET_ALIGN(TPACKET3_HDRLEN + max(14, 16)) - 14 (tpacket_rcv).
		{"RX mac offset", uintptr(align(tpacket3HdrLen+16, unix.TPACKET_ALIGNMENT) - 14), rxMacOff},
	} {
		if c.got != c.want {
			t.Errorf("%s: offset %d, want %d", c.name, c.got, c.want)
		}
	}
}

// tpacket3HdrLen is TPACKET3_HDRLEN: TPACKET_ALIGN(sizeof(struct
// tpacket3_hdr)) + sizeof(struct sockaddr_ll).
const tpacket3HdrLen = (unix.SizeofTpacket3Hdr+unix.TPACKET_ALIGNMENT-1)/unix.TPACKET_ALIGNMENT*unix.TPACKET_ALIGNMENT + unix.SizeofSockaddrLinklayer

func align(n, a int) int { return (n + a - 1) / a * a }

// fakeRing builds TPACKET_V3 ring memory the way af_packet.c fills it.
type fakeRing struct {
	mem  []byte
	bs   int
	last map[int]int // block -> offset of its last packet
}

func newFakeRing(bs, n int) *fakeRing {
	f := &fakeRing{mem: make([]byte, bs*n), bs: bs, last: map[int]int{}}
	for b := range n {
		f.open(b)
	}
	return f
}

func (f *fakeRing) u32(off int, v uint32) { binary.NativeEndian.PutUint32(f.mem[off:], v) }

func (f *fakeRing) open(b int) {
	base := b * f.bs
	f.u32(base+bdNumPkts, 0)
	f.u32(base+bdFirstPkt, bdSize)
	f.u32(base+bdBlkLen, bdSize)
	delete(f.last, b)
}

// add appends a packet holding frame to block b. complete sets its
// TP_STATUS_USER bit (copy done); the returned offset can be passed to
// complete later.
func (f *fakeRing) add(b int, frame []byte, complete bool) int {
	base := b * f.bs
	off := int(binary.NativeEndian.Uint32(f.mem[base+bdBlkLen:]))
	p := base + off
	size := align(rxMacOff+len(frame), v3Align)
	f.u32(p+p3NextOffset, uint32(size))
	f.u32(base+bdBlkLen, uint32(off+size))
	f.u32(base+bdNumPkts, binary.NativeEndian.Uint32(f.mem[base+bdNumPkts:])+1)
	copy(f.mem[p+rxMacOff:], frame)
	f.last[b] = p
	if complete {
		f.complete(p, len(frame))
	}
	return p
}

func (f *fakeRing) complete(p, n int) {
	f.u32(p+p3Status, statusUser)
	f.u32(p+p3Snaplen, uint32(n))
	f.u32(p+p3Len, uint32(n))
	binary.NativeEndian.PutUint16(f.mem[p+p3Mac:], rxMacOff)
}

// close retires block b as prb_close_block does.
func (f *fakeRing) close(b int) {
	if p, ok := f.last[b]; ok {
		f.u32(p+p3NextOffset, 0)
	}
	f.u32(b*f.bs+bdBlockStatus, statusUser)
}

func (f *fakeRing) status(b int) uint32 {
	return binary.NativeEndian.Uint32(f.mem[b*f.bs+bdBlockStatus:])
}

func (f *fakeRing) reader(open bool) *rxRing {
	r := new(rxRing)
	f.setReader(r, open)
	return r
}

// setReader makes r a new reader of f (r may be a Link's ring).
func (f *fakeRing) setReader(r *rxRing, open bool) {
	r.mem, r.blockSize, r.nBlocks, r.openBlock = f.mem, f.bs, len(f.mem)/f.bs, open
	r.macOff, r.etherType = rxMacOff, wire.EtherType
}

// readerState is the position of a reader (the fields next and begin
// move); rxRing itself holds counters that must not be copied.
type readerState struct {
	blk       int
	consumed  uint32
	off       int
	delivered bool
	poisoned  bool
	pending   int
}

func stateOf(r *rxRing) readerState {
	return readerState{r.blk, r.consumed, r.off, r.delivered, r.poisoned, r.pending}
}

// cloneReader returns a reader of mem at r's position.
func cloneReader(r *rxRing, mem []byte) *rxRing {
	c := &rxRing{mem: mem, blockSize: r.blockSize, nBlocks: r.nBlocks, openBlock: r.openBlock,
		macOff: r.macOff, etherType: r.etherType}
	c.blk, c.consumed, c.off, c.delivered, c.poisoned, c.pending = r.blk, r.consumed, r.off, r.delivered, r.poisoned, r.pending
	return c
}

func ringFrame(seq uint32, size int) []byte {
	f := wire.HeaderFields{Type: wire.TypeData, TargetPort: 1, Seq: seq}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(seq) + byte(i)
	}
	return wire.AppendFrame(nil, [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}, wire.EtherType, &f, payload)
}

// recv collects every frame available now, as Recv does.
func recv(r *rxRing) []uint32 {
	r.begin()
	var seqs []uint32
	for {
		f := r.next()
		if f == nil {
			return seqs
		}
		seqs = append(seqs, wire.Header(f[wire.EthHeaderLen:]).Seq())
	}
}

func eq(a []uint32, b ...uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRxRingOpenBlock(t *testing.T) {
	f := newFakeRing(4096, 4)
	r := f.reader(true)
	if got := recv(r); len(got) != 0 {
		t.Fatalf("empty ring gave %v", got)
	}
	f.add(0, ringFrame(1, 10), true)
	if got := recv(r); !eq(got, 1) {
		t.Fatalf("1 packet: got %v", got)
	}
	f.add(0, ringFrame(2, 0), true)
	f.add(0, ringFrame(3, 100), true)
	p := f.add(0, ringFrame(4, 33), false) // claimed, copy in progress
	if got := recv(r); !eq(got, 2, 3) {
		t.Fatalf("3 packets, last incomplete: got %v", got)
	}
	f.complete(p, len(ringFrame(4, 33)))
	if got := recv(r); !eq(got, 4) {
		t.Fatalf("completed packet: got %v", got)
	}
	// The kernel closes the block and fills the next one.
	f.close(0)
	f.add(1, ringFrame(5, 1), true)
	if got := recv(r); !eq(got, 5) {
		t.Fatalf("next block: got %v", got)
	}
	if f.status(0) != statusKernel || r.blk != 1 {
		t.Fatalf("block 0 status %d, reader at block %d", f.status(0), r.blk)
	}
	// Released block 0 is zeroed beyond its descriptor.
	for i := bdSize; i < f.bs; i++ {
		if f.mem[i] != 0 {
			t.Fatalf("block 0 byte %d = %d after release", i, f.mem[i])
		}
	}
	if r.malformed.load()+r.crcErrors.load() != 0 {
		t.Fatalf("malformed %d crc %d", r.malformed.load(), r.crcErrors.load())
	}
}

// TestRxRingReady: a readiness test counts packets not yet taken, in the
// current block or, once that is closed and read, in the next; a block the
// retire timer closed after its last packet was taken is not readiness
// (busy, which decides whether to keep spinning, still counts it).
func TestRxRingReady(t *testing.T) {
	for _, open := range []bool{false, true} {
		f := newFakeRing(4096, 3)
		r := f.reader(open)
		if r.ready() {
			t.Fatalf("open=%v: empty ring ready", open)
		}
		frame := ringFrame(1, 10)
		p := f.add(0, frame, false) // claimed, copy in progress
		if r.ready() != open {
			t.Fatalf("open=%v: claimed packet in the open block: ready %v", open, r.ready())
		}
		f.complete(p, len(frame))
		if !open {
			f.close(0)
			if !r.ready() {
				t.Fatal("closed block with a packet not ready")
			}
		}
		if got := recv(r); !eq(got, 1) {
			t.Fatalf("open=%v: got %v", open, got)
		}
		if r.ready() {
			t.Fatalf("open=%v: ready after the only packet was read", open)
		}
		if open {
			// The retire timer closes the block the reader has read to
			// its end: busy (keep spinning) but not ready.
			f.close(0)
			if r.ready() || !r.busy() {
				t.Fatalf("read block closed: ready %v busy %v, want false true", r.ready(), r.busy())
			}
		}
		f.add(1, ringFrame(2, 10), true)
		if r.ready() != open {
			t.Fatalf("open=%v: packet in the next, open block: ready %v", open, r.ready())
		}
		f.close(1)
		if !r.ready() {
			t.Fatalf("open=%v: next block closed with a packet: not ready", open)
		}
		if got := recv(r); !eq(got, 2) {
			t.Fatalf("open=%v: got %v", open, got)
		}
	}
}

func TestRxRingClosedBlocks(t *testing.T) {
	for _, open := range []bool{false, true} {
		f := newFakeRing(4096, 3)
		r := f.reader(open)
		f.add(0, ringFrame(1, 10), true)
		f.add(0, ringFrame(2, 20), true)
		if got := recv(r); open != (len(got) == 2) {
			t.Fatalf("open=%v: open block gave %v", open, got)
		}
		f.add(0, ringFrame(3, 30), true)
		f.close(0)
		f.add(1, ringFrame(4, 40), true)
		f.close(1)
		// Frames of blocks closed during one call stay valid: the blocks
		// are released only by the next call.
		r.begin()
		var views [][]byte
		for v := r.next(); v != nil; v = r.next() {
			views = append(views, v)
		}
		want := []uint32{1, 2, 3, 4}
		if open {
			want = want[2:]
		}
		if len(views) != len(want) {
			t.Fatalf("open=%v: got %d frames, want %d", open, len(views), len(want))
		}
		for i, v := range views {
			if s := wire.Header(v[wire.EthHeaderLen:]).Seq(); s != want[i] {
				t.Fatalf("open=%v: frame %d has seq %d", open, i, s)
			}
		}
		if f.status(0) != statusUser || f.status(1) != statusUser {
			t.Fatalf("open=%v: blocks released while views are live", open)
		}
		if got := recv(r); len(got) != 0 {
			t.Fatalf("open=%v: got %v", open, got)
		}
		if f.status(0) != statusKernel || f.status(1) != statusKernel || r.blk != 2 {
			t.Fatalf("open=%v: blocks not released (%d %d), reader at %d", open, f.status(0), f.status(1), r.blk)
		}
		// Wrap around: block 2, then block 0 again.
		f.add(2, ringFrame(5, 1), true)
		f.close(2)
		f.open(0)
		f.add(0, ringFrame(6, 1), true)
		f.close(0)
		if got := recv(r); !eq(got, 5, 6) {
			t.Fatalf("open=%v: wrap-around got %v", open, got)
		}
	}
}

func TestRxRingInvalid(t *testing.T) {
	good := ringFrame(1, 50)
	badCRC := ringFrame(2, 50)
	badCRC[len(badCRC)-1] ^= 1
	badVersion := ringFrame(3, 50)
	badVersion[wire.EthHeaderLen] = 7
	badType := ringFrame(4, 50)
	badType[wire.EthHeaderLen+1] = 0x7F
	long := ringFrame(5, 50)
	binary.BigEndian.PutUint16(long[wire.EthHeaderLen+wire.OffPayloadLen:], 2000) // declares more than present
	badEther := ringFrame(6, 50)
	badEther[12] = 0x08
	for _, open := range []bool{false, true} {
		f := newFakeRing(8192, 2)
		r := f.reader(open)
		for _, fr := range [][]byte{badCRC, badVersion, badType, long, badEther, good[:20], good} {
			f.add(0, fr, true)
		}
		f.close(0)
		if got := recv(r); !eq(got, 1) {
			t.Errorf("open=%v: got %v, want [1]", open, got)
		}
		if c, m := r.crcErrors.load(), r.malformed.load(); c != 1 || m != 5 {
			t.Errorf("open=%v: crc %d malformed %d, want 1, 5", open, c, m)
		}
	}
	// NoCRCCheck delivers the bad CRC frame.
	f := newFakeRing(8192, 2)
	r := f.reader(true)
	r.noCRC = true
	f.add(0, badCRC, true)
	if got := recv(r); !eq(got, 2) {
		t.Errorf("noCRC: got %v", got)
	}
}

func TestRxRingGarbageOffsets(t *testing.T) {
	cases := []struct {
		name  string
		mess  func(f *fakeRing, p int)
		close bool
	}{
		{"next_offset not aligned", func(f *fakeRing, p int) { f.u32(p+p3NextOffset, 13) }, true},
		{"next_offset beyond block", func(f *fakeRing, p int) { f.u32(p+p3NextOffset, 1<<30) }, true},
		{"next_offset too small", func(f *fakeRing, p int) { f.u32(p+p3NextOffset, 8) }, true},
		{"tp_mac beyond block", func(f *fakeRing, p int) { binary.NativeEndian.PutUint16(f.mem[p+p3Mac:], 0xFFFF) }, true},
		{"tp_mac inside header", func(f *fakeRing, p int) { binary.NativeEndian.PutUint16(f.mem[p+p3Mac:], 4) }, true},
		{"snaplen huge", func(f *fakeRing, p int) { f.u32(p+p3Snaplen, 0xFFFFFFFF) }, true},
		{"snaplen truncated", func(f *fakeRing, p int) { f.u32(p+p3Snaplen, 30) }, true},
		{"num_pkts huge", func(f *fakeRing, p int) { f.u32(bdNumPkts, 1<<31) }, true},
		{"first packet offset huge", func(f *fakeRing, p int) { f.u32(bdFirstPkt, 1<<31) }, true},
		{"first packet offset unaligned", func(f *fakeRing, p int) { f.u32(bdFirstPkt, 50) }, true},
		{"blk_len huge", func(f *fakeRing, p int) { f.u32(bdBlkLen, 1<<31) }, true},
		{"open: num_pkts huge", func(f *fakeRing, p int) { f.u32(bdNumPkts, 1<<31) }, false},
		{"open: next_offset beyond block", func(f *fakeRing, p int) { f.u32(p+p3NextOffset, 1<<30) }, false},
		{"packet without USER in closed block", func(f *fakeRing, p int) { f.u32(p+p3Status, 0) }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, open := range []bool{false, true} {
				f := newFakeRing(4096, 2)
				r := f.reader(open)
				p := f.add(0, ringFrame(1, 20), true)
				f.add(0, ringFrame(2, 20), true)
				c.mess(f, p)
				if c.close {
					f.close(0)
				}
				recv(r)
				recv(r)
				if c.close {
					// The reader skipped the block and moved on.
					f.add(1, ringFrame(3, 20), true)
					f.close(1)
					if got := recv(r); len(got) == 0 || got[len(got)-1] != 3 {
						t.Errorf("open=%v: after the bad block got %v", open, got)
					}
				}
			}
		})
	}
}

// TestRxRingRandom fills ring memory with random bytes and random plausible
// structures: the reader must never panic.
func TestRxRingRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		f := newFakeRing(4096, 3)
		for b := range 3 {
			for range rng.IntN(4) {
				size := rng.IntN(200)
				if align(bdSize+rxMacOff+size+wire.MaxHeaderLen+14, 8) > 4096-600 {
					break
				}
				f.add(b, ringFrame(uint32(iter), size), rng.IntN(4) != 0)
			}
			if rng.IntN(2) == 0 {
				f.close(b)
			}
		}
		for range rng.IntN(40) {
			i := rng.IntN(len(f.mem) - 4)
			if rng.IntN(2) == 0 {
				f.mem[i] = byte(rng.Uint32())
			} else {
				i &^= 3
				f.u32(i, rng.Uint32())
			}
		}
		if iter%100 == 0 {
			for i := range f.mem {
				f.mem[i] = byte(rng.Uint32())
			}
		}
		r := f.reader(rng.IntN(2) == 0)
		for range 5 {
			recv(r)
		}
		// The same memory read as a V2 ring of 256-byte slots.
		v2 := &rxRing{mem: f.mem, v2: true, frameSize: 256, nFrames: len(f.mem) / 256, etherType: wire.EtherType}
		for range 5 {
			recv(v2)
		}
	}
}

func TestTxRing(t *testing.T) {
	tx := txRing{mem: make([]byte, 4*2048), frameSize: 2048, nFrames: 4}
	for i := range 4 {
		s := tx.slot()
		if s == nil || len(s) != 2048-txDataOff {
			t.Fatalf("slot %d: len %d", i, len(s))
		}
		tx.commit(100 + i)
	}
	if tx.slot() != nil || tx.queued != 4 {
		t.Fatal("full ring gave a slot")
	}
	for i := range 4 {
		off := i * 2048
		if st := binary.NativeEndian.Uint32(tx.mem[off+p3Status:]); st != statusSendRequest {
			t.Errorf("slot %d status %d", i, st)
		}
		if n := binary.NativeEndian.Uint32(tx.mem[off+p3Len:]); n != uint32(100+i) {
			t.Errorf("slot %d len %d", i, n)
		}
	}
	// The kernel sends slot 0 and marks it available (with a timestamp bit).
	binary.NativeEndian.PutUint32(tx.mem[p3Status:], unix.TP_STATUS_TS_SOFTWARE)
	if tx.slot() == nil {
		t.Fatal("available slot not reused")
	}
	binary.NativeEndian.PutUint32(tx.mem[p3Status:], statusSending)
	if tx.slot() != nil {
		t.Fatal("sending slot reused")
	}
}

func TestRingLayoutV2(t *testing.T) {
	var h unix.Tpacket2Hdr
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"tp_status", unsafe.Offsetof(h.Status), p2Status},
		{"tp_len", unsafe.Offsetof(h.Len), p2Len},
		{"tp_snaplen", unsafe.Offsetof(h.Snaplen), p2Snaplen},
		{"tp_mac", unsafe.Offsetof(h.Mac), p2Mac},
		{"tp_net", unsafe.Offsetof(h.Net), p2Net},
		{"sizeof(tpacket2_hdr)", unsafe.Sizeof(h), p2Size},
		// TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - 14, TPACKET2_HDRLEN = 32 + 20.
		{"RX mac offset", uintptr(align(unix.SizeofTpacket2Hdr+unix.SizeofSockaddrLinklayer+16, unix.TPACKET_ALIGNMENT) - 14), rxMacOffV2},
	} {
		if c.got != c.want {
			t.Errorf("%s: offset %d, want %d", c.name, c.got, c.want)
		}
	}
}

// v2Ring builds a TPACKET_V2 ring of n slots of fs bytes.
func v2Ring(fs, n int) (*rxRing, func(slot int, frame []byte, mac, snap int)) {
	r := &rxRing{mem: make([]byte, fs*n), v2: true, frameSize: fs, nFrames: n, etherType: wire.EtherType}
	put := func(slot int, frame []byte, mac, snap int) {
		p := slot * fs
		copy(r.mem[p+rxMacOffV2:], frame)
		binary.NativeEndian.PutUint32(r.mem[p+p2Snaplen:], uint32(snap))
		binary.NativeEndian.PutUint16(r.mem[p+p2Mac:], uint16(mac))
		binary.NativeEndian.PutUint32(r.mem[p+p2Status:], statusUser|unix.TP_STATUS_LOSING)
	}
	return r, put
}

func TestRxRingV2(t *testing.T) {
	r, put := v2Ring(512, 4)
	if got := recv(r); len(got) != 0 {
		t.Fatalf("empty ring gave %v", got)
	}
	for i := range 3 {
		f := ringFrame(uint32(i+1), 10*i)
		put(i, f, rxMacOffV2, len(f))
	}
	r.begin()
	var views [][]byte
	for v := r.next(); v != nil; v = r.next() {
		views = append(views, v)
	}
	if len(views) != 3 {
		t.Fatalf("got %d frames", len(views))
	}
	for i := range 3 {
		if st := binary.NativeEndian.Uint32(r.mem[i*512:]); st&statusUser == 0 {
			t.Fatalf("slot %d released while its view is live", i)
		}
	}
	f := ringFrame(4, 5)
	put(3, f, rxMacOffV2, len(f))
	if got := recv(r); !eq(got, 4) {
		t.Fatalf("slot 3: got %v", got)
	}
	for i := range 3 {
		if st := binary.NativeEndian.Uint32(r.mem[i*512:]); st != statusKernel {
			t.Fatalf("slot %d not released: %d", i, st)
		}
	}
	// Nothing new after slot 3: the reader is quiet although slot 3 is
	// still handed out (quiet changes nothing), and idle, the start of the
	// next call, gives it back.
	if !r.quiet() {
		t.Fatal("not quiet with only a handed-out slot")
	}
	if st := binary.NativeEndian.Uint32(r.mem[3*512:]); st&statusUser == 0 {
		t.Fatal("quiet gave slot 3 back while its view may be live")
	}
	if !r.idle() {
		t.Fatal("not idle with only a handed-out slot")
	}
	if st := binary.NativeEndian.Uint32(r.mem[3*512:]); st != statusKernel || r.pending != 0 {
		t.Fatalf("idle did not give slot 3 back: status %d, pending %d", st, r.pending)
	}
	// Wrap around, with invalid slots: counted and skipped.
	bad := ringFrame(6, 20)
	bad[len(bad)-1] ^= 1
	put(0, ringFrame(5, 1), rxMacOffV2, len(ringFrame(5, 1)))
	put(1, bad, rxMacOffV2, len(bad))
	put(2, ringFrame(7, 1), 0xFFF0, 100) // tp_mac beyond the slot
	if got := recv(r); !eq(got, 5) {
		t.Fatalf("wrap: got %v", got)
	}
	if r.crcErrors.load() != 1 || r.malformed.load() != 1 {
		t.Fatalf("crc %d malformed %d", r.crcErrors.load(), r.malformed.load())
	}
}

// FuzzRxRing reads arbitrary bytes as ring memory, as V3 (open-block and
// closed-block readers) and as V2: nothing may panic, and every delivered
// frame must be a valid EtherGM frame inside the ring.
func FuzzRxRing(f *testing.F) {
	fr := newFakeRing(1024, 2)
	fr.add(0, ringFrame(1, 10), true)
	fr.add(0, ringFrame(2, 100), false)
	fr.close(1)
	f.Add(fr.mem)
	f.Add(make([]byte, 2048))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := make([]byte, 2048)
		copy(mem, data)
		for _, r := range []*rxRing{
			{mem: mem, blockSize: 1024, nBlocks: 2, openBlock: true, macOff: rxMacOff, etherType: wire.EtherType},
			{mem: mem, blockSize: 1024, nBlocks: 2, macOff: rxMacOff, etherType: wire.EtherType},
			{mem: mem, v2: true, frameSize: 256, nFrames: 8, etherType: wire.EtherType},
		} {
			for range 3 {
				r.begin()
				for v := r.next(); v != nil; v = r.next() {
					if _, err := wire.ParseFrameCRC(v, wire.EtherType); err != nil {
						t.Fatalf("delivered an invalid frame: %v", err)
					}
				}
			}
		}
	})
}

// TestRingFrames checks RingFrames against the ring layout by hand: each
// frame takes its 82-byte packet header plus the frame, 8-byte aligned,
// after the block's 48-byte descriptor.
func TestRingFrames(t *testing.T) {
	for _, tt := range []struct {
		cfg  *Config
		mtu  int
		want int
	}{
		{nil, 1500, (131072 - 48) / 1600 * 64},                                    // 81 per block
		{nil, 9000, (131072 - 48) / 9096 * 64},                                    // 14 per block
		{&Config{RxBlockSize: 4096, RxBlocks: 1}, 1500, 2 * 2},                    // 2 per page-sized block, at least 2 blocks
		{&Config{RxBlockSize: 100, RxBlocks: 4}, 9000, 4 * ((12288 - 48) / 9096)}, // grown to hold one frame, page-rounded
	} {
		if got := RingFrames(tt.cfg, tt.mtu); got != tt.want {
			t.Errorf("RingFrames(%+v, %d) = %d, want %d", tt.cfg, tt.mtu, got, tt.want)
		}
	}
}

// TestRxRingIdle: idle, the cheap test a polling Recv makes first, must
// answer true only when a full read (begin, then next until nil) would
// find no frame and give no block back. Random sequences of kernel steps
// (packets claimed, completed, blocks closed) and reads are checked
// against a copy of the ring read in full, in both V3 modes.
func TestRxRingIdle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, open := range []bool{false, true} {
		idles, busies := 0, 0
		for range 300 {
			const nb = 4
			f := newFakeRing(4096, nb)
			r := f.reader(open)
			kb, pending, plen := 0, -1, 0 // the block the kernel fills; the packet it is copying
			for range 60 {
				switch op := rng.IntN(10); {
				case op < 4 && pending < 0 && f.status(kb) == statusKernel:
					frame := ringFrame(1, rng.IntN(100))
					off := int(binary.NativeEndian.Uint32(f.mem[kb*f.bs+bdBlkLen:]))
					if off+align(rxMacOff+len(frame), v3Align) > f.bs {
						break
					}
					p := f.add(kb, frame, op < 2)
					if op >= 2 {
						pending, plen = p, len(frame)
					}
				case op < 6 && pending >= 0:
					f.complete(pending, plen)
					pending = -1
				case op == 6 && pending < 0 && f.status(kb) == statusKernel &&
					binary.NativeEndian.Uint32(f.mem[kb*f.bs+bdNumPkts:]) > 0:
					f.close(kb)
					kb = (kb + 1) % nb
				default:
					recv(r)
				}
				// A full read of a copy must find nothing if idle says so.
				mem := append([]byte(nil), f.mem...)
				c := cloneReader(r, mem)
				got := recv(c)
				before := stateOf(r)
				if r.idle() {
					idles++
					if len(got) != 0 || c.blk != r.blk || c.pending != 0 || !bytes.Equal(mem, f.mem) {
						t.Fatalf("open=%v: idle, but a read got %v and moved from block %d to %d", open, got, r.blk, c.blk)
					}
					after := stateOf(r)
					before.delivered = false // what begin would have done
					if after != before {
						t.Fatalf("open=%v: idle changed the reader: %+v -> %+v", open, before, after)
					}
				} else {
					busies++
				}
			}
		}
		if idles == 0 || busies == 0 {
			t.Fatalf("open=%v: %d idle and %d busy states: the test does not cover both", open, idles, busies)
		}
	}
}

// With PACKET_VNET_HDR each frame follows a virtio_net_hdr whose hdr_len
// asks the kernel to copy a frame of up to vnetLinearMax bytes whole (every
// jumbo frame) and a longer one not at all (hdr_len 0); tp_len counts the
// header.
func TestTxRingVnet(t *testing.T) {
	const fs = 32768
	tx := txRing{mem: make([]byte, 3*fs), frameSize: fs, nFrames: 3, vnet: vnetHdrLen}
	for i, n := range []int{1514, 9014, 20014} {
		s := tx.slot()
		if s == nil || len(s) != fs-txDataOff-vnetHdrLen {
			t.Fatalf("slot %d: len %d", i, len(s))
		}
		for j := range vnetHdrLen {
			tx.mem[i*fs+txDataOff+j] = 0xff // stale bytes of an earlier frame
		}
		s[0] = 0xab
		tx.commit(n)
		off := i * fs
		if got := binary.NativeEndian.Uint32(tx.mem[off+p3Len:]); got != uint32(n+vnetHdrLen) {
			t.Errorf("frame %d: tp_len %d, want %d", i, got, n+vnetHdrLen)
		}
		h := tx.mem[off+txDataOff : off+txDataOff+vnetHdrLen]
		want := n // 1514 and 9014
		if i == 2 {
			want = 0 // 20014 > vnetLinearMax
		}
		if got := int(binary.LittleEndian.Uint16(h[2:])); got != want {
			t.Errorf("frame %d of %d bytes: hdr_len %d, want %d", i, n, got, want)
		}
		if h[0] != 0 || h[1] != 0 || h[4] != 0 || h[9] != 0 {
			t.Errorf("frame %d: virtio_net_hdr % x, want zero flags, gso and csum", i, h)
		}
		if tx.mem[off+txDataOff+vnetHdrLen] != 0xab {
			t.Errorf("frame %d: the frame does not follow the header", i)
		}
	}
}
