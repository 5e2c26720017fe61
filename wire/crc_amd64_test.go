package wire

import (
	"hash/crc32"
	"testing"
)

// TestCastagnoliTwo checks the assembly itself (crc32cTwo skips it for long
// inputs), on whatever lengths it is given.
func TestCastagnoliTwo(t *testing.T) {
	if !haveSSE42 {
		t.Skip("no SSE4.2")
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	buf := make([]byte, 4096+16)
	for i := range buf {
		buf[i] = byte(i*7 + i>>8)
	}
	for _, na := range []int{0, 1, 7, 8, 31, 32, 33, 40, 64, 1000} {
		for _, nb := range []int{0, 1, 3, 8, 9, 63, 1460, 4000} {
			for off := 0; off < 3; off++ {
				a, b := buf[off:off+na], buf[off+na:][:min(nb, len(buf)-off-na)]
				want := crc32.Update(crc32.Checksum(a, tab), tab, b)
				if got := castagnoliTwo(a, b); got != want {
					t.Fatalf("%d+%d at %d: %08x, want %08x", na, len(b), off, got, want)
				}
			}
		}
	}
}
