package pattern

import (
	"bytes"
	"testing"
)

func TestFillDeterministicAndDistinct(t *testing.T) {
	keys := []Key{
		{Size: 10, Length: 1016, Seq: 0},
		{Size: 10, Length: 1016, Seq: 1},
		{Size: 11, Length: 1016, Seq: 0},
		{Size: 10, Length: 1015, Seq: 0},
		{Size: 10, Length: 1016, Seq: 0, Dir: Echo},
	}
	seen := map[string]Key{}
	for _, k := range keys {
		a, b := make([]byte, 1016), make([]byte, 1016)
		Fill(a, k)
		Fill(b, k)
		if !bytes.Equal(a, b) {
			t.Fatalf("%+v: two fills differ", k)
		}
		if prev, dup := seen[string(a[:64])]; dup {
			t.Fatalf("keys %+v and %+v give the same pattern", prev, k)
		}
		seen[string(a[:64])] = k
	}
}

func TestByteMatchesFill(t *testing.T) {
	k := Key{Size: 7, Length: 77, Seq: 5}
	b := make([]byte, 77)
	Fill(b, k)
	for off := range b {
		if Byte(k, off) != b[off] {
			t.Fatalf("Byte(%d) = %#x, Fill gave %#x", off, Byte(k, off), b[off])
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		length  int
		flip    []int // offsets to corrupt
		limit   int
		wantBad int
		wantLen int
	}{
		{"empty", 0, nil, 3, 0, 0},
		{"one byte clean", 1, nil, 3, 0, 0},
		{"one byte bad", 1, []int{0}, 3, 1, 1},
		{"tail byte", 13, []int{12}, 3, 1, 1},
		{"word and tail", 13, []int{2, 3, 12}, 3, 3, 3},
		{"limit", 4096, []int{0, 8, 100, 4000, 4095}, 2, 5, 2},
		{"no list", 100, []int{50}, 0, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := Key{Size: 13, Length: tc.length, Seq: 42}
			b := make([]byte, tc.length)
			Fill(b, k)
			want := bytes.Clone(b)
			for _, o := range tc.flip {
				b[o] ^= 0x10
			}
			bad, ms := Check(b, k, nil, tc.limit)
			if bad != tc.wantBad || len(ms) != tc.wantLen {
				t.Fatalf("Check = %d, %v; want %d bad, %d listed", bad, ms, tc.wantBad, tc.wantLen)
			}
			for i, m := range ms {
				if m.Offset != tc.flip[i] || m.Want != want[m.Offset] || m.Got != b[m.Offset] {
					t.Fatalf("mismatch %d = %+v, want offset %d %#x/%#x", i, m, tc.flip[i], want[tc.flip[i]], b[tc.flip[i]])
				}
			}
		})
	}
}

func TestCheckWrongSeq(t *testing.T) {
	b := make([]byte, 256)
	Fill(b, Key{Size: 9, Length: 256, Seq: 1})
	if bad, _ := Check(b, Key{Size: 9, Length: 256, Seq: 2}, nil, 0); bad < 200 {
		t.Fatalf("a message of another sequence number differs in only %d bytes", bad)
	}
}

func TestCheckNoAlloc(t *testing.T) {
	b := make([]byte, 4096)
	k := Key{Size: 12, Length: 4096}
	Fill(b, k)
	dst := make([]Mismatch, 0, 4)
	if n := testing.AllocsPerRun(100, func() { Check(b, k, dst[:0], 4) }); n != 0 {
		t.Fatalf("Check allocates %v times", n)
	}
}

func BenchmarkFill(b *testing.B) {
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	for i := 0; b.Loop(); i++ {
		Fill(buf, Key{Size: 21, Length: len(buf), Seq: uint64(i)})
	}
}

func BenchmarkCheck(b *testing.B) {
	buf := make([]byte, 1<<20)
	k := Key{Size: 21, Length: len(buf)}
	Fill(buf, k)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		Check(buf, k, nil, 0)
	}
}
