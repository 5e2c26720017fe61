package link

import (
	"testing"
	"time"
)

// TestIntegrationRecvIdleOwned: frames sent with Send and SendOwned
// arrive alike; RecvIdle is true on an empty ring and false
// once a frame arrived, and stays false until RecvOwned has taken the
// frame and given its block back (the next RecvOwned); RecvOwned returns
// the frames in order, as Recv does; on a closed Link RecvIdle is true and
// RecvOwned returns 0, and SendOwned fails with ErrClosed.
func TestIntegrationRecvIdleOwned(t *testing.T) {
	a, b, _ := pair(t, nil, nil)
	frames := make([][]byte, 16)
	buf := make([]byte, 0, 2048)
	for b.RecvOwned(frames) > 0 { // anything the kernel sent at start-up
	}
	if b.RecvOwned(frames) != 0 || !b.RecvIdle() {
		t.Fatalf("an empty ring: RecvIdle %v", b.RecvIdle())
	}
	for round := uint64(1); round <= 40; round++ {
		const per = 3
		for i := uint64(0); i < per; i++ {
			send := a.Send
			if (round+i)%2 == 0 {
				send = a.SendOwned
			}
			if err := send(testFrame(buf, mac6(b.HardwareAddr()), mac6(a.HardwareAddr()), 2, round*per+i, 64)); err != nil {
				t.Fatal(err)
			}
		}
		var got []uint64
		for end := time.Now().Add(2 * time.Second); len(got) < per; {
			if time.Now().After(end) {
				t.Fatalf("round %d: got %v; stats %+v", round, got, b.Stats())
			}
			if b.RecvIdle() {
				continue
			}
			n := b.RecvOwned(frames)
			for _, f := range frames[:n] {
				got = append(got, frameSeq(f))
			}
		}
		for i, s := range got {
			if s != round*per+uint64(i) {
				t.Fatalf("round %d: frames %v", round, got)
			}
		}
		// The views of the last call are given back by the next one;
		// afterwards the ring is idle again (a block the kernel closed
		// meanwhile may take one more call). The kernel's retire timer
		// may close the read block at any moment, so idleness is judged
		// by the check that ends the loop, not by a second one after it.
		idle := false
		for i := 0; ; i++ {
			if idle = b.RecvIdle(); idle || i == 3 {
				break
			}
			if n := b.RecvOwned(frames); n != 0 {
				t.Fatalf("round %d: %d frames more", round, n)
			}
		}
		if !idle {
			r := &b.rx
			base := r.blk * r.blockSize
			t.Fatalf("round %d: not idle after the frames were read: block %d status %#x num_pkts %d consumed %d pending %d poisoned %v; stats %+v",
				round, r.blk, r.load(base+bdBlockStatus), r.load(base+bdNumPkts), r.consumed, r.pending, r.poisoned, b.Stats())
		}
	}
	if st := a.Stats(); st.TxFrames < 40*3 {
		t.Fatalf("sender counted %d frames", st.TxFrames)
	}
	b.Close()
	if !b.RecvIdle() || b.RecvOwned(frames) != 0 {
		t.Fatal("a closed Link is not idle")
	}
	a.Close()
	if err := a.SendOwned(testFrame(buf, mac6(b.HardwareAddr()), mac6(a.HardwareAddr()), 2, 0, 64)); err != ErrClosed {
		t.Fatalf("SendOwned on a closed Link: %v", err)
	}
}
