package link

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ethergm/ethergm/wire"
	"github.com/ethergm/ethergm/wire/auth"
)

// Layout of the TPACKET_V3 ring structures (<linux/if_packet.h>). Every
// offset is checked against golang.org/x/sys/unix (TpacketBlockDesc,
// TpacketHdrV1, Tpacket3Hdr) by TestRingLayout.
const (
	// struct tpacket_block_desc: u32 version, u32 offset_to_priv, then
	// union tpacket_bd_header_u holding struct tpacket_hdr_v1 at offset 8.
	bdBlockStatus = 8  // tpacket_hdr_v1.block_status (u32): TP_STATUS_KERNEL or TP_STATUS_USER[|LOSING|BLK_TMO]
	bdNumPkts     = 12 // tpacket_hdr_v1.num_pkts (u32): packets in the block (grows while the block is open)
	bdFirstPkt    = 16 // tpacket_hdr_v1.offset_to_first_pkt (u32): from the block start
	bdBlkLen      = 20 // tpacket_hdr_v1.blk_len (u32): bytes used, including this descriptor
	bdSize        = 48 // sizeof(struct tpacket_block_desc); with tp_sizeof_priv 0 the first packet starts here

	// struct tpacket3_hdr, at the start of every packet in a block.
	p3NextOffset = 0  // tp_next_offset (u32): from this header to the next packet's; 0 in the last packet of a closed block
	p3Sec        = 4  // tp_sec (u32)
	p3Nsec       = 8  // tp_nsec (u32)
	p3Snaplen    = 12 // tp_snaplen (u32): bytes stored (valid once the block is closed)
	p3Len        = 16 // tp_len (u32): original frame length; on the TX ring: length to send
	p3Status     = 20 // tp_status (u32): RX: TP_STATUS_USER once copied; TX: AVAILABLE/SEND_REQUEST/SENDING/WRONG_FORMAT
	p3Mac        = 24 // tp_mac (u16): frame start, from this header (valid once the block is closed)
	p3Net        = 26 // tp_net (u16): network header start
	p3Size       = 48 // sizeof(struct tpacket3_hdr), with hv1 (rxhash, vlan tci/tpid) and padding

	// struct tpacket2_hdr, at the start of every slot of a V2 ring.
	p2Status  = 0  // tp_status (u32): TP_STATUS_USER once the frame and all fields are written
	p2Len     = 4  // tp_len (u32)
	p2Snaplen = 8  // tp_snaplen (u32): bytes stored
	p2Mac     = 12 // tp_mac (u16): frame start, from the slot start
	p2Net     = 14 // tp_net (u16)
	p2Size    = 32 // sizeof(struct tpacket2_hdr)

	// rxMacOffV2 is tp_mac in a V2 ring for a SOCK_RAW Ethernet socket:
	// TPACKET_ALIGN(TPACKET2_HDRLEN(32+20) + 16) - 14. Only used to size
	// the slots; the reader uses the kernel's tp_mac.
	rxMacOffV2 = 66

	// rxMacOff is where the kernel puts the frame (tp_mac) for a SOCK_RAW
	// Ethernet socket with TPACKET_V3 and no PACKET_RESERVE:
	// TPACKET_ALIGN(TPACKET3_HDRLEN(48+20) + max(14, 16)) - 14 = 96 - 14.
	// The start-up self-test checks it against the kernel's tp_mac.
	rxMacOff = 82

	// txDataOff is where a TX ring frame's bytes start within its slot:
	// TPACKET3_HDRLEN - sizeof(struct sockaddr_ll) = 68 - 20.
	txDataOff = 48

	// v3Align is the alignment of packets within a V3 block (V3_ALIGNMENT
	// in af_packet.c): tp_next_offset is a multiple of it.
	v3Align = 8
)

const (
	statusKernel      = unix.TP_STATUS_KERNEL       // 0
	statusUser        = unix.TP_STATUS_USER         // 1
	statusSendRequest = unix.TP_STATUS_SEND_REQUEST // 1
	statusSending     = unix.TP_STATUS_SENDING      // 2
)

// pktSpinLimit bounds how long next waits for the kernel to finish copying a
// packet it has already counted in an open block.
const pktSpinLimit = 50 * time.Microsecond

// rxRing reads frames from a TPACKET_V3 receive ring: mem is the mmap'd ring
// of nBlocks blocks of blockSize bytes (or, in tests, ordinary memory laid
// out the same way). It is used by one goroutine at a time.
//
// Block hand-off. The reader owns no block until the kernel sets
// block_status to TP_STATUS_USER (documented ABI); it gives a block back by
// storing TP_STATUS_KERNEL. In open-block mode it also reads the block the
// kernel is still filling (block_status TP_STATUS_KERNEL): num_pkts says how
// many packets the kernel has claimed, and each packet's tp_status gets
// TP_STATUS_USER after its bytes were copied (af_packet.c tpacket_rcv; not
// an ABI, x86-64 only, see doc.go).
type rxRing struct {
	mem       []byte
	blockSize int
	nBlocks   int
	v2        bool // TPACKET_V2 ring of nFrames slots of frameSize bytes
	frameSize int
	nFrames   int
	openBlock bool                // also read the block the kernel is filling
	macOff    int                 // frame offset from the packet header in an open block
	etherType uint16              // EtherType of accepted frames
	noCRC     bool                // deliver frames with a bad CRC
	auth      *auth.Authenticator // cluster key: open (verify and strip) every frame; nil: none

	blk       int    // current block index (V2: current slot)
	consumed  uint32 // packets of the current block already taken (delivered or dropped)
	off       int    // offset of the next packet in the current block; 0 = use offset_to_first_pkt
	delivered bool   // the current Recv call returned a view into the current block
	poisoned  bool   // the current block holds inconsistent offsets: skip its remaining packets
	pending   int    // finished blocks (V2: slots) before blk whose release waits for the next Recv call

	crcErrors        counter
	malformed        counter
	authFailures     counter
	foreignPartition counter
}

// word returns a pointer to the u32 at mem[off]; off+4 <= len(mem) and
// off%4 == 0 must hold (the callers check).
func (r *rxRing) word(off int) *uint32 {
	return (*uint32)(unsafe.Pointer(&r.mem[off]))
}

func (r *rxRing) load(off int) uint32 { return atomic.LoadUint32(r.word(off)) }

// begin starts a Recv call: the views returned by the previous call are dead
// now, so the blocks finished during it are given back to the kernel.
func (r *rxRing) begin() {
	if r.v2 {
		for ; r.pending > 0; r.pending-- {
			i := r.blk - r.pending
			if i < 0 {
				i += r.nFrames
			}
			atomic.StoreUint32(r.word(i*r.frameSize+p2Status), statusKernel)
		}
		return
	}
	for r.pending > 0 {
		b := r.blk - r.pending
		if b < 0 {
			b += r.nBlocks
		}
		r.release(b, false)
		r.pending--
	}
	r.delivered = false
}

// release zeroes what the kernel wrote into block b in this lap (so that no
// stale tp_status word can look valid in the next lap, when packets sit at
// other offsets) and gives the block back to the kernel. whole zeroes the
// whole block, for blocks whose blk_len cannot be trusted.
func (r *rxRing) release(b int, whole bool) {
	base := b * r.blockSize
	end := r.blockSize
	if !whole {
		if n := int(r.load(base + bdBlkLen)); n >= bdSize && n <= r.blockSize {
			end = n
		}
	}
	clear(r.mem[base+bdSize : base+end])
	atomic.StoreUint32(r.word(base+bdNumPkts), 0)
	atomic.StoreUint32(r.word(base+bdBlkLen), 0)
	// Publish last: the kernel reads block_status before it reuses the block.
	atomic.StoreUint32(r.word(base+bdBlockStatus), statusKernel)
}

// finish moves past the current block, which the kernel has closed and the
// reader has fully read. It reports false if no further block may be read
// in this Recv call (all others wait for release).
func (r *rxRing) finish() bool {
	if r.delivered || r.pending > 0 {
		if r.poisoned {
			// Its blk_len may be wrong: make the deferred release
			// zero the whole block. The block is ours until released.
			atomic.StoreUint32(r.word(r.blk*r.blockSize+bdBlkLen), uint32(r.blockSize))
		}
		r.pending++
	} else {
		r.release(r.blk, r.poisoned)
	}
	r.blk++
	if r.blk == r.nBlocks {
		r.blk = 0
	}
	r.consumed, r.off, r.delivered, r.poisoned = 0, 0, false, false
	return r.pending < r.nBlocks-1
}

// poison marks the current block as inconsistent: its remaining packets are
// skipped (counted once as malformed) when the kernel closes it.
func (r *rxRing) poison() {
	if !r.poisoned {
		r.poisoned = true
		r.malformed.add(1)
	}
}

// idle reports, with a few loads, that next would find nothing now: the
// current block (V2: slot) holds no packet the reader has not taken and is
// not closed, and (V3) no block waits for release. It then starts the call
// as Recv would (begin: a V2 ring gives back the slots of the previous
// call, which any number of frames may have left pending). A polling
// receiver calls it on every turn, so it is the cost of an empty poll: it
// reads num_pkts before block_status (a packet counted after the first
// load is found by the next call; a block closed in between is left to
// next).
func (r *rxRing) idle() bool {
	if !r.quiet() {
		return false
	}
	r.begin()
	return true
}

// quiet is idle without its stores: it only reads the reader's state and
// the ring (Link.RecvIdle). A V2 slot that the previous call handed out
// (pending) does not make a frame readable: after every frame that call
// read, quiet is true as soon as the next slot is empty, as it is for an
// open block, and the slots go back with the next Recv.
func (r *rxRing) quiet() bool {
	if r.v2 {
		return r.load(r.blk*r.frameSize+p2Status)&statusUser == 0
	}
	if r.pending != 0 || r.poisoned {
		return false
	}
	base := r.blk * r.blockSize
	if r.openBlock && r.load(base+bdNumPkts) > r.consumed {
		return false
	}
	return r.load(base+bdBlockStatus)&statusUser == 0
}

// busy reports whether the current block holds a packet the kernel has
// claimed but the reader has not taken yet, or has been closed: a frame may
// become readable within microseconds.
func (r *rxRing) busy() bool {
	if r.v2 {
		return r.load(r.blk*r.frameSize+p2Status)&statusUser != 0
	}
	base := r.blk * r.blockSize
	if r.load(base+bdBlockStatus)&statusUser != 0 {
		return true
	}
	return r.openBlock && !r.poisoned && r.load(base+bdNumPkts) > r.consumed
}

// ready reports whether the ring holds a packet the reader has not taken:
// in the current block, or, once that block is closed and read to its end,
// in the next one. Unlike busy it does not count a closed block that has
// been read completely (its retire timer closes it after the reader took
// its last packet), so it suits a readiness test (MultiWait.Wait with no
// frames). A packet it reports may still be in the kernel's copy.
func (r *rxRing) ready() bool {
	if r.v2 {
		return r.busy()
	}
	base := r.blk * r.blockSize
	closed := r.load(base+bdBlockStatus)&statusUser != 0
	if !r.poisoned && r.load(base+bdNumPkts) > r.consumed {
		return closed || r.openBlock
	}
	if !closed || r.pending >= r.nBlocks-1 {
		return false // (with every other block ours, the kernel has none to fill)
	}
	// The current block is done: the next one holds packets if the kernel
	// closed it (it never closes an empty block) or, in open-block mode,
	// has put a packet in it.
	nb := r.blk + 1
	if nb == r.nBlocks {
		nb = 0
	}
	base = nb * r.blockSize
	return r.load(base+bdBlockStatus)&statusUser != 0 || r.openBlock && r.load(base+bdNumPkts) > 0
}

// next returns the next valid frame, a view into the ring, or nil if none
// is available now. Invalid frames are counted and skipped.
func (r *rxRing) next() []byte {
	if r.v2 {
		return r.nextV2()
	}
	for {
		base := r.blk * r.blockSize
		closed := r.load(base+bdBlockStatus)&statusUser != 0
		if !closed && !r.openBlock {
			return nil
		}
		// On a closed block num_pkts is final. On an open one it may grow;
		// it is loaded after block_status, so a block seen open may have
		// been closed since, which only means fewer guarantees are used.
		np := r.load(base + bdNumPkts)
		if r.poisoned || r.consumed >= np {
			if !closed {
				return nil
			}
			if !r.finish() {
				return nil
			}
			continue
		}
		if r.off == 0 {
			r.off = int(r.load(base + bdFirstPkt))
			if r.off == 0 && !closed {
				return nil // the kernel is opening the block right now
			}
		}
		if r.off < bdSize || r.off%v3Align != 0 || r.off+p3Size > r.blockSize {
			r.poison()
			continue
		}
		p := base + r.off
		if r.load(p+p3Status)&statusUser == 0 {
			if closed || !r.waitPacket(p) {
				if closed {
					r.poison() // every packet of a closed block is complete
					continue
				}
				return nil
			}
		}
		frame, ok := r.take(base, p, closed)
		if !ok {
			continue
		}
		r.delivered = true
		return frame
	}
}

// waitPacket spins until the packet at p has TP_STATUS_USER (its copy is
// complete), for at most pktSpinLimit.
func (r *rxRing) waitPacket(p int) bool {
	var start time.Time
	for i := 0; ; i++ {
		if r.load(p+p3Status)&statusUser != 0 {
			return true
		}
		if i&63 == 63 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > pktSpinLimit {
				return false
			}
		}
	}
}

// take consumes the packet at ring offset p (block at base) and returns its
// frame if it is a valid EtherGM frame. In a closed block the kernel's
// tp_mac and tp_snaplen are used; in an open block they may not be written
// yet, so the frame starts at macOff and its length comes from its own
// EtherGM header, bounded by the next packet's position.
func (r *rxRing) take(base, p int, closed bool) ([]byte, bool) {
	blockEnd := base + r.blockSize
	next := int(r.load(p + p3NextOffset))
	r.consumed++
	end := blockEnd // bound of this packet's bytes
	switch {
	case next == 0:
		// Last packet of a block that is (being) closed.
		r.off = r.blockSize
	case next < p3Size || next%v3Align != 0 || p+next > blockEnd:
		r.poison()
		return nil, false
	default:
		end = p + next
		r.off += next
	}
	var start, stop int
	if closed {
		mac := int(*(*uint16)(unsafe.Pointer(&r.mem[p+p3Mac])))
		snap := int(r.load(p + p3Snaplen))
		start, stop = p+mac, p+mac+snap
		if mac < p3Size || snap < 0 || stop > end {
			r.malformed.add(1)
			return nil, false
		}
	} else {
		start, stop = p+r.macOff, end
		if start > stop {
			r.malformed.add(1)
			return nil, false
		}
	}
	return r.check(r.mem[start:stop:stop])
}

// check returns the EtherGM frame at the start of region if it is valid,
// counting it as malformed or as a CRC error otherwise.
func (r *rxRing) check(region []byte) ([]byte, bool) {
	n := wire.FrameLen(region)
	if n < 0 || n > len(region) {
		r.malformed.add(1)
		return nil, false
	}
	frame := region[:n:n]
	h, err := wire.ParseFrame(frame, r.etherType)
	if err != nil {
		r.malformed.add(1)
		return nil, false
	}
	if r.auth != nil {
		// The tag covers every byte the CRC covers, so a frame whose tag
		// verifies needs no CRC check; the CRC only tells a corrupted
		// frame (a CRC error, as without a key) from a forged one. The
		// trailer follows the declared length, outside the view.
		switch err := r.auth.Open(region, n); err {
		case nil:
			return region[:n:n], true
		case auth.ErrPartition:
			r.foreignPartition.add(1)
		default:
			if !r.noCRC && !h.CheckCRC() {
				r.crcErrors.add(1)
			} else {
				r.authFailures.add(1)
			}
		}
		return nil, false
	}
	if !r.noCRC && !h.CheckCRC() {
		r.crcErrors.add(1)
		return nil, false
	}
	return frame, true
}

// nextV2 is next for a TPACKET_V2 ring: slot tp_status is the documented
// per-frame hand-off, set by the kernel after the frame and every header
// field were written. Slots are given back (TP_STATUS_KERNEL) by the next
// Recv call, as views into them may be live until then.
func (r *rxRing) nextV2() []byte {
	for r.pending < r.nFrames-1 {
		p := r.blk * r.frameSize
		if r.load(p+p2Status)&statusUser == 0 {
			return nil
		}
		r.pending++
		r.blk++
		if r.blk == r.nFrames {
			r.blk = 0
		}
		mac := int(*(*uint16)(unsafe.Pointer(&r.mem[p+p2Mac])))
		snap := int(r.load(p + p2Snaplen))
		if mac < p2Size || mac+snap > r.frameSize {
			r.malformed.add(1)
			continue
		}
		if f, ok := r.check(r.mem[p+mac : p+mac+snap : p+mac+snap]); ok {
			return f
		}
	}
	return nil
}

// txRing is a TPACKET_V3 transmit ring: fixed slots of frameSize bytes, the
// frame at txDataOff in each (after a virtio_net_hdr of vnet bytes, if the
// socket has PACKET_VNET_HDR). The kernel takes slots in ring order, so the
// writer fills them in the same order and reuses a slot only when the kernel
// has marked it available again.
type txRing struct {
	mem       []byte
	frameSize int
	nFrames   int
	vnet      int // 0, or vnetHdrLen: each frame follows a virtio_net_hdr
	head      int // next slot to fill
	queued    int // slots marked SEND_REQUEST since the last kick
}

// vnetHdrLen is the size of struct virtio_net_hdr, which precedes every
// frame of a ring whose socket has PACKET_VNET_HDR. Its hdr_len field
// (bytes 2-3, little endian) tells the kernel how many of the frame's
// first bytes to copy into the socket buffer's linear area; the rest stay
// in the ring's pages as fragments, which a veth device copies again,
// into a page it allocates per frame (skb_copy_ubufs). A frame of up to
// vnetLinearMax bytes, every frame of a jumbo MTU, is copied whole: one
// copy into one allocation instead of a page allocation and two copies,
// which streams faster at MTU 1500 and 9000 alike. A longer frame
// (the loopback interface's 64 KiB MTU) keeps its fragments (hdr_len 0:
// the kernel copies the Ethernet header only).
const (
	vnetHdrLen    = 10
	vnetLinearMax = 16384
)

func (t *txRing) status(i int) *uint32 {
	return (*uint32)(unsafe.Pointer(&t.mem[i*t.frameSize+p3Status]))
}

// free reports whether slot i may be filled: the kernel is done with it
// (TP_STATUS_AVAILABLE, possibly with timestamp bits, or WRONG_FORMAT for a
// frame it rejected).
func (t *txRing) free(i int) bool {
	return atomic.LoadUint32(t.status(i))&(statusSendRequest|statusSending) == 0
}

// slot returns the data area of the head slot, or nil if it is still busy.
func (t *txRing) slot() []byte {
	if !t.free(t.head) {
		return nil
	}
	off := t.head * t.frameSize
	return t.mem[off+txDataOff+t.vnet : off+t.frameSize : off+t.frameSize]
}

// commit hands the head slot, holding an n-byte frame, to the kernel.
func (t *txRing) commit(n int) {
	off := t.head * t.frameSize
	if t.vnet > 0 {
		h := t.mem[off+txDataOff : off+txDataOff+vnetHdrLen]
		clear(h)
		if n <= vnetLinearMax {
			h[2], h[3] = byte(n), byte(n>>8) // hdr_len, little endian
		}
		n += vnetHdrLen
	}
	*(*uint32)(unsafe.Pointer(&t.mem[off+p3Len])) = uint32(n)
	// The store of tp_len is ordered before the status store (x86 TSO and
	// the sequentially consistent atomic store elsewhere).
	atomic.StoreUint32(t.status(t.head), statusSendRequest)
	t.head++
	if t.head == t.nFrames {
		t.head = 0
	}
	t.queued++
}
