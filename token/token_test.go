package token

import (
	"errors"
	"testing"
)

func TestSizeClasses(t *testing.T) {
	tests := []struct {
		size uint8
		max  int
	}{
		{0, 0}, {2, 0}, {3, 0}, {4, 8}, {5, 24}, {6, 56}, {7, 120}, {8, 248}, {9, 504},
		{10, 1016}, {11, 2040}, {12, 4088}, {13, 8184}, {14, 16376}, {15, 32760},
		{16, 65528}, {20, 1048568}, {24, 16777208}, {30, 1073741816}, {31, 2147483640},
		{32, 0},
	}
	for _, tt := range tests {
		if got := MaxLengthForSize(tt.size); got != tt.max {
			t.Errorf("MaxLengthForSize(%d) = %d, want %d", tt.size, got, tt.max)
		}
	}
	for n := 0; n < 1<<17; n++ {
		s := MinSizeForLength(n)
		if MaxLengthForSize(s) < n || (s > MinMessageSize && MaxLengthForSize(s-1) >= n) {
			t.Fatalf("MinSizeForLength(%d) = %d (max %d)", n, s, MaxLengthForSize(s))
		}
	}
	for s := uint8(MinMessageSize); s <= MaxSize; s++ {
		m := MaxLengthForSize(s)
		if MinSizeForLength(m) != s || MinSizeForLength(m+1) != s+1 {
			t.Errorf("size %d: MinSizeForLength(%d)=%d, (%d)=%d", s, m, MinSizeForLength(m), m+1, MinSizeForLength(m+1))
		}
	}
	if MinSizeForLength(0) != 3 || MinSizeForLength(-1) != 0 {
		t.Errorf("edge cases wrong")
	}
}

func TestCounter(t *testing.T) {
	c := NewCounter(DefaultSendTokens)
	for i := 0; i < DefaultSendTokens; i++ {
		if !c.TryAcquire() {
			t.Fatalf("acquire %d failed", i)
		}
	}
	if c.TryAcquire() || c.Free() != 0 || c.InUse() != 61 {
		t.Fatalf("over-acquire allowed: %+v", c)
	}
	for i := 0; i < DefaultSendTokens; i++ {
		if !c.Release() {
			t.Fatalf("release %d failed", i)
		}
	}
	if c.Release() || c.Free() != c.Total() {
		t.Fatalf("over-release allowed: %+v", c)
	}
}

func TestPoolsFIFOAndTokens(t *testing.T) {
	p := NewPools(4)
	bufs := make([][]byte, 5)
	for i := range bufs {
		bufs[i] = make([]byte, 8)
	}
	for i := 0; i < 3; i++ {
		if err := p.Provide(Buffer{Buf: bufs[i], Size: 5, Priority: 1, Tag: uint8(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Provide(Buffer{Buf: bufs[3], Size: 5, Priority: 0, Tag: 3}); err != nil {
		t.Fatal(err)
	}
	if err := p.Provide(Buffer{Buf: bufs[4], Size: 5}); !errors.Is(err, ErrNoReceiveToken) {
		t.Fatalf("5th provide: %v", err)
	}
	if _, ok := p.Take(1, 6); ok {
		t.Fatal("took a buffer of the wrong size")
	}
	i, ok := p.Take(1, 5)
	if !ok || p.Buffer(i).Tag != 0 {
		t.Fatalf("take: %v %v", ok, p.Buffer(i))
	}
	p.Return(i)
	i, _ = p.Take(1, 5)
	if p.Buffer(i).Tag != 0 {
		t.Fatalf("Return did not keep FIFO head")
	}
	if b := p.Release(i); b.Tag != 0 || p.Tokens().Free() != 1 {
		t.Fatalf("release: %+v free %d", b, p.Tokens().Free())
	}
	j, _ := p.Take(1, 5)
	k, _ := p.Take(1, 5)
	if p.Buffer(j).Tag != 1 || p.Buffer(k).Tag != 2 || p.Len(1, 5) != 0 || p.Len(0, 5) != 1 {
		t.Fatalf("FIFO order broken")
	}
	if err := p.Provide(Buffer{Size: 32}); !errors.Is(err, ErrBadSize) {
		t.Fatal(err)
	}
	if err := p.Provide(Buffer{Priority: 2}); !errors.Is(err, ErrBadPriority) {
		t.Fatal(err)
	}
}

func TestAcceptable(t *testing.T) {
	p := NewPools(1)
	if !p.Acceptable(0, 30) || !p.Acceptable(1, 3) {
		t.Fatal("default must accept all")
	}
	if err := p.SetAcceptable(1, 1<<30); err != nil {
		t.Fatal(err)
	}
	if p.Acceptable(1, 3) || !p.Acceptable(1, 30) || !p.Acceptable(0, 3) {
		t.Fatal("mask not applied per priority")
	}
	if p.SetAcceptable(2, 0) == nil {
		t.Fatal("bad priority accepted")
	}
}

func TestPoolsAllocs(t *testing.T) {
	p := NewPools(8)
	b := make([]byte, 64)
	n := testing.AllocsPerRun(100, func() {
		_ = p.Provide(Buffer{Buf: b, Size: 7})
		i, _ := p.Take(0, 7)
		p.Release(i)
	})
	if n != 0 {
		t.Fatalf("%v allocs", n)
	}
}
