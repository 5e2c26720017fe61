package gm_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/mapper/driver"
)

// Environment of the sixteen-ports helper process (sixteenHelper).
const (
	envSixteen      = "GM_SIXTEEN_PORTS" // the ports it opens: "12,13,14,15"
	envSixteenUnit  = "GM_SIXTEEN_UNIT"
	envSixteenPeer  = "GM_SIXTEEN_PEER" // node id of the other host
	envSixteenCount = "GM_SIXTEEN_COUNT"
)

// sixteenMessages is the number of messages on each stream.
const sixteenMessages = 20

// Host 1's ports: sixteenMine in the test's process, sixteenHelperPorts in
// the helper's.
var (
	sixteenMine        = []int{2, 3, 4, 5}
	sixteenHelperPorts = []int{6, 7}
)

// sixteenStreams are the streams between host 0 (node n0, all 16 ports)
// and host 1 (node n1, the ports of sixteenMine and sixteenHelperPorts):
// each port of host 0 sends one stream at low priority and one at high
// priority to two ports of host 1, and receives one of each from two of
// them; each port of host 1 sends and receives five or six streams.
func sixteenStreams(n0, n1 gm.NodeID) []vStream {
	far := append(append([]int(nil), sixteenMine...), sixteenHelperPorts...)
	var ss []vStream
	for i := range gm.NumPorts {
		at := func(k int) int { return far[(i+k)%len(far)] }
		ss = append(ss,
			vStream{SrcNode: n0, SrcPort: i, DstNode: n1, DstPort: at(0), Pri: gm.LowPriority},
			vStream{SrcNode: n0, SrcPort: i, DstNode: n1, DstPort: at(1), Pri: gm.HighPriority},
			vStream{SrcNode: n1, SrcPort: at(0), DstNode: n0, DstPort: i, Pri: gm.LowPriority},
			vStream{SrcNode: n1, SrcPort: at(3), DstNode: n0, DstPort: i, Pri: gm.HighPriority})
	}
	return ss
}

// sixteenOut are the streams of ss that port of node sends, sixteenIn the
// ones it receives.
func sixteenOut(ss []vStream, node gm.NodeID, port int) []vStream {
	var out []vStream
	for _, s := range ss {
		if s.SrcNode == node && s.SrcPort == port {
			out = append(out, s)
		}
	}
	return out
}

func sixteenIn(ss []vStream, node gm.NodeID, port int) []vStream {
	var in []vStream
	for _, s := range ss {
		if s.DstNode == node && s.DstPort == port {
			in = append(in, s)
		}
	}
	return in
}

// sixteenDone waits until each port of vs has received its streams of ss
// and completed its sends (n messages per stream), or deadline.
func sixteenDone(vs []*vPort, ss []vStream, n uint32, deadline time.Time) error {
	for {
		var err error
		for _, v := range vs {
			c := v.counts()
			switch {
			case len(c.Errs) > 0 || c.Bad > 0:
				return fmt.Errorf("%s: %d failed sends: %v", v.name, c.Bad, c.Errs)
			case c.OK < len(sixteenOut(ss, v.node, v.id))*int(n):
				err = fmt.Errorf("%s: %d of %d sends completed", v.name, c.OK, len(sixteenOut(ss, v.node, v.id))*int(n))
			default:
				if e := v.check(sixteenIn(ss, v.node, v.id), n); e != nil {
					err = e
				}
			}
			if err != nil {
				break
			}
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sixteenHelper is the helper process of TestIntegrationSixteenPorts: it
// opens the ports envSixteen lists (on envSixteenUnit, with the host, map
// and state directory of the environment), reports "READY <pid>", sends
// and checks the ports' streams to and from node envSixteenPeer
// (sixteenStreams), reports "DONE ok" (or "DONE <error>") and keeps the
// ports open until its standard input closes.
func sixteenHelper() int {
	time.AfterFunc(2*time.Minute, func() { fmt.Println("TIMEOUT"); os.Exit(4) })
	peer, _ := strconv.Atoi(os.Getenv(envSixteenPeer))
	n, _ := strconv.Atoi(os.Getenv(envSixteenCount))
	cfg := &gm.Config{ProgressTimeout: testProgressTimeout, LivenessTimeout: testLivenessTimeout}
	var vs []*vPort
	var ss []vStream
	for _, f := range strings.Split(os.Getenv(envSixteen), ",") {
		id, _ := strconv.Atoi(f)
		p, err := gm.Open(os.Getenv(envSixteenUnit), id, "sixteen", cfg)
		if err != nil {
			fmt.Println("ERROR open:", err)
			return 1
		}
		defer p.Close()
		v, err := startVPort(fmt.Sprintf("helper port %d", id), p)
		if err != nil {
			fmt.Println("ERROR", err)
			return 1
		}
		defer v.l.Stop()
		vs = append(vs, v)
		ss = sixteenStreams(gm.NodeID(peer), v.node)
	}
	fmt.Println("READY", os.Getpid())
	deadline := time.Now().Add(90 * time.Second)
	errs := make(chan error, len(vs))
	for _, v := range vs {
		go func() { errs <- v.send(sixteenOut(ss, v.node, v.id), uint32(n), deadline) }()
	}
	for range vs {
		if err := <-errs; err != nil {
			fmt.Println("DONE", err)
			return 1
		}
	}
	if err := sixteenDone(vs, ss, uint32(n), deadline); err != nil {
		fmt.Println("DONE", err)
		return 1
	}
	fmt.Println("DONE ok")
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// runMapper runs a mapper (gm_mapper's driver, in this process) for h's
// unit, writing its maps to <h.Dir>/map, until the test ends. Its log
// goes to the test's log if the test fails.
func runMapper(t *testing.T, h *netns.Host) *driver.Driver {
	t.Helper()
	var logBuf syncBuffer
	var d *driver.Driver
	err := h.Do(func() (err error) {
		d, err = driver.New(driver.Config{
			Unit: h.Ifaces[0], Interfaces: h.Ifaces, Host: h.Name, Level: 1,
			MapFile: filepath.Join(h.Dir, "map"), HostsFile: filepath.Join(h.Dir, "lib", "hosts"),
			Logger: slog.New(slog.NewTextHandler(&logBuf, nil)),
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Do(d.Run) }()
	t.Cleanup(func() {
		d.Stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: mapper: %v", h.Name, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: the mapper did not stop within 5 s", h.Name)
		}
		d.Close()
		if t.Failed() {
			t.Logf("%s mapper log:\n%s", h.Name, logBuf.String())
		}
	})
	return d
}

// syncBuffer is a bytes.Buffer for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestIntegrationSixteenPorts: every port of a unit in use at once. Host 0
// opens all 16 ports of its unit in this process (the reserved ports 0, 1
// and 3 with Config.Privileged); host 1 opens four ports in this process
// and two in another one. All at once, every port of host 0 sends 20
// messages of 20 to 3000 bytes on each of two streams to two ports of host
// 1, one at each priority, and host 1's ports send as many back on two
// streams to each port of host 0 (sixteenStreams: 64 streams). Every
// message is checked (content, sender node and port, target port, exactly
// once, in order per stream) and every send must complete with Success.
// While the ports are open, a 17th port (16) is InvalidPortNumber and a
// second open of a port is Busy, naming the process that holds it (this
// one, or the helper).
//
// A mapper runs on each host (gm_mapper's driver, in this process)
// throughout, but the ports use a static map, so that a remap cannot fail
// a send (tests/mapper tests traffic across remaps): the mapper holds its
// own name (ctl.MapperName), not port 1's, so port 1 opens beside it; its
// frames that reach port 1 are ignored there, as port 1's data frames are
// by the mapper; it sees all 16 ports open and answers none of their
// frames as a closed port's.
func TestIntegrationSixteenPorts(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	h0, h1 := c.Hosts[0], c.Hosts[1]
	m := writeMap(t, c)
	mapOf := func(*netns.Host) string { return m }
	mappers := []*driver.Driver{runMapper(t, h0), runMapper(t, h1)}
	waitFor(t, 30*time.Second, "both mappers configured with a map of 2 hosts", func() bool {
		s0, s1 := mappers[0].Status(), mappers[1].Status()
		return s0.Configured && s1.Configured && s0.Hosts == 2 && s1.Hosts == 2
	})
	var mine []*vPort
	open := func(h *netns.Host, id int) *vPort {
		cfg := testConfig(h, mapOf(h))
		cfg.Privileged = true
		cfg.MapPoll = 0 // the default: 22 ports, each watching the map every 50 ms, would load the machine
		v, err := startVPort(fmt.Sprintf("%s port %d", h.Name, id), openPort(t, h, id, cfg))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.l.Stop) // before the port closes
		mine = append(mine, v)
		return v
	}
	start := time.Now()
	for id := range gm.NumPorts {
		open(h0, id)
	}
	for _, id := range sixteenMine {
		open(h1, id)
	}
	n0, n1 := mine[0].node, mine[gm.NumPorts].node
	if n0 != 1 || n1 != 2 {
		t.Fatalf("node ids %d and %d, want 1 and 2", n0, n1)
	}
	ss := sixteenStreams(n0, n1)

	// The other process, with host 1's other ports.
	var ports []string
	for _, id := range sixteenHelperPorts {
		ports = append(ports, strconv.Itoa(id))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := h1.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envSixteen+"="+strings.Join(ports, ","), envSixteenUnit+"="+h1.Ifaces[0],
		envSixteenPeer+"="+strconv.Itoa(int(n0)), envSixteenCount+"="+strconv.Itoa(sixteenMessages),
		gm.EnvHost+"="+h1.Name, gm.EnvMap+"="+mapOf(h1), gm.EnvStateDir+"="+h1.Dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var waitOnce sync.Once
	wait := func() { waitOnce.Do(func() { stdin.Close(); cmd.Wait() }) }
	t.Cleanup(func() {
		stdin.Close()
		timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
		wait()
		timer.Stop()
	})
	expect := func(prefix string) string {
		t.Helper()
		timeout := time.After(100 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("helper exited before %s", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
				if strings.HasPrefix(l, "ERROR") || strings.HasPrefix(l, "TIMEOUT") {
					t.Fatalf("helper: %s", l)
				}
			case <-timeout:
				t.Fatalf("helper: no %s", prefix)
			}
		}
	}
	ready := expect("READY ")
	helperPid, _ := strconv.Atoi(strings.TrimPrefix(ready, "READY "))
	if helperPid != cmd.Process.Pid {
		t.Fatalf("helper says %q, its pid is %d", ready, cmd.Process.Pid)
	}

	// All 16 ports of host 0 are open here, the last four of host 1 in
	// the helper.
	busy := func(h *netns.Host, id, pid int) {
		t.Helper()
		err := h.Do(func() error {
			p, err := gm.Open(h.Ifaces[0], id, "seventeenth", testConfig(h, mapOf(h)))
			if err == nil {
				p.Close()
			}
			return err
		})
		want := fmt.Sprintf("port %d of unit %s is open in process %d", id, h.Ifaces[0], pid)
		if !errors.Is(err, gm.Busy) || !strings.Contains(err.Error(), want) {
			t.Errorf("open of %s's port %d: %v\nwant Busy saying %q", h.Name, id, err, want)
		}
	}
	busy(h0, 9, os.Getpid())
	busy(h1, sixteenHelperPorts[1], helperPid)
	err = h0.Do(func() error {
		_, err := gm.Open(h0.Ifaces[0], gm.NumPorts, "seventeenth", testConfig(h0, mapOf(h0)))
		return err
	})
	if !errors.Is(err, gm.InvalidPortNumber) {
		t.Errorf("open of port %d: %v, want InvalidPortNumber", gm.NumPorts, err)
	}

	opened := time.Since(start)
	start = time.Now()
	deadline := start.Add(90 * time.Second)
	errs := make(chan error, len(mine))
	for _, v := range mine {
		go func() { errs <- v.send(sixteenOut(ss, v.node, v.id), sixteenMessages, deadline) }()
	}
	for range mine {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := sixteenDone(mine, ss, sixteenMessages, deadline); err != nil {
		t.Fatal(err)
	}
	if l := expect("DONE"); l != "DONE ok" {
		t.Fatalf("helper: %s", l)
	}
	var rx, misaddressed uint64
	for _, v := range mine[:gm.NumPorts] {
		rx += v.p.LinkStats().RxFrames
		misaddressed += v.p.Stats().Misaddressed
	}
	t.Logf("host 0's ports: %d frames received by their links, %d misaddressed", rx, misaddressed)
	// Host 0's mapper sees the 16 ports open; neither mapper answered a
	// frame as a closed port's.
	waitFor(t, 10*time.Second, "host 0's mapper listing 16 open ports", func() bool { return len(mappers[0].Status().OpenPorts) == gm.NumPorts })
	for i, d := range mappers {
		if n := d.Status().ClosedNacks; n != 0 {
			t.Errorf("host%d's mapper sent %d PORT_CLOSED nacks", i, n)
		}
	}
	t.Logf("%d ports (16 on host 0, 2 of host 1's in another process; opened in %v) exchanged %d verified messages on %d streams in %v",
		len(mine)+len(sixteenHelperPorts), opened.Round(time.Millisecond), len(ss)*sixteenMessages, len(ss), time.Since(start).Round(time.Millisecond))
	// Nothing more arrives (a late duplicate would show here).
	time.Sleep(50 * time.Millisecond)
	for _, v := range mine {
		if err := v.check(sixteenIn(ss, v.node, v.id), sixteenMessages); err != nil {
			t.Error(err)
		}
	}
	wait()
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("helper: %v", cmd.ProcessState)
	}
}
