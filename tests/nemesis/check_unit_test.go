package nemesis

import (
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
)

// TestCheckerCatches feeds the checker made-up reports of one sender
// (host0, incarnation 1) and receivers on host1, and expects each breach of
// the contract to be named, and nothing in a clean run.
func TestCheckerCatches(t *testing.T) {
	ids := map[int]int{0: 1, 1: 2}
	win := map[gm.Status]time.Duration{gm.SendTargetPortClosed: time.Minute, gm.SendTargetNodeUnreachable: time.Minute, gm.SendTimedOut: time.Minute}
	cases := []struct {
		name  string
		lines []string // "s ..." from the sender, "r ..." from receiver 1, "q ..." from receiver 2 (after r was killed)
		fault bool     // a receiver kill of host1 is on record
		want  string   // "" for no violation
	}{
		{"clean", []string{"r D 1 0 0 0 1 2", "s C 1 0 0 0", "r D 1 0 1 0 1 2", "s C 1 0 1 0", "s F 1 0 2", "s FINISHED"}, false, ""},
		{"twice", []string{"r D 1 0 0 0 1 2", "r D 1 0 0 0 1 2", "s C 1 0 0 0"}, false, "delivered twice"},
		{"twice across incarnations", []string{"r D 1 0 0 0 1 2", "q D 1 0 0 0 1 2", "s C 1 0 0 0"}, true, "delivered twice"},
		{"out of order", []string{"r D 1 0 1 0 1 2", "r D 1 0 0 0 1 2", "s C 1 0 0 0", "s C 1 0 1 0"}, false, "delivered after"},
		{"skipped", []string{"r D 1 0 0 0 1 2", "r D 1 0 2 0 1 2", "s C 1 0 0 0", "s C 1 0 1 0", "s C 1 0 2 0"}, false, "skipped"},
		{"skipped, failure explained", []string{"r D 1 0 0 0 1 2", "r D 1 0 2 0 1 2", "s C 1 0 0 0", "s C 1 0 1 17", "s C 1 0 2 0"}, true, ""},
		{"failure unexplained", []string{"r D 1 0 0 0 1 2", "s C 1 0 0 0", "s C 1 0 1 18"}, false, "no fault of the stream explains it"},
		{"rejected", []string{"s C 1 0 0 16"}, true, "completed with GM_SEND_REJECTED"},
		{"success never delivered", []string{"r D 1 0 0 0 1 2", "s C 1 0 0 0", "s C 1 0 1 0"}, false, "never delivered"},
		{"success lost by a killed receiver", []string{"r D 1 0 0 0 1 2", "s C 1 0 0 0", "s C 1 0 1 0", "q D 1 0 2 0 1 2", "s C 1 0 2 0"}, true, ""},
		{"completed twice", []string{"r D 1 0 0 0 1 2", "s C 1 0 0 0", "s C 1 0 0 0"}, false, "completed twice"},
		{"never completed", []string{"r D 1 0 0 0 1 2", "s C 1 0 0 0", "s F 1 0 2", "s FINISHED"}, false, "never completed"},
		{"wrong node", []string{"r D 1 0 0 0 3 2", "s C 1 0 0 0"}, false, "sender node id 3"},
		{"wrong port", []string{"r D 1 0 0 0 1 5", "s C 1 0 0 0"}, false, "from port 5"},
		{"bad message", []string{"r E message inc 1 seq 0 changed"}, false, "changed"},
		{"unknown sender", []string{"r D 9 0 0 0 1 2"}, false, "no sender"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(2, ids, win)
			s := &peerProc{role: "send", host: 0, inc: 1, submitted: map[[2]int]uint64{}}
			r := &peerProc{role: "recv", host: 1, inc: 2}
			q := &peerProc{role: "recv", host: 1, inc: 3}
			c.addSender(s)
			c.addReceiver(r)
			if tc.fault {
				r.killed.Store(true)
				c.faults = append(c.faults, &faultSpan{f: fault{Kind: killRecv, Hosts: []int{1}}, start: time.Now().Add(-time.Second)})
			}
			c.addReceiver(q)
			for _, l := range tc.lines {
				p := map[byte]*peerProc{'s': s, 'r': r, 'q': q}[l[0]]
				c.line(p, l[2:])
			}
			c.check()
			got := strings.Join(c.violations, "\n")
			switch {
			case tc.want == "" && got != "":
				t.Errorf("violations in a clean run:\n%s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("want a violation naming %q, got:\n%s", tc.want, got)
			}
		})
	}
}

// TestCheckerOpenRetries: a port that opened only after retries for a down
// interface is a violation unless every rail of its host was cut at some
// time of its attempts (a unit opens while one of its rails is up).
func TestCheckerOpenRetries(t *testing.T) {
	const down = "O 3 gm: Failure: link: interface h1r1 is down (`ip link set h1r1 up`)"
	for _, tc := range []struct {
		name string
		cut  []int // rails of host1 cut since a second ago
		line string
		want bool // a violation
	}{
		{"no rail cut", nil, down, true},
		{"one rail cut", []int{1}, down, true},
		{"both rails cut", []int{0, 1}, down, false},
		{"another error", nil, "O 2 gm: Busy: port 2 is held by pid 1234", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(2, map[int]int{0: 1, 1: 2}, nil)
			r := &peerProc{role: "recv", host: 1, inc: 2}
			c.addReceiver(r)
			for _, rail := range tc.cut {
				c.faults = append(c.faults, &faultSpan{f: fault{Kind: cutRail, Hosts: []int{1}, Rail: rail}, start: time.Now().Add(-time.Second)})
			}
			c.line(r, tc.line)
			got := strings.Join(c.violations, "\n")
			if tc.want != strings.Contains(got, "opened only after") {
				t.Errorf("violations %q, want one about the open: %v", got, tc.want)
			}
		})
	}
}
