//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
)

// fakeKernel writes packets into a ring the way tpacket_rcv does for
// TPACKET_V3 (num_pkts first, then the copy, then the USER bit).
type fakeKernel struct {
	mem       []byte
	blockSize int
	blk, off  int
	frameLen  int
}

func (k *fakeKernel) put32(off int, v uint32) { binary.NativeEndian.PutUint32(k.mem[off:], v) }
func (k *fakeKernel) get32(off int) uint32    { return binary.NativeEndian.Uint32(k.mem[off:]) }

// count reserves the next packet slot (step 1) and returns its offset.
func (k *fakeKernel) count() int {
	base := k.blk * k.blockSize
	if k.off == 0 {
		k.off = blockHdrLen
	}
	p := base + k.off
	k.put32(base+offNumPkts, k.get32(base+offNumPkts)+1)
	k.off += (rxMacOff + k.frameLen + 7) &^ 7
	k.put32(base+offBlkLen, uint32(k.off))
	return p
}

// fill copies frame into slot p and sets the USER bit (steps 2 and 3).
func (k *fakeKernel) fill(p int, frame []byte) {
	copy(k.mem[p+rxMacOff:], frame)
	k.put32(p+offPktStatus, 1)
}

// close retires the current block and moves to the next one.
func (k *fakeKernel) close() {
	base := k.blk * k.blockSize
	k.put32(base+offBlkStatus, 1)
	k.blk = (k.blk + 1) % (len(k.mem) / k.blockSize)
	k.off = 0
}

func testFrame(seq uint64) []byte {
	f := make([]byte, ethHdrLen+64)
	buildFrame(f, [6]byte{2, 0, 0, 0, 0, 2}, net.HardwareAddr{2, 0, 0, 0, 0, 1}, kindPing, seq)
	return f
}

func TestRxRingOpenBlock(t *testing.T) {
	const bs, blocks = 4096, 2
	mem := make([]byte, bs*blocks)
	k := &fakeKernel{mem: mem, blockSize: bs, frameLen: ethHdrLen + 64}
	r := newRxRing(mem, bs, blocks, ethHdrLen+64)

	if f := r.next(); f != nil {
		t.Fatal("frame from an empty ring")
	}
	// Counted but not copied yet: not visible.
	p := k.count()
	if f := r.next(); f != nil {
		t.Fatal("frame visible before its USER bit")
	}
	k.fill(p, testFrame(1))
	f := r.next()
	if f == nil || !bytes.Equal(f, testFrame(1)) {
		t.Fatalf("next = %x", f)
	}
	if f := r.next(); f != nil {
		t.Fatal("frame read twice")
	}
	// Two more in the open block, then the block is closed and the next
	// one gets a frame.
	for seq := uint64(2); seq <= 3; seq++ {
		k.fill(k.count(), testFrame(seq))
	}
	k.close()
	k.fill(k.count(), testFrame(4))
	for seq := uint64(2); seq <= 4; seq++ {
		f := r.next()
		if _, got, ok := parse(f); !ok || got != seq {
			t.Fatalf("frame %d: got seq %d ok %v", seq, got, ok)
		}
	}
	// The first block went back to the kernel, zeroed.
	if k.get32(offBlkStatus) != 0 || k.get32(offNumPkts) != 0 || k.get32(blockHdrLen+offPktStatus) != 0 {
		t.Error("released block not zeroed")
	}
	if !bytes.Equal(mem[blockHdrLen:bs], make([]byte, bs-blockHdrLen)) {
		t.Error("released block still holds packet bytes")
	}
	// Second lap over block 0: stale data must not be seen.
	k.close()
	p = k.count()
	if f := r.next(); f != nil {
		t.Fatal("stale frame on the second lap")
	}
	k.fill(p, testFrame(5))
	if _, got, _ := parse(r.next()); got != 5 {
		t.Fatalf("second lap: seq %d", got)
	}
}

func TestTxRingSlots(t *testing.T) {
	mem := make([]byte, 2*txFrameSize)
	tx := newTxRing(mem, txFrameSize, false)
	for i := range 2 {
		s, err := tx.slot()
		if err != nil || s == nil {
			t.Fatalf("slot %d: %v %v", i, s, err)
		}
		tx.commit(100)
	}
	if s, err := tx.slot(); s != nil || err != nil {
		t.Fatal("slot from a full ring")
	}
	if tx.idle() {
		t.Fatal("idle with pending frames")
	}
	binary.NativeEndian.PutUint32(mem[offPktStatus:], 0)
	binary.NativeEndian.PutUint32(mem[txFrameSize+offPktStatus:], 0)
	if !tx.idle() {
		t.Fatal("not idle after the kernel released every slot")
	}
	if got := binary.NativeEndian.Uint32(mem[offPktLen:]); got != 100 {
		t.Errorf("tp_len = %d", got)
	}
	binary.NativeEndian.PutUint32(mem[offPktStatus:], 4)
	if _, err := tx.slot(); err == nil {
		t.Error("no error for TP_STATUS_WRONG_FORMAT")
	}
}

// TestTxRingVnet checks the PACKET_VNET_HDR layout: each frame follows a
// virtio_net_hdr whose hdr_len is the frame's length up to vnetLinearMax
// bytes (0 beyond), and tp_len counts the header.
func TestTxRingVnet(t *testing.T) {
	const slot = 32768
	mem := make([]byte, 3*slot)
	tx := newTxRing(mem, slot, true)
	for i, n := range []int{1514, 9014, 20014} {
		s, err := tx.slot()
		if err != nil || s == nil {
			t.Fatalf("slot %d: %v %v", i, s, err)
		}
		base := i * slot
		if &s[0] != &mem[base+txDataOff+vnetHdrLen] {
			t.Fatalf("frame %d does not follow the virtio_net_hdr", i)
		}
		for j := range vnetHdrLen {
			mem[base+txDataOff+j] = 0xff // the commit must clear it
		}
		tx.commit(n)
		want := uint16(n) // 1514 and 9014: every jumbo frame whole
		if i == 2 {
			want = 0 // 20014 > vnetLinearMax
		}
		h := mem[base+txDataOff : base+txDataOff+vnetHdrLen]
		if got := binary.LittleEndian.Uint16(h[2:]); got != want {
			t.Errorf("frame of %d bytes: hdr_len %d, want %d", n, got, want)
		}
		if h[0] != 0 || h[1] != 0 || !bytes.Equal(h[4:], make([]byte, vnetHdrLen-4)) {
			t.Errorf("frame of %d bytes: virtio_net_hdr % x, want zero but hdr_len", n, h)
		}
		if got := binary.NativeEndian.Uint32(mem[base+offPktLen:]); got != uint32(n+vnetHdrLen) {
			t.Errorf("frame of %d bytes: tp_len %d, want %d", n, got, n+vnetHdrLen)
		}
	}
	if got := txSlotFor(2048-txDataOff, true); got != 4096 {
		t.Errorf("txSlotFor with a header = %d, want 4096", got)
	}
}
