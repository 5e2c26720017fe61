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

// TestCastagnoliFold checks the folding assembly against hash/crc32 for
// every length from foldMin to 2,100 bytes and long ones, at several
// alignments, from several initial values.
func TestCastagnoliFold(t *testing.T) {
	if !haveFold {
		t.Skip("no AVX2 and VPCLMULQDQ")
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	buf := make([]byte, 9300)
	for i := range buf {
		buf[i] = byte(i*131 + i>>7 + i>>13)
	}
	lens := []int{128, 129, 143, 144, 255}
	for n := foldMin; n <= 2100; n++ {
		lens = append(lens, n)
	}
	lens = append(lens, 4095, 4096, 8936, 9000, 9216, 9299)
	for i, n := range lens {
		off := i % 5
		p := buf[off:][:min(n, len(buf)-off)]
		for _, init := range []uint32{0, 0xffffffff, 0x12345678} {
			want := crc32.Update(init, tab, p)
			if got := castagnoliFold(init, p, foldK); got != want {
				t.Fatalf("%d bytes at %d from %08x: %08x, want %08x", len(p), off, init, got, want)
			}
		}
	}
}

// TestXPowMod checks the constants' arithmetic: x^32 mod P is P's low 32
// bits, and a product of powers adds exponents.
func TestXPowMod(t *testing.T) {
	if got := xPowMod(32); got != 0x1EDC6F41 {
		t.Fatalf("x^32 mod P = %08x", got)
	}
	if xPowMod(0) != 1 || xPowMod(31) != 1<<31 {
		t.Fatal("x^0 or x^31 wrong")
	}
	if rev64(1) != 1<<63 || rev64(1<<31) != 1<<32 {
		t.Fatal("rev64 places coefficients wrongly")
	}
}

// BenchmarkCRC compares the frame CRC of a full frame's payload at MTU 1500
// and 9000 through crc32cTwo (folding where the CPU has it) and hash/crc32.
func BenchmarkCRC(b *testing.B) {
	hdr := make([]byte, OffCRC)
	for _, n := range []int{128, 256, 456, 1456, 8956} {
		p := make([]byte, n)
		b.Run("two/"+itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32cTwo(hdr, p)
			}
		})
		b.Run("chain/"+itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				castagnoliTwo(hdr, p)
			}
		})
		b.Run("hash-crc32/"+itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32Update(crc32Update(0, hdr), p)
			}
		})
	}
}

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		if n /= 10; n == 0 {
			return s
		}
	}
}

// FuzzCRC32cTwo checks crc32cTwo (one chain, folding or hash/crc32 by
// length) against hash/crc32 for any header and payload.
func FuzzCRC32cTwo(f *testing.F) {
	f.Add(make([]byte, OffCRC), make([]byte, 1456))
	f.Add([]byte{1, 2, 3}, make([]byte, 300))
	tab := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := crc32.Update(crc32.Checksum(a, tab), tab, b)
		if got := crc32cTwo(a, b); got != want {
			t.Fatalf("%d+%d bytes: %08x, want %08x", len(a), len(b), got, want)
		}
	})
}
