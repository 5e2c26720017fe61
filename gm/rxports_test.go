package gm

import (
	"testing"

	"github.com/ethergm/ethergm/gm/link"
)

// TestRxPortsFor: a port receives its own frames, and those of every closed
// port (0..NumPorts-1) only while it is the lowest open one.
func TestRxPortsFor(t *testing.T) {
	for _, c := range []struct {
		id   int
		open uint32
		want link.PortMask
	}{
		{2, 1 << 2, 0xFFFF},                    // alone: every port of the unit
		{2, 1<<2 | 1<<4, 0xFFFF &^ (1 << 4)},   // lowest: own and the closed ones
		{4, 1<<2 | 1<<4, 1 << 4},               // port 2 answers: own only
		{0, 1<<0 | 1<<15, 0xFFFF &^ (1 << 15)}, // port 0 and the highest
		{15, 1<<1 | 1<<15, 1 << 15},            // the mapper's port 1 is below
		{5, maskUnknown, 1 << 5},               // open ports unknown: nothing is called closed
	} {
		if got := rxPortsFor(c.id, c.open); got != c.want {
			t.Errorf("rxPortsFor(%d, %#x) = %#x, want %#x", c.id, c.open, got, c.want)
		}
	}
}
