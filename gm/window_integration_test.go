package gm_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/internal/netns"
)

// TestIntegrationReceiveWindow: over real links with rings of different
// sizes, each sender keeps at most what its receiver advertises (half the
// receiver's ring), not what its own ring would hold: at MTU 9000, host1's
// ring of 8 blocks holds 112 full frames (window 56) while host0's default
// ring holds 896 (window 448).
func TestIntegrationReceiveWindow(t *testing.T) {
	const mtu, blocks = 9000, 8
	c := netns.New(t, netns.Options{Hosts: 2, MTU: mtu})
	m := writeMap(t, c)
	ca, cb := testConfig(c.Hosts[0], m), testConfig(c.Hosts[1], m)
	ca.Window, cb.Window = gm.MaxWindow, gm.MaxWindow
	cb.Link.RxBlocks = blocks
	a, b := openPort(t, c.Hosts[0], 2, ca), openPort(t, c.Hosts[1], 4, cb)
	msg := pattern(200000, 5)
	size := gm.MinSizeForLength(len(msg))
	send := func(from, to *gm.Port, node gm.NodeID, port int) {
		t.Helper()
		if err := to.ProvideReceiveBuffer(make([]byte, len(msg)), size, gm.LowPriority, 0); err != nil {
			t.Fatal(err)
		}
		comps := newCompletions()
		if err := from.SendWithCallback(msg, size, len(msg), gm.LowPriority, node, port, comps.cb, 0); err != nil {
			t.Fatal(err)
		}
		l := startLoop(from, nil)
		defer l.Stop()
		if got, _ := recvOne(t, to, 30*time.Second); len(got) != len(msg) {
			t.Fatalf("received %d bytes, want %d", len(got), len(msg))
		}
		if st := comps.wait(t, 1, 30*time.Second)[0].st; st != gm.Success {
			t.Fatalf("send: %v", st)
		}
	}
	send(a, b, b.NodeID(), 4)
	send(b, a, a.NodeID(), 2)
	for _, tc := range []struct {
		name     string
		from, to *gm.Port
		cfg      *link.Config
	}{
		{"host0 -> host1", a, b, &cb.Link},
		{"host1 -> host0", b, a, &ca.Link},
	} {
		if strings.HasPrefix(tc.to.LinkStats().Mode, link.ModeV2) {
			continue // another ring layout than RingFrames'
		}
		want := min(link.RingFrames(tc.cfg, mtu)/2, gm.MaxWindow)
		re := regexp.MustCompile(`tx -> node ` + strconv.Itoa(int(tc.to.NodeID())) + ` port \d+ pri 0: .* inflight \d+/(\d+) `)
		mm := re.FindStringSubmatch(tc.from.DebugState())
		if mm == nil {
			t.Fatalf("%s: no stream in the sender's state:\n%s", tc.name, tc.from.DebugState())
		}
		if got, _ := strconv.Atoi(mm[1]); got != want {
			t.Errorf("%s: window %d, want %d (half the receiver's ring)", tc.name, got, want)
		}
	}
}
