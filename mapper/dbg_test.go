package mapper

import (
	"fmt"
	"testing"
	"time"
)

func TestDbgPartition(t *testing.T) {
	n := newSim(t, 8)
	for i := range 10 {
		n.add(fmt.Sprintf("h%d", i), 1, 0)
	}
	startAll(n)
	mustConverge(t, n, 2*time.Second)
	side := func(h *simHost) int { return h.i % 2 }
	n.blocked = func(a, b *simHost) bool { return side(a) != side(b) }
	n.run(n.now + 3*time.Second)
	na := n.add("newA", 1, 0)
	na.start()
	n.run(n.now + 3*time.Second)
	for _, h := range []*simHost{n.hosts[8], na} {
		s := h.m.Status()
		t.Logf("%s: %+v tbl=%d hand=%+v", h.name, s.Counters, len(h.m.tbl.recs), h.m.hand)
		t.Logf("%s", h.m.Map().Format())
	}
}
