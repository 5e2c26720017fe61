package capture

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/gm/link/linktest"
)

// addressed returns frame id of n bytes from src to dst.
func addressed(id uint32, n int, dst, src [6]byte) []byte {
	f := frame(id, n)
	copy(f[0:6], dst[:])
	copy(f[6:12], src[:])
	return f
}

// TestWrap: the decorator records every frame its endpoint sends (Send,
// SendOwned, SendBatch, frames built in transmit slots) and receives
// (Recv, RecvOwned, Wait), once each and in order, keeps the endpoint's
// capabilities, unwraps to it, and sleeps with it on several endpoints
// (link.NewWaiter looks through it).
func TestWrap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wrap.pcapng")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	hub := linktest.NewHub()
	ma, mb := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	inner := hub.Open("a", ma, 0, nil)
	a := w.Wrap(inner)
	b := hub.Open("b", mb, 0, nil)
	if a.Caps() != inner.Caps() || a.Unwrap() != link.Endpoint(inner) || a.Name() != "a" {
		t.Fatalf("decorator: caps %b (link %b), unwraps to %v", a.Caps(), inner.Caps(), a.Unwrap())
	}

	var want [][]byte
	send := func(id uint32) []byte {
		f := addressed(id, 60+int(id), mb, ma)
		want = append(want, f)
		return f
	}
	if err := a.Send(send(1)); err != nil {
		t.Fatal(err)
	}
	if err := a.SendOwned(send(2)); err != nil {
		t.Fatal(err)
	}
	if n, err := a.SendBatch([][]byte{send(3), send(4)}); n != 2 || err != nil {
		t.Fatalf("SendBatch = %d, %v", n, err)
	}
	slot := a.TxSlot()
	next, err := a.TxCommitNext(copy(slot, send(5)))
	if err != nil || next == nil {
		t.Fatalf("TxCommitNext = %v, %v", next, err)
	}
	if err := a.TxCommit(copy(next, send(6))); err != nil {
		t.Fatal(err)
	}
	if err := a.TxCommit(0); err != nil { // nothing lent: nothing recorded
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	fr := make([][]byte, 16)
	if n := b.Recv(fr); n != 6 {
		t.Fatalf("b received %d frames, want 6", n)
	}

	// Receiving: a Waiter over the decorator is the links' own (it reads
	// nothing, and reports a closed link), then Recv, RecvOwned and Wait
	// each record what they return.
	wt := link.NewWaiter(a)
	for id := uint32(7); id <= 9; id++ {
		f := addressed(id, 70, ma, mb)
		want = append(want, f)
		if err := b.Send(f); err != nil {
			t.Fatal(err)
		}
		if err := wt.Wait(-1); err != nil {
			t.Fatal(err)
		}
		var n int
		switch id {
		case 7:
			n = a.Recv(fr)
		case 8:
			n = a.RecvOwned(fr)
		case 9:
			n, err = a.Wait(fr, time.Second)
		}
		if n != 1 || err != nil || !bytes.Equal(fr[0], f) {
			t.Fatalf("frame %d: %d received, %v", id, n, err)
		}
	}
	b.Close()
	if err := link.NewWaiter(a, b).Wait(-1); !errors.Is(err, link.ErrClosed) {
		t.Fatalf("Waiter with a closed link: %v (the Waiter of the links themselves says so)", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, path)
	if len(recs) != len(want) {
		t.Fatalf("%d frames recorded, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if !bytes.Equal(r.data, want[i]) {
			t.Fatalf("record %d differs from frame %d", i, i+1)
		}
	}
}

// TestWrapNil: a nil Writer's Wrap returns the endpoint itself.
func TestWrapNil(t *testing.T) {
	var w *Writer
	l := linktest.NewHub().Open("a", [6]byte{2, 0, 0, 0, 0, 1}, 0, nil)
	if w.Wrap(l) != link.Endpoint(l) {
		t.Fatal("a nil Writer wrapped the endpoint")
	}
}
