//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
	"github.com/ethergm/ethergm/tests/cmdbin"
)

// tool returns the path of command name, built once for the test process.
func tool(t testing.TB, name string) string { return cmdbin.Path(t, name) }

func TestMain(m *testing.M) {
	code := m.Run()
	cmdbin.Cleanup()
	os.Exit(code)
}

// runOn runs a command on h and returns its output; it fails t on a
// non-zero exit.
func runOn(t *testing.T, h *netns.Host, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := h.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s on %s: %v\n%s", strings.Join(args, " "), h.Name, err, out)
	}
	return string(out)
}

func mustMatch(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("output does not match %q:\n%s", p, out)
		}
	}
}

// TestIntegrationBoardInfoStatic: a static map, no mapper; a port opened by
// this process shows in the port table with this pid, and gm_counters
// counts its frames.
func TestIntegrationBoardInfoStatic(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	mapPath := gmmap.MustWrite(t, c)
	a, b := c.Hosts[0], c.Hosts[1]
	info := tool(t, "gm_board_info")
	args := []string{info, "--unit", "eth0", "--hostname", a.Name, "--map-file", mapPath}

	out := runOn(t, a, args...)
	mustMatch(t, out,
		`(?m)^Mapper is 00:00:00:00:00:00\.$`, `(?m)^Map version is 0\.$`, `(?m)^2 hosts\.$`,
		`(?m)^Network is NOT fully configured\.$`, `static node map`,
		`(?m)^This node is "host0" \(gmID 1\)\.$`,
		`(?m)^\s+1 \S+\s+host0\s+\(this node\)$`,
		`(?m)^\s+2 `+regexp.QuoteMeta(b.MACs[0].String())+`\s+host1\s+`+regexp.QuoteMeta(b.MACs[0].String())+` via eth0$`,
		`(?m)^\s+2: FREE$`, `no gm_mapper runs`)

	// Open ports on both hosts from this process; send a few messages.
	cfg := func(h *netns.Host) *gm.Config {
		return &gm.Config{Host: h.Name, MapFile: mapPath, StateDir: h.Dir}
	}
	var pa, pb *gm.Port
	if err := a.Do(func() (err error) { pa, err = gm.Open("eth0", 2, "board-test", cfg(a)); return }); err != nil {
		t.Fatal(err)
	}
	defer pa.Close()
	if err := b.Do(func() (err error) { pb, err = gm.Open("eth0", 4, "board-peer", cfg(b)); return }); err != nil {
		t.Fatal(err)
	}
	defer pb.Close()
	buf := make([]byte, 64)
	if err := pb.ProvideReceiveBuffer(buf, 7, gm.LowPriority, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan gm.Status, 1)
	msg := []byte("hello")
	if err := pa.SendWithCallback(msg, 7, len(msg), gm.LowPriority, 2, 4, func(_ *gm.Port, _ any, s gm.Status) { done <- s }, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	got := false
	for !got || len(done) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("message not delivered within 10 s")
		}
		if e := pb.Receive(); e.Type == gm.RecvEvent || e.Type == gm.FastRecvEvent {
			got = true
		} else {
			pb.Unknown(e)
		}
		if e := pa.Receive(); e.Type != gm.NoRecvEvent {
			pa.Unknown(e)
		}
	}
	if s := <-done; s != gm.Success {
		t.Fatalf("send: %v", s)
	}

	out = runOn(t, a, args...)
	mustMatch(t, out, fmt.Sprintf(`(?m)^\s+2: BUSY %d \(\S+ board-test\)$`, os.Getpid()))

	// JSON.
	var bi BoardInfo
	if err := json.Unmarshal([]byte(runOn(t, a, append(args, "--json")...)), &bi); err != nil {
		t.Fatal(err)
	}
	if bi.Hosts != 2 || bi.NodeID != 1 || !bi.Ports[2].Busy || bi.Ports[2].PID != os.Getpid() || len(bi.Routes) != 2 || len(bi.Routes[1].Hops) != 1 {
		t.Fatalf("--json: %+v", bi)
	}
	// Port 2, alone on host0, takes in every port's frames (it answers
	// for the closed ones).
	if got := bi.Ports[2].RxPorts; len(got) != gm.NumPorts || got[2] != 2 {
		t.Fatalf("--json: port 2 takes in ports %v, want 0..%d", got, gm.NumPorts-1)
	}

	// gm_counters on host1 sees port 4 and the frames it received.
	var cs struct {
		Totals map[string]uint64 `json:"totals"`
		Ports  []gm.PortInfo     `json:"ports"`
	}
	if err := json.Unmarshal([]byte(runOn(t, b, tool(t, "gm_counters"), "--unit", "eth0", "--json")), &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs.Ports) != 1 || cs.Ports[0].Port != 4 || cs.Totals["messages_delivered"] != 1 || cs.Totals["frames_received"] == 0 || cs.Totals["acks_sent"] == 0 {
		t.Fatalf("gm_counters on %s: %+v", b.Name, cs)
	}
	text := runOn(t, b, tool(t, "gm_counters"), "--unit", "eth0", "-v")
	mustMatch(t, text, `(?m)^messages_delivered\s+1\s+1\s*$`, fmt.Sprintf(`port 4 \(pid %d\)`, os.Getpid()))
}

// TestIntegrationBoardInfoMapped: real gm_mappers on three hosts (two
// dual-rail, one single-rail); gm_board_info on every host reports the
// same mapper and version, a fully configured network, itself as "(this
// node)", the mapper marked, routes "MAC via eth0/eth1", and gm_mapper
// holding port 1; gm_counters reports the mapper's frames.
func TestIntegrationBoardInfoMapped(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3, Rails: 2, HostRails: [][]int{nil, nil, {0}}})
	mapper, info := tool(t, "gm_mapper"), tool(t, "gm_board_info")
	unit := func(h *netns.Host) string { return strings.Join(h.Ifaces, ",") }
	for _, h := range c.Hosts {
		p, err := h.Start(mapper, "--unit", unit(h), "--hostname", h.Name, "--state-dir", h.Dir,
			"--hosts-file", filepath.Join(h.Dir, "lib", "hosts"), "--verify-interval", "250ms")
		if err != nil {
			t.Fatal(err)
		}
		// A gm_mapper stops in about 0.1 s per rail (closing a link's
		// sockets waits for the kernel's RCU grace periods), longer on
		// a loaded machine that tears down other namespaces: give it
		// more than netns.DefaultStopGrace before calling it hung.
		p.StopGrace = 10 * time.Second
		t.Cleanup(func() {
			if err := p.Stop(); err != nil {
				t.Errorf("%s gm_mapper: %v", h.Name, err)
			}
			if t.Failed() {
				t.Logf("%s gm_mapper log:\n%s", h.Name, p.Output())
			}
		})
	}
	report := func(h *netns.Host) BoardInfo {
		var bi BoardInfo
		if err := json.Unmarshal([]byte(runOn(t, h, info, "--unit", unit(h), "--hostname", h.Name, "--state-dir", h.Dir, "--json")), &bi); err != nil {
			t.Fatal(err)
		}
		return bi
	}
	// Every check waits for the state it describes: the mappers elect a
	// leader, map, and verify the map every 250 ms, and a verification
	// that times out on a loaded machine maps again (a new version, not
	// fully configured for a moment). So each round takes every report
	// afresh, and the test fails only if no round within the deadline
	// shows the whole picture at once.
	h0, h1, h2 := c.Hosts[0], c.Hosts[1], c.Hosts[2]
	var problems []string
	check := func() bool {
		problems = problems[:0]
		var reports []BoardInfo
		for i, h := range c.Hosts {
			bi := report(h)
			reports = append(reports, bi)
			if !bi.Configured || bi.Hosts != 3 || bi.MapVersion != reports[0].MapVersion || bi.Mapper != reports[0].Mapper ||
				bi.NodeID == 0 || bi.ThisNode != c.Hosts[i].Name || !bi.Ports[gm.MapperPortID].Busy || bi.Ports[gm.MapperPortID].Program != "gm_mapper" {
				problems = append(problems, fmt.Sprintf("%s --json: %+v", h.Name, bi))
			}
		}
		if len(problems) > 0 {
			return false
		}
		out := runOn(t, h0, info, "--unit", unit(h0), "--hostname", h0.Name, "--state-dir", h0.Dir)
		for _, p := range []string{
			`(?m)^Network is fully configured\.$`, `(?m)^3 hosts\.$`, `(?m)^Mapper is ` + regexp.QuoteMeta(reports[0].Mapper) + `\.$`,
			fmt.Sprintf(`(?m)^Map version is %d\.$`, reports[0].MapVersion),
			`(?m)^This node is "host0" \(gmID \d+\)\.$`, `(?m)^\s+1: BUSY \d+ \(gm_mapper\)$`,
			`\(this node\)`, `\(mapper\)`,
			// host1 (dual-rail) is reached on both rails, host2 (single-rail,
			// on switch 0) only through eth0.
			regexp.QuoteMeta(h1.MACs[0].String() + " via eth0, " + h1.MACs[1].String() + " via eth1"),
			`(?m)host2\s+` + regexp.QuoteMeta(h2.MACs[0].String()+" via eth0") + `( \(mapper\))?$`,
		} {
			if !regexp.MustCompile(p).MatchString(out) {
				problems = append(problems, fmt.Sprintf("output does not match %q:\n%s", p, out))
			}
		}
		return len(problems) == 0
	}
	for deadline := time.Now().Add(60 * time.Second); !check(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not fully configured, with the same map, mapper and port table on every host, after 60 s:\n%s", strings.Join(problems, "\n"))
		}
	}
	// gm_counters reports the mapper's frames (it asks the mapper afresh:
	// wait for an answer).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var cs Counters
		if err := json.Unmarshal([]byte(runOn(t, h0, tool(t, "gm_counters"), "--unit", unit(h0), "--json")), &cs); err != nil {
			t.Fatal(err)
		}
		if cs.Mapper != nil && cs.Totals["mapper_maps_installed"] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gm_counters: %+v", cs)
		}
	}
}

// Counters is the part of gm_counters --json the tests read.
type Counters struct {
	Totals map[string]uint64 `json:"totals"`
	Mapper *struct {
		PID int `json:"pid"`
	} `json:"mapper"`
}
