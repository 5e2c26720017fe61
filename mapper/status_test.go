package mapper

import (
	"reflect"
	"testing"
)

// TestSummary: Summary is Status without Rails, Routes and Counters, for
// the leader and a follower alike.
func TestSummary(t *testing.T) {
	n := newSim(t, 3)
	startConverged(t, n, 4, "h%d", 0, 1)
	for _, h := range n.hosts {
		full, sum := h.m.Status(), h.m.Summary()
		if len(full.Routes) == 0 || len(full.Rails) != 2 || full.Counters.FramesIn == nil {
			t.Fatalf("%s: Status without routes, rails or counters: %+v", h.name, full)
		}
		full.Rails, full.Routes, full.Counters = nil, nil, Counters{}
		if !reflect.DeepEqual(full, sum) {
			t.Errorf("%s: Summary\n%+v\nwant Status without rails, routes and counters\n%+v", h.name, sum, full)
		}
	}
}
