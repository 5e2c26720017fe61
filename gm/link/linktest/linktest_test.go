package linktest

import (
	"errors"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm/link"
)

func frameTo(dst, src [6]byte, b byte) []byte {
	f := make([]byte, 20)
	copy(f, dst[:])
	copy(f[6:], src[:])
	f[19] = b
	return f
}

// TestHub: frames reach every other link with the destination MAC (and
// every other link for broadcast), in order; Drop loses frames on demand;
// Wait sleeps until a frame, Wake or Close; a link that is down neither
// sends nor receives.
func TestHub(t *testing.T) {
	h := NewHub()
	ma, mb := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	a := h.Open("a", ma, 0, nil)
	b1, b2 := h.Open("b1", mb, 0, nil), h.Open("b2", mb, 0, nil)
	fr := make([][]byte, 8)
	if err := a.Send(frameTo(mb, ma, 1)); err != nil {
		t.Fatal(err)
	}
	if n, err := a.SendBatch([][]byte{frameTo(mb, ma, 2), frameTo([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ma, 3)}); n != 2 || err != nil {
		t.Fatalf("SendBatch = %d, %v", n, err)
	}
	for _, l := range []*Link{b1, b2} {
		if n := l.Recv(fr); n != 3 || fr[0][19] != 1 || fr[1][19] != 2 || fr[2][19] != 3 {
			t.Fatalf("%s: %d frames", l.Name(), n)
		}
	}
	if n := a.Recv(fr); n != 0 || a.Stats().TxFrames != 3 {
		t.Fatalf("sender got %d of its own frames; counted %d sent", n, a.Stats().TxFrames)
	}
	s := b1.TxSlot()
	copy(s, frameTo(ma, mb, 4))
	if err := b1.TxCommit(20); err != nil {
		t.Fatal(err)
	}
	if n := a.Recv(fr); n != 0 {
		t.Fatal("committed frame sent before Flush")
	}
	if err := b1.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Wait(fr, time.Second); n != 1 || err != nil || fr[0][19] != 4 {
		t.Fatalf("Wait = %d, %v", n, err)
	}
	h.SetDrop(func(f []byte) bool { return f[19] == 5 })
	a.Send(frameTo(mb, ma, 5))
	a.Send(frameTo(mb, ma, 6))
	if n := b1.Recv(fr); n != 1 || fr[0][19] != 6 {
		t.Fatalf("after a drop: %d frames", n)
	}
	if n, err := b1.Wait(fr, time.Millisecond); n != 0 || err != nil {
		t.Fatalf("Wait with nothing: %d, %v", n, err)
	}
	go func() { time.Sleep(time.Millisecond); b1.Wake() }()
	if n, err := b1.Wait(fr, -1); n != 0 || err != nil {
		t.Fatalf("woken Wait: %d, %v", n, err)
	}
	b2.SetRunning(false)
	if err := b2.Send(frameTo(ma, mb, 7)); !errors.Is(err, link.ErrInterfaceDown) {
		t.Fatalf("send on a link that is down: %v", err)
	}
	go func() { time.Sleep(time.Millisecond); b1.Close() }()
	if _, err := b1.Wait(fr, -1); !errors.Is(err, link.ErrClosed) {
		t.Fatalf("Wait on a closed link: %v", err)
	}
	if err := b1.Send(frameTo(ma, mb, 8)); !errors.Is(err, link.ErrClosed) {
		t.Fatalf("send on a closed link: %v", err)
	}
	if st := a.Stats(); st.TxFrames != 5 || st.RxFrames != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRxFrames: a Link reports no receive bound by default; SetRxFrames
// bounds its queue (frames beyond it are dropped and counted as kernel
// drops) and Geometry reports the bound.
func TestRxFrames(t *testing.T) {
	h := NewHub()
	ma, mb := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	a, b := h.Open("a", ma, 0, nil), h.Open("b", mb, 0, nil)
	if g := b.Geometry(); g.RxFrames != 0 || g.TxFrames != txSlots || g.ZeroCopyMin != link.DefaultZeroCopyMin {
		t.Fatalf("default geometry %+v", g)
	}
	b.SetRxFrames(2)
	if g := b.Geometry(); g.RxFrames != 2 {
		t.Fatalf("geometry %+v after SetRxFrames(2)", g)
	}
	for i := range 3 {
		a.Send(frameTo(mb, ma, byte(i)))
	}
	fr := make([][]byte, 8)
	if n := b.Recv(fr); n != 2 || fr[0][19] != 0 || fr[1][19] != 1 || b.Stats().KernelDrops != 1 {
		t.Fatalf("%d frames received, %d dropped", n, b.Stats().KernelDrops)
	}
	a.Send(frameTo(mb, ma, 3))
	if n := b.Recv(fr); n != 1 || fr[0][19] != 3 {
		t.Fatalf("after a Recv: %d frames", n)
	}
}
