package link

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestIntegrationSetPorts: SetPorts narrows and widens the target ports a
// running Link receives, in its ring and in its doorbell (a sleeping Wait
// wakes for the new set's frames), and fails on a closed Link.
func TestIntegrationSetPorts(t *testing.T) {
	// b receives every port, and its Wait sleeps in the kernel at once (no
	// spinning): what wakes it is the doorbell socket, whose filter changes
	// with the ring's.
	a, b, _ := pair(t, nil, &Config{SpinTime: -1})
	dst, src := mac6(b.HardwareAddr()), mac6(a.HardwareAddr())
	buf := make([]byte, 0, 2000)
	send := func(port uint8, seq uint64) {
		t.Helper()
		if err := a.Send(testFrame(buf, dst, src, port, seq, 64)); err != nil {
			t.Fatal(err)
		}
	}
	round := func(want string, seq uint64) {
		t.Helper()
		for p := uint8(2); p <= 5; p++ {
			send(p, seq+uint64(p))
		}
		send(3, 100) // marker: port 3 is in every set below
		if got := fmt.Sprint(expectFrames(t, b, 100)); got != want {
			t.Errorf("ports %#x: got %v, want %v", b.cfg.Ports, got, want)
		}
	}
	round("[12 13 14 15]", 10)
	if err := b.SetPorts(1<<3 | 1<<5); err != nil {
		t.Fatal(err)
	}
	round("[23 25]", 20)
	// A Wait asleep in the kernel wakes for a frame of the new set.
	if err := b.SetPorts(1 << 4); err != nil {
		t.Fatal(err)
	}
	got := make(chan []uint64, 1)
	go func() {
		frames := make([][]byte, 4)
		n, err := b.Wait(frames, 5*time.Second)
		var seqs []uint64
		for _, f := range frames[:n] {
			seqs = append(seqs, frameSeq(f))
		}
		if err != nil {
			seqs = nil
		}
		got <- seqs
	}()
	time.Sleep(50 * time.Millisecond)
	send(3, 31) // not in the set: must not wake it
	send(4, 32)
	if s := <-got; fmt.Sprint(s) != "[32]" {
		t.Errorf("Wait after SetPorts(port 4) = %v, want [32]", s)
	}
	if err := b.SetPorts(0); err != nil { // 0: every port
		t.Fatal(err)
	}
	round("[42 43 44 45]", 40)
	b.Close()
	if err := b.SetPorts(1 << 3); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetPorts on a closed link = %v, want ErrClosed", err)
	}
}
