package gm_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
)

// waitRxPorts waits until p.Info().RxPorts is want (the port's links take
// in those target ports) and fails t after timeout.
func waitRxPorts(t *testing.T, p *gm.Port, want []int, timeout time.Duration) {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		got := p.Info().RxPorts
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("port %d takes in ports %v after %v, want %v", p.ID(), got, timeout, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// allPortsBut lists the ports 0..NumPorts-1 other than those of not.
func allPortsBut(not ...int) []int {
	var ports []int
	for id := range gm.NumPorts {
		if !slices.Contains(not, id) {
			ports = append(ports, id)
		}
	}
	return ports
}

// TestFakePortInfoRxPorts: PortInfo.RxPorts follows the open ports of the
// unit within a map poll: every port while the port is the only one open,
// its own alone while a lower port is open, every closed port again when
// that lower port closes.
func TestFakePortInfoRxPorts(t *testing.T) {
	n := newFakeNet(t, 1, 1)
	b := n.open(t, 0, 4, nil)
	if got, want := b.Info().RxPorts, allPortsBut(); !slices.Equal(got, want) {
		t.Fatalf("alone, port 4 takes in %v, want %v", got, want)
	}
	q := n.open(t, 0, 2, nil)
	if got, want := q.Info().RxPorts, allPortsBut(4); !slices.Equal(got, want) {
		t.Fatalf("below port 4, port 2 takes in %v, want %v", got, want)
	}
	waitRxPorts(t, b, []int{4}, 5*time.Second)
	q.Close()
	waitRxPorts(t, b, allPortsBut(), 5*time.Second)
}
