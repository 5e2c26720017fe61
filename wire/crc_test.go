package wire

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestCRC32CTwo: crc32cTwo(a, b) is the CRC32C of a followed by b for
// every split, length (below and above crcShort's range) and alignment.
func TestCRC32CTwo(t *testing.T) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 2048)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	check := func(a, b []byte) {
		t.Helper()
		want := crc32.Update(crc32.Checksum(a, tab), tab, b)
		if got := crc32cTwo(a, b); got != want {
			t.Fatalf("len %d (offset %d) + %d: %08x, want %08x", len(a), cap(buf)-cap(a), len(b), got, want)
		}
	}
	for off := 0; off < 8; off++ {
		for na := 0; na <= 72; na++ {
			for nb := 0; nb <= 72; nb++ {
				a := buf[off : off+na]
				check(a, buf[off+na+off%3:][:nb])
			}
		}
	}
	for _, n := range []int{crcShort - 41, crcShort - 40, crcShort - 39, 1460, 1500 - HeaderLen, 8952} {
		check(buf[14:14+OffCRC], buf[14+HeaderLen:][:min(n, len(buf)-14-HeaderLen)])
	}
	// The frames' own layout: header bytes 0..39, then the payload after
	// the CRC field.
	frame := AppendFrame(nil, macB, macA, EtherType, &golden[0].f, []byte("pingpong"))
	h, err := ParseFrameCRC(frame, EtherType)
	if err != nil {
		t.Fatal(err)
	}
	b := h[HeaderLen : h.Len()+h.PayloadLen()]
	if c := crc32.Update(crc32.Checksum(h[:OffCRC], tab), tab, b); c != h.CRC() {
		t.Fatalf("frame CRC %08x, want %08x", h.CRC(), c)
	}
}
