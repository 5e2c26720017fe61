package mapper

import (
	"fmt"
	"testing"
	"time"
)

// FuzzInput feeds arbitrary frames to a mapper of a small converged
// network (3 hosts, 2 rails): it must not panic, leave a deadline due
// after Tick, send a malformed frame or install an older map (the simnet
// checks these), and the network must still agree afterwards. Inputs are
// cut into frames at 0xFE 0xFE; a frame starting with 0xFF gets its CRC
// fixed so that the mutations reach the body parsers and the state
// machine.
func FuzzInput(f *testing.F) {
	n := newFuzzWorld(f)
	var seeds [][]byte
	n.tap = func(_ *simHost, _ int, fr []byte) {
		if len(seeds) < 40 {
			seeds = append(seeds, fr)
		}
	}
	n.run(n.now + time.Second)
	for _, s := range seeds {
		f.Add(append([]byte{0xff}, s...))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := newFuzzWorld(t)
		target := n.hosts[0]
		for len(data) > 0 {
			fr := data
			for i := 0; i+1 < len(data); i++ {
				if data[i] == 0xfe && data[i+1] == 0xfe {
					fr, data = data[:i], data[i+2:]
					break
				}
			}
			if len(fr) == len(data) {
				data = nil
			}
			rail := 0
			if len(fr) > 0 && fr[0] == 0xff {
				fr = append([]byte(nil), fr[1:]...)
				fixCRC(fr)
				rail = 1
			}
			target.m.Input(n.now, rail, fr)
			target.schedule()
			n.run(n.now + 5*time.Millisecond)
		}
		n.run(n.now + 3*time.Second)
		if !converged(n.live()) {
			t.Fatalf("not converged after the fuzz frames:\n%s", why(n.live()))
		}
	})
}

func newFuzzWorld(t testing.TB) *simnet {
	n := newSim(t, 12)
	for i := range 3 {
		n.add(fmt.Sprintf("f%d", i), 1, 0, 1)
	}
	startAll(n)
	n.runUntil(2*time.Second, func() bool { return converged(n.hosts) })
	if !converged(n.hosts) {
		t.Fatalf("fuzz world does not converge:\n%s", why(n.hosts))
	}
	return n
}
