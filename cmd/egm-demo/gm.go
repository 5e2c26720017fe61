package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethergm/ethergm/tests/netns"
	"github.com/ethergm/ethergm/tests/netns/gmmap"
)

// gmDemo runs the GM part of the demo: the shared node map, gm_allsize
// --verify on the first host, and a two-host gm_allsize run.
func gmDemo(c *netns.Cluster, bin string, verbose bool) error {
	allsize, cleanup, err := allsizeBinary(bin)
	if err != nil {
		return err
	}
	defer cleanup()

	mapPath, err := gmmap.WriteInto(c)
	if err != nil {
		return err
	}
	fmt.Printf("\nGM ports. Node map %s (what a mapper would write; every host reads it):\n", mapPath)
	data, _ := os.ReadFile(mapPath)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fmt.Println("  " + line)
	}

	a, b := c.Hosts[0], c.Hosts[len(c.Hosts)-1]
	// env returns the command line that runs gm_allsize as host h.
	env := func(h *netns.Host, args ...string) []string {
		return append([]string{allsize, "--hostname", h.Name, "--state-dir", h.Dir, "--map-file", mapPath}, args...)
	}

	fmt.Printf("\n%s: gm_allsize --verify (loopback between two ports of one host, every byte checked)\n", a.Name)
	out, err := runIn(a, 2*time.Minute, env(a, "--verify", "--unit", a.Ifaces[0], "--min-size", "3", "--max-size", "16", "--iterations", "200", "--priority", "both")...)
	printSummary(out, verbose)
	if err != nil {
		return fmt.Errorf("gm_allsize --verify on %s: %w", a.Name, err)
	}

	fmt.Printf("\n%s serves, %s measures: gm_allsize --remote-host=%s --verify, size classes 3..21, unit eth0, across the switch\n", b.Name, a.Name, b.Name)
	srv, err := start(b, env(b, "--serve", "--once", "--unit", b.Ifaces[0]))
	if err != nil {
		return err
	}
	defer srv.Stop()
	if err := waitFor(srv, "serving on", 10*time.Second); err != nil {
		return err
	}
	out, err = runIn(a, 3*time.Minute, env(a, "--remote-host="+b.Name, "--unit", a.Ifaces[0], "--verify", "--min-size", "3", "--max-size", "21", "--iterations", "500", "--lengths", "0,8,64,1k,4k,64k,1M")...)
	printSummary(out, true)
	if err != nil {
		return fmt.Errorf("gm_allsize --remote-host=%s: %w\n%s", b.Name, err, srv.Output())
	}
	srv.Stop()
	return railsDemo(a, b, env)
}

// railsDemo repeats the two-host run with both interfaces in the unit
// ("eth0,eth1") and prints how many frames each of the client's interfaces
// sent and received.
func railsDemo(a, b *netns.Host, env func(*netns.Host, ...string) []string) error {
	unit := strings.Join(a.Ifaces[:2], ",")
	fmt.Printf("\nmulti-rail: the same run with --unit %s on both hosts (large messages striped in 32-frame chunks)\n", unit)
	srv, err := start(b, env(b, "--serve", "--once", "--unit", unit))
	if err != nil {
		return err
	}
	defer srv.Stop()
	if err := waitFor(srv, "serving on", 10*time.Second); err != nil {
		return err
	}
	before, err := ifaceCounters(a)
	if err != nil {
		return err
	}
	out, err := runIn(a, 3*time.Minute, env(a, "--remote-host="+b.Name, "--unit", unit, "--verify", "--min-size", "3", "--max-size", "21", "--iterations", "500", "--lengths", "8,64k,1M")...)
	printSummary(out, true)
	if err != nil {
		return fmt.Errorf("gm_allsize --remote-host=%s --unit %s: %w\n%s", b.Name, unit, err, srv.Output())
	}
	after, err := ifaceCounters(a)
	if err != nil {
		return err
	}
	for i, name := range a.Ifaces[:2] {
		fmt.Printf("  %s %s: %d frames sent, %d received\n", a.Name, name, after[i][0]-before[i][0], after[i][1]-before[i][1])
	}
	return nil
}

// ifaceCounters returns tx_packets and rx_packets of h's first two
// interfaces.
func ifaceCounters(h *netns.Host) ([2][2]uint64, error) {
	var c [2][2]uint64
	for i, name := range h.Ifaces[:2] {
		for j, f := range []string{"tx_packets", "rx_packets"} {
			out, err := h.Run("cat", "/sys/class/net/"+name+"/statistics/"+f)
			if err != nil {
				return c, err
			}
			if _, err := fmt.Sscan(out, &c[i][j]); err != nil {
				return c, fmt.Errorf("%s %s: %w", name, f, err)
			}
		}
	}
	return c, nil
}

// allsizeBinary returns the path of gm_allsize: from dir if given, else
// the one next to this program (make install puts them together), else
// built into a temporary folder that cleanup removes.
func allsizeBinary(dir string) (string, func(), error) {
	if dir == "" {
		if self, err := os.Executable(); err == nil {
			if p := filepath.Join(filepath.Dir(self), "gm_allsize"); isExecutable(p) {
				return p, func() {}, nil
			}
		}
	}
	if dir != "" {
		p, err := filepath.Abs(filepath.Join(dir, "gm_allsize"))
		if err != nil {
			return "", nil, err
		}
		if _, err := os.Stat(p); err != nil {
			return "", nil, fmt.Errorf("no gm_allsize in %s: %w", dir, err)
		}
		return p, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "egm-demo-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	p := filepath.Join(tmp, "gm_allsize")
	cmd := exec.Command("go", "build", "-o", p, "github.com/ethergm/ethergm/cmd/gm_allsize")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building gm_allsize (or pass --bin DIR): %v\n%s", err, out)
	}
	return p, cleanup, nil
}

// start starts the command line args in h.
func start(h *netns.Host, args []string) (*netns.Proc, error) { return h.Start(args[0], args[1:]...) }

// isExecutable reports whether p is an executable regular file.
func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// runIn runs the command line args in h and returns its output.
func runIn(h *netns.Host, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := h.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("timed out after %v", timeout)
	}
	return string(out), err
}

func waitFor(p *netns.Proc, text string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.Output(), text) {
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited: %v\n%s", p, p.Wait(), p.Output())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v:\n%s", p, timeout, p.Output())
		}
	}
	return nil
}

// printSummary prints gm_allsize's output indented: every line when all is
// true, else only the first and last result lines and the summary.
func printSummary(out string, all bool) {
	var results, rest []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "size ") {
			results = append(results, sc.Text())
		} else {
			rest = append(rest, sc.Text())
		}
	}
	if !all && len(results) > 4 {
		fmt.Printf("  %s\n  %s\n  ... %d lines ...\n  %s\n", results[0], results[1], len(results)-3, results[len(results)-1])
	} else {
		for _, l := range results {
			fmt.Println("  " + l)
		}
	}
	for _, l := range rest {
		if strings.TrimSpace(l) != "" {
			fmt.Println("  " + l)
		}
	}
}
