package prefetch

import (
	"testing"
	"unsafe"
)

// TestLines checks that the loop asks for each cache line b spans once,
// for every length and alignment around a few lines (the first and last
// lines are partial ones), and leaves the bytes alone.
func TestLines(t *testing.T) {
	buf := make([]byte, 512)
	for i := range buf {
		buf[i] = byte(i)
	}
	for off := 0; off < 130; off++ {
		for n := 1; off+n <= len(buf); n++ {
			b := buf[off : off+n]
			first := uintptr(unsafe.Pointer(&b[0])) / lineSize
			last := uintptr(unsafe.Pointer(&b[n-1])) / lineSize
			if got, want := lines(unsafe.Pointer(&b[0]), n), int(last-first+1); got != want {
				t.Fatalf("offset %d, %d bytes: %d lines asked for, want %d", off, n, got, want)
			}
		}
	}
	Range(nil)
	Range(buf[:0])
	Range(buf)
	for i, v := range buf {
		if v != byte(i) {
			t.Fatalf("byte %d changed to %d", i, v)
		}
	}
}

func BenchmarkRange1500(b *testing.B) {
	buf := make([]byte, 1500)
	for b.Loop() {
		Range(buf)
	}
}
