package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
)

// TestPrintCongestion: the report lists the resends by cause among the
// counters and, for every port, the congestion window toward each host it
// sent to.
func TestPrintCongestion(t *testing.T) {
	p := gm.PortInfo{Port: 2, PID: 42, Stats: gm.ProtocolCounters{DataRetransmitted: 7, RetransmitsLoss: 5, RetransmitsTimeout: 2}}
	p.Congestion = []gm.CongestionInfo{{Node: 3, Window: 24, Ssthresh: 16, InFlight: 20, SRTT: 812.5, MinRTT: 41}}
	c := &Counters{Unit: "eth0", Time: time.Now(), Totals: map[string]uint64{}, Ports: []gm.PortInfo{p}}
	add(c.Totals, portCounters(p))
	var b strings.Builder
	print(&b, c, nil, false)
	out := b.String()
	for _, re := range []string{
		`(?m)^resends\s+7\s*$`, `(?m)^resends_loss\s+5\s*$`, `(?m)^resends_timeout\s+2\s*$`, `(?m)^resends_go_back\s+0\s*$`,
		`(?m)^window_cuts_loss\s+0\s*$`, `(?m)^window_cuts_delay\s+0\s*$`, `(?m)^losses_random\s+0\s*$`,
		`(?m)^Congestion windows`, `(?m)^port\s+pid\s+to node\s+window\s+ssthresh\s+in flight\s+srtt\s+min rtt\s*$`,
		`(?m)^2\s+42\s+3\s+24\s+16\s+20\s+812\s+41\s*$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("report does not match %s:\n%s", re, out)
		}
	}
}
