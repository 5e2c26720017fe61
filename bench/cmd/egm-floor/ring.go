//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Layout constants of TPACKET_V3 (linux/if_packet.h) for SOCK_RAW on
// Ethernet without PACKET_RESERVE.
const (
	blockHdrLen   = 48   // ALIGN(sizeof(tpacket_block_desc), 8): offset of the first packet
	offBlkStatus  = 8    // tpacket_block_desc.hdr.bh1.block_status
	offNumPkts    = 12   // .num_pkts
	offBlkLen     = 20   // .blk_len
	offPktStatus  = 20   // tpacket3_hdr.tp_status
	offPktLen     = 16   // tpacket3_hdr.tp_len (TX)
	offPktSnaplen = 12   // tpacket3_hdr.tp_snaplen (TX)
	rxMacOff      = 82   // TPACKET_ALIGN(TPACKET3_HDRLEN + 16) - 14, as the kernel reports in tp_mac
	txDataOff     = 48   // TPACKET3_HDRLEN - sizeof(sockaddr_ll)
	txFrameSize   = 2048 // TX slot (and RX ring frame_size) for frames up to MTU 1500
	maxTxSlot     = 16384
)

// vnetHdrLen is the size of struct virtio_net_hdr, which precedes every
// frame of a TX ring whose socket has PACKET_VNET_HDR (and every frame
// given to send(2) on it). Its hdr_len field (bytes 2-3, little endian)
// tells the kernel how many of the frame's first bytes to copy into the
// socket buffer's linear area. vnetLinearMax is the longest frame copied
// whole: gm/link's rule, so that the floor uses the kernel path the link
// does.
const (
	vnetHdrLen    = 10
	vnetLinearMax = 16384
)

// txSlotFor returns the TX ring slot size for frames of frameLen bytes
// (after a virtio_net_hdr if vnet): txFrameSize for standard frames, the
// next power of two for jumbo ones.
func txSlotFor(frameLen int, vnet bool) int {
	if vnet {
		frameLen += vnetHdrLen
	}
	n := txFrameSize
	for n < txDataOff+frameLen {
		n *= 2
	}
	return n
}

var errOpenBlockArch = errors.New("the open-block reader needs x86-64 (total store order)")

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// sock is one AF_PACKET socket with its mapped ring(s).
type sock struct {
	fd  int
	mac net.HardwareAddr
	mem []byte
}

// open creates an AF_PACKET SOCK_RAW socket on ifname, sets TPACKET_V3,
// creates the ring(s) asked for, maps them and only then binds the socket to
// etherType, so no frame is queued outside the ring. rx (block size and
// count, retire timeout in ms) or tx (frame count, of txSlot bytes each)
// may be zero. vnet sets PACKET_VNET_HDR (before the TX ring, as the
// kernel requires): every frame sent then follows a virtio_net_hdr.
func open(ifname string, etherType uint16, rxBlockSize, rxBlocks, tovMs, txFrames, txSlot int, bypass, vnet bool) (*sock, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	s := &sock{fd: fd, mac: ifi.HardwareAddr}
	fail := func(op string, err error) (*sock, error) {
		s.close()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fail("PACKET_VERSION", err)
	}
	if bypass {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return fail("PACKET_QDISC_BYPASS", err)
		}
	}
	if vnet {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return fail("PACKET_VNET_HDR", err)
		}
	}
	size := 0
	if rxBlocks > 0 {
		req := unix.TpacketReq3{
			Block_size:     uint32(rxBlockSize),
			Block_nr:       uint32(rxBlocks),
			Frame_size:     txFrameSize,
			Frame_nr:       uint32(rxBlockSize / txFrameSize * rxBlocks),
			Retire_blk_tov: uint32(tovMs),
		}
		if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
			return fail("PACKET_RX_RING", err)
		}
		size += rxBlockSize * rxBlocks
	}
	if txFrames > 0 {
		const perBlock = 32
		blocks := (txFrames + perBlock - 1) / perBlock
		req := unix.TpacketReq3{
			Block_size: uint32(txSlot * perBlock),
			Block_nr:   uint32(blocks),
			Frame_size: uint32(txSlot),
			Frame_nr:   uint32(blocks * perBlock),
		}
		if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
			return fail("PACKET_TX_RING", err)
		}
		size += txSlot * perBlock * blocks
	}
	if size > 0 {
		mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fail("mmap", err)
		}
		s.mem = mem
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(etherType), Ifindex: ifi.Index}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	return s, nil
}

func (s *sock) close() {
	if s.mem != nil {
		_ = unix.Munmap(s.mem)
		s.mem = nil
	}
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
		s.fd = -1
	}
}

// send transmits one frame with send(2), non-blocking and as a raw system
// call, as the link sends (gm/link's rawSendto: the runtime's
// entersyscall and exitsyscall cost about 0.1 us, and during a long kick
// its monitor hands the P to another thread).
func (s *sock) send(frame []byte) error {
	for {
		err := rawSend(s.fd, unsafe.Pointer(&frame[0]), len(frame))
		if err == unix.EINTR || err == unix.EAGAIN || err == unix.ENOBUFS {
			continue
		}
		return err
	}
}

// rawSend is send(2) with MSG_DONTWAIT as a raw system call (it never
// sleeps).
func rawSend(fd int, p unsafe.Pointer, n int) error {
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(p), uintptr(n), unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// drops returns the kernel's PACKET_STATISTICS drop counter (and resets it).
func (s *sock) drops() uint64 {
	st, err := unix.GetsockoptTpacketStatsV3(s.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0
	}
	return uint64(st.Drops)
}

// rxRing reads a TPACKET_V3 RX ring while its blocks are still open. It
// only works for streams of frames that all have the same length frameLen,
// because the packet stride is computed from it (tp_next_offset, tp_len and
// tp_snaplen are not reliable before the kernel closes the block).
type rxRing struct {
	mem       []byte
	blockSize int
	blocks    int
	frameLen  int
	stride    int
	cur       int // block being read
	k         uint32
	off       int // offset of the next packet in the current block
}

func newRxRing(mem []byte, blockSize, blocks, frameLen int) *rxRing {
	return &rxRing{
		mem:       mem[:blockSize*blocks],
		blockSize: blockSize,
		blocks:    blocks,
		frameLen:  frameLen,
		stride:    (rxMacOff + frameLen + 7) &^ 7, // TOTAL_PKT_LEN_INCL_ALIGN
		off:       blockHdrLen,
	}
}

func (r *rxRing) word(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

// next returns the next received frame, or nil if none is complete yet. The
// view is valid until the following call.
func (r *rxRing) next() []byte {
	for {
		base := r.cur * r.blockSize
		if r.k < atomic.LoadUint32(r.word(base+offNumPkts)) {
			ph := base + r.off
			if atomic.LoadUint32(r.word(ph+offPktStatus))&unix.TP_STATUS_USER == 0 {
				return nil // counted, copy still running
			}
			r.k++
			r.off += r.stride
			return r.mem[ph+rxMacOff : ph+rxMacOff+r.frameLen]
		}
		if atomic.LoadUint32(r.word(base+offBlkStatus))&unix.TP_STATUS_USER == 0 {
			return nil // block open, nothing new
		}
		// Closed by the kernel: num_pkts is final now.
		if r.k < atomic.LoadUint32(r.word(base+offNumPkts)) {
			continue
		}
		r.release(base)
	}
}

// release zeroes the used part of the current block (so that stale
// num_pkts and tp_status words from this lap cannot look valid on the next
// one), hands it back to the kernel and moves to the next block.
func (r *rxRing) release(base int) {
	used := int(atomic.LoadUint32(r.word(base + offBlkLen)))
	used = min(max(used, r.off), r.blockSize)
	clear(r.mem[base+offNumPkts : base+used])
	atomic.StoreUint32(r.word(base+offBlkStatus), unix.TP_STATUS_KERNEL)
	r.cur = (r.cur + 1) % r.blocks
	r.k = 0
	r.off = blockHdrLen
}

// txRing fills the slots of a TPACKET_V3 TX ring (fixed-size slots of
// slotSize bytes).
type txRing struct {
	mem      []byte
	slotSize int
	frames   int
	next     int
	vnet     int // 0, or vnetHdrLen: each frame follows a virtio_net_hdr
}

func newTxRing(mem []byte, slotSize int, vnet bool) *txRing {
	t := &txRing{mem: mem, slotSize: slotSize, frames: len(mem) / slotSize}
	if vnet {
		t.vnet = vnetHdrLen
	}
	return t
}

// vnetHeader writes the virtio_net_hdr of an n-byte frame into h: zero,
// but for hdr_len (the whole frame if it is at most vnetLinearMax bytes).
func vnetHeader(h []byte, n int) {
	clear(h[:vnetHdrLen])
	if n <= vnetLinearMax {
		h[2], h[3] = byte(n), byte(n>>8)
	}
}

func (t *txRing) word(off int) *uint32 { return (*uint32)(unsafe.Pointer(&t.mem[off])) }

// slot returns the data area of the next free slot, or nil if the ring is
// full (the kernel still owns the slot).
func (t *txRing) slot() ([]byte, error) {
	base := t.next * t.slotSize
	st := atomic.LoadUint32(t.word(base + offPktStatus))
	if st&unix.TP_STATUS_WRONG_FORMAT != 0 {
		return nil, errors.New("TX ring: frame rejected (TP_STATUS_WRONG_FORMAT)")
	}
	if st&(unix.TP_STATUS_SEND_REQUEST|unix.TP_STATUS_SENDING) != 0 {
		return nil, nil
	}
	return t.mem[base+txDataOff+t.vnet : base+t.slotSize], nil
}

// commit hands the current slot, holding n frame bytes, to the kernel.
func (t *txRing) commit(n int) {
	base := t.next * t.slotSize
	if t.vnet > 0 {
		vnetHeader(t.mem[base+txDataOff:], n)
		n += t.vnet
	}
	*t.word(base + offPktLen) = uint32(n)
	*t.word(base + offPktSnaplen) = uint32(n)
	atomic.StoreUint32(t.word(base+offPktStatus), unix.TP_STATUS_SEND_REQUEST)
	t.next = (t.next + 1) % t.frames
}

// idle reports whether the kernel has finished with every slot.
func (t *txRing) idle() bool {
	for i := range t.frames {
		if atomic.LoadUint32(t.word(i*t.slotSize+offPktStatus))&(unix.TP_STATUS_SEND_REQUEST|unix.TP_STATUS_SENDING) != 0 {
			return false
		}
	}
	return true
}

// kick asks the kernel to transmit every slot marked SEND_REQUEST.
func (s *sock) kick() error {
	for {
		err := rawSend(s.fd, nil, 0)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.ENOBUFS:
			return nil // slots stay pending; the next kick retries them
		}
		return err
	}
}
