//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethergm/ethergm/cmd/gm_allsize/internal/allsize"
	"github.com/ethergm/ethergm/cmd/gm_allsize/report"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
	"github.com/ethergm/ethergm/internal/netns/relay"
	"github.com/ethergm/ethergm/wire"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binary builds gm_allsize once per test process and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "gm_allsize-test-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(buildDir, "gm_allsize"), ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "gm_allsize")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// envArgs returns the "env" arguments that run gm_allsize as host h.
func envArgs(h *netns.Host, mapPath, bin string, args ...string) []string {
	return append([]string{"ETHERGM_HOST=" + h.Name, "ETHERGM_STATE_DIR=" + h.Dir, "ETHERGM_MAP=" + mapPath, bin}, args...)
}

// runTool runs gm_allsize on h and returns its output and exit status.
func runTool(t *testing.T, h *netns.Host, mapPath string, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := h.CommandContext(ctx, "env", envArgs(h, mapPath, binary(t), args...)...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("gm_allsize %v timed out after %v:\n%s", args, timeout, out)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("gm_allsize: %v", err)
	}
	return string(out), 0
}

// startServer starts gm_allsize --serve --once on h and waits until it
// serves.
func startServer(t *testing.T, h *netns.Host, mapPath string, args ...string) *netns.Proc {
	t.Helper()
	// The server gets host, state and map as options, the clients from the
	// environment: both must work.
	p, err := h.Start(binary(t), append([]string{"--hostname", h.Name, "--state-dir", h.Dir, "--map-file", mapPath, "--serve", "--once"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	deadline := time.After(10 * time.Second)
	for !strings.Contains(p.Output(), "serving on") {
		select {
		case <-p.Done():
			t.Fatalf("server exited: %v\n%s", p.Wait(), p.Output())
		case <-deadline:
			t.Fatalf("server not ready:\n%s", p.Output())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return p
}

// waitServer waits for a --once server to exit and returns its status.
func waitServer(t *testing.T, p *netns.Proc) int {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("server still running:\n%s", p.Output())
	}
	var ee *exec.ExitError
	if err := p.Wait(); errors.As(err, &ee) {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

var pointLine = regexp.MustCompile(`(?m)^size +(\d+) len +(\d+) prio (low|high) +iters +(\d+) half-rtt +([\d.]+) us bw +([\d.]+) MB/s`)

// checkLines checks that out has one line per test point of opts.
func checkLines(t *testing.T, out string, opts allsize.Options) {
	t.Helper()
	plan := allsize.Plan(opts, 10)
	got := pointLine.FindAllStringSubmatch(out, -1)
	if len(got) != len(plan) {
		t.Fatalf("%d result lines, want %d:\n%s", len(got), len(plan), out)
	}
	for i, tp := range plan {
		want := fmt.Sprintf("%d %d %s", tp.Size, tp.Length, allsize.PriorityName(tp.Priority))
		if g := got[i][1] + " " + got[i][2] + " " + got[i][3]; g != want {
			t.Fatalf("line %d is for %s, want %s", i, g, want)
		}
	}
}

func TestIntegrationVerifyLoopback(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 1})
	m := gmmap.MustWrite(t, c)
	out, status := runTool(t, c.Hosts[0], m, 60*time.Second,
		"--verify", "--unit", "eth0", "--min-size", "3", "--max-size", "14", "--iterations", "20", "--max-bytes", "256k")
	t.Logf("output:\n%s", out)
	if status != 0 {
		t.Fatalf("exit status %d", status)
	}
	opts := allsize.Defaults()
	opts.MinSize, opts.MaxSize = 3, 14
	checkLines(t, out, opts)
	if !strings.Contains(out, "0 data errors (0 bytes), 0 failed sends") || !strings.Contains(out, "result: PASS") {
		t.Fatal("summary does not report a clean run")
	}
	if !strings.Contains(out, "counters: resends") {
		t.Fatal("no counter deltas")
	}
}

func TestIntegrationTwoHost(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	m := gmmap.MustWrite(t, c)
	srv := startServer(t, c.Hosts[1], m, "--unit", "eth0")
	dir := t.TempDir()
	base := filepath.Join(dir, "base.csv")
	if err := os.WriteFile(base, []byte("series,length,half_rtt_us,bw_mbs\nUDP (test),8,40,0.2\nUDP (test),1024,45,20\nTCP (test),1024,50,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	js, cs, svg := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.svg")
	out, status := runTool(t, c.Hosts[0], m, 60*time.Second,
		"--remote-host=host1", "--unit", "eth0", "--priority", "both", "--min-size", "3", "--max-size", "12",
		"--iterations", "30", "--json="+js, "--csv="+cs, "--plot", svg, "--baseline", base)
	t.Logf("client output:\n%s", out)
	t.Logf("server output:\n%s", srv.Output())
	if status != 0 {
		t.Fatalf("exit status %d", status)
	}
	if s := waitServer(t, srv); s != 0 {
		t.Fatalf("server exit status %d", s)
	}
	opts := allsize.Defaults()
	opts.MinSize, opts.MaxSize = 3, 12
	opts.Priorities = []gm.Priority{gm.LowPriority, gm.HighPriority}
	checkLines(t, out, opts)
	if !strings.Contains(out, "server counters:") {
		t.Fatal("no server counters")
	}

	// JSON.
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Run
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Meta.Mode != "remote" || r.Meta.Remote != "host1" || r.Meta.RemoteNode != 2 || r.Summary.Remote == nil || !r.Summary.OK() {
		t.Fatalf("JSON meta/summary: %+v %+v", r.Meta, r.Summary)
	}
	if len(r.Points) != len(allsize.Plan(opts, 10)) {
		t.Fatalf("%d JSON points", len(r.Points))
	}
	for _, p := range r.Points {
		if p.HalfRTTus <= 0 || p.HalfRTTus > 100000 || p.HalfRTTp50us <= 0 || (p.Length > 0 && p.BWMBs <= 0) || p.Iterations < 2 {
			t.Errorf("implausible point %+v", p)
		}
	}
	// CSV.
	f, err := os.Open(cs)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(r.Points)+1 || strings.Join(recs[0], ",") != strings.Join(report.CSVHeader, ",") {
		t.Fatalf("CSV has %d records, header %v", len(recs), recs[0])
	}
	// SVG: well-formed, every series present.
	data, err = os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var texts []string
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG not well-formed: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			inText = x.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(x))
			}
		case xml.EndElement:
			inText = false
		}
	}
	for _, want := range []string{"EtherGM low", "EtherGM high", "UDP (test)", "TCP (test)"} {
		if !slicesContains(texts, want) {
			t.Errorf("SVG legend lacks %q", want)
		}
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var mismatchLine = regexp.MustCompile(`(?m)size \d+ len \d+ seq \d+: offset \d+ expected 0x[0-9a-f]{2} got 0x[0-9a-f]{2}$`)

// TestIntegrationCorruption flips bits in data frames on the wire (the
// impairment relay) with the receivers' CRC checks off: --verify must see
// the damage on both sides, print it and exit 1.
func TestIntegrationCorruption(t *testing.T) {
	// Corrupt only bytes after the first 600 of the payload, so that the
	// short control messages pass and only test data is hit.
	imp := relay.Impairment{Corrupt: 0.05, CorruptFrom: wire.EthHeaderLen + wire.HeaderLen + 600}
	c := netns.NewImpairedPair(t, relay.Config{Seed: 7, AtoB: imp, BtoA: imp, EtherType: wire.EtherType})
	m := gmmap.MustWrite(t, c)
	srv := startServer(t, c.Hosts[1], m, "--unit", "eth0", "--no-crc-check")
	out, status := runTool(t, c.Hosts[0], m, 60*time.Second,
		"--verify", "--no-crc-check", "--remote-host=host1", "--unit", "eth0", "--min-size", "10", "--max-size", "13",
		"--iterations", "30", "--random", "0")
	t.Logf("client output:\n%s", out)
	t.Logf("server output:\n%s", srv.Output())
	t.Logf("relay: A to B %+v, B to A %+v", c.Relay().Stats(relay.AtoB), c.Relay().Stats(relay.BtoA))
	if status != 1 {
		t.Fatalf("exit status %d, want 1", status)
	}
	if !mismatchLine.MatchString(out) {
		t.Fatal("no mismatch line with offset, expected and got bytes")
	}
	if !regexp.MustCompile(`(?m)^server: size \d+ len \d+ seq \d+: offset`).MatchString(out) {
		t.Error("no mismatch seen by the server reported")
	}
	if regexp.MustCompile(` 0 data errors`).MatchString(out) || !strings.Contains(out, "result: FAIL") {
		t.Fatal("summary does not report the data errors")
	}
	if s := waitServer(t, srv); s != 1 {
		t.Errorf("server exit status %d, want 1", s)
	}
}

// TestIntegrationServerBusy starts a second client while a run is in
// progress: the server refuses it (exit 1, "server busy") and the first
// run completes.
//
// The hosts are joined through the relay with a fixed delay, so that the
// first run takes a few seconds however fast the machine is (its remaining
// points must still be ahead when the test freezes it after the first one),
// and few iterations keep it short on a loaded machine.
func TestIntegrationServerBusy(t *testing.T) {
	delay := relay.Impairment{Delay: 2 * time.Millisecond}
	c := netns.NewImpairedPair(t, relay.Config{AtoB: delay, BtoA: delay, EtherType: wire.EtherType})
	m := gmmap.MustWrite(t, c)
	srv := startServer(t, c.Hosts[1], m, "--unit", "eth0")
	h := c.Hosts[0]
	a, err := h.Start("env", envArgs(h, m, binary(t), "--remote-host=host1", "--unit", "eth0", "--max-size", "12", "--iterations", "20")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	deadline := time.After(60 * time.Second)
	for !pointLine.MatchString(a.Output()) {
		select {
		case <-a.Done():
			t.Fatalf("first client ended early: %v\n%s", a.Wait(), a.Output())
		case <-deadline:
			t.Fatalf("first client made no progress:\n%s", a.Output())
		case <-time.After(5 * time.Millisecond):
		}
	}
	// Freeze the first client mid-run, so that the server is surely in its
	// session while the second client says hello.
	if err := syscall.Kill(-a.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(a.Output(), "summary:") {
		t.Fatalf("first client finished before it was frozen:\n%s", a.Output())
	}
	out, status := runTool(t, h, m, 30*time.Second, "--remote-host=host1", "--unit", "eth0", "--port", "5", "--remote-port", "2", "--max-size", "5", "--timeout", "20s")
	if err := syscall.Kill(-a.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("second client:\n%s", out)
	if status != 1 || !strings.Contains(out, "server busy with a run from host0 (node 1 port 2)") {
		t.Fatalf("second client: exit status %d, want 1 and a busy error", status)
	}
	select {
	case <-a.Done():
	case <-time.After(120 * time.Second):
		t.Fatalf("first client still running:\n%s", a.Output())
	}
	if err := a.Wait(); err != nil || !strings.Contains(a.Output(), "result: PASS") {
		t.Fatalf("first client: %v\n%s", err, a.Output())
	}
	if s := waitServer(t, srv); s != 0 {
		t.Fatalf("server exit status %d\n%s", s, srv.Output())
	}
	if !strings.Contains(srv.Output(), "control messages from other clients: busy") {
		t.Errorf("server log:\n%s", srv.Output())
	}
}
