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

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/mapper/driver"
	"github.com/ethergm/ethergm/nodemap"
)

// tools are the commands the GM part of the demo runs.
type tools struct {
	allsize, mapper, boardInfo, counters string
}

// gmDemo runs the GM part of the demo: a gm_mapper on every host, the
// report of gm_board_info once the network is fully configured, gm_allsize
// --verify on the first host and across the switch using the map the
// mappers made, and a multi-rail run during which a rail is cut.
func gmDemo(c *netns.Cluster, bin string, verbose bool) error {
	t, cleanup, err := binaries(bin)
	if err != nil {
		return err
	}
	defer cleanup()

	// Mappers: one per host, for all its interfaces.
	fmt.Printf("\nMappers: gm_mapper --unit <all interfaces> on every host; they elect one, which maps the network\n")
	began := time.Now()
	for _, h := range c.Hosts {
		p, err := h.Start(t.mapper, "--unit", strings.Join(h.Ifaces, ","), "--hostname", h.Name,
			"--state-dir", h.Dir, "--hosts-file", filepath.Join(h.Dir, "lib", "hosts"))
		if err != nil {
			return err
		}
		defer p.Stop()
	}
	version, err := waitConfigured(c, 30*time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("network fully configured %v after the first gm_mapper started: map version %d on all %d hosts\n",
		time.Since(began).Round(time.Millisecond), version, len(c.Hosts))
	a := c.Hosts[0]
	fmt.Printf("\n%s: gm_board_info\n", a.Name)
	out, err := runIn(a, 30*time.Second, boardInfo(t, a)...)
	if err != nil {
		return fmt.Errorf("gm_board_info: %w\n%s", err, out)
	}
	printIndented(out, func(l string) bool { return !strings.HasSuffix(l, ": FREE") })

	// env returns the command line that runs gm_allsize as host h, with
	// the map its gm_mapper wrote (STATE-DIR/map).
	env := func(h *netns.Host, args ...string) []string {
		return append([]string{t.allsize, "--hostname", h.Name, "--state-dir", h.Dir}, args...)
	}

	fmt.Printf("\n%s: gm_allsize --verify (loopback between two ports of one host, every byte checked)\n", a.Name)
	out, err = runIn(a, 2*time.Minute, env(a, "--verify", "--unit", a.Ifaces[0], "--min-size", "3", "--max-size", "16", "--iterations", "200", "--priority", "both")...)
	printSummary(out, verbose)
	if err != nil {
		return fmt.Errorf("gm_allsize --verify on %s: %w", a.Name, err)
	}

	b := c.Hosts[len(c.Hosts)-1]
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
	return railsDemo(c, t, env)
}

// railsDemo runs a two-host multi-rail transfer (both interfaces in the
// unit), cuts the server's second rail while it runs, prints the new map
// the mappers install and the transfer's result, then restores the rail.
func railsDemo(c *netns.Cluster, t *tools, env func(*netns.Host, ...string) []string) error {
	a, b := c.Hosts[0], c.Hosts[1]
	unit := strings.Join(a.Ifaces[:2], ",")
	fmt.Printf("\nmulti-rail: %s serves, %s measures with --unit %s on both (large messages striped over both rails);\n", b.Name, a.Name, unit)
	fmt.Printf("%s's eth1 is cut while the transfer runs\n", b.Name)
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
	v0, _ := mapVersion(a)
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := runIn(a, 5*time.Minute, env(a, "--remote-host="+b.Name, "--unit", unit, "--verify", "--min-size", "3", "--max-size", "21",
			"--iterations", "3000", "--max-bytes", "1G", "--lengths", "64k,1M")...)
		done <- result{out, err}
	}()
	time.Sleep(3 * time.Second) // into the striped 64 KiB messages
	cut := time.Now()
	if err := b.LinkDown(1); err != nil {
		return err
	}
	fmt.Printf("  %s: ip link set eth1 down\n", b.Name)
	if v, err := waitNewVersion(c, v0, 10*time.Second); err != nil {
		fmt.Printf("  no new map within 10 s: %v\n", err)
	} else {
		fmt.Printf("  new map version %d installed on every host %v after the cut\n", v, time.Since(cut).Round(time.Millisecond))
	}
	r := <-done
	printSummary(r.out, true)
	if r.err != nil {
		return fmt.Errorf("gm_allsize --remote-host=%s --unit %s: %w\n%s", b.Name, unit, r.err, srv.Output())
	}
	after, err := ifaceCounters(a)
	if err != nil {
		return err
	}
	for i, name := range a.Ifaces[:2] {
		fmt.Printf("  %s %s: %d frames sent, %d received\n", a.Name, name, after[i][0]-before[i][0], after[i][1]-before[i][1])
	}
	fmt.Printf("  routes from %s to %s now: %s\n", a.Name, b.Name, routesTo(a, b))
	v1, _ := mapVersion(a)
	up := time.Now()
	if err := b.LinkUp(1); err != nil {
		return err
	}
	if v, err := waitNewVersion(c, v1, 10*time.Second); err == nil {
		fmt.Printf("  %s: ip link set eth1 up; map version %d installed on every host %v later\n", b.Name, v, time.Since(up).Round(time.Millisecond))
		time.Sleep(time.Second)
		fmt.Printf("  routes from %s to %s now: %s\n", a.Name, b.Name, routesTo(a, b))
	}
	out, err := runIn(a, 30*time.Second, t.counters, "--unit", a.Ifaces[0])
	if err == nil {
		fmt.Printf("\n%s: gm_counters (the unit's counters across its processes; only the mapper runs now)\n", a.Name)
		printIndented(out, func(l string) bool { return !strings.HasSuffix(strings.TrimSpace(l), " 0") })
	}
	return nil
}

// routesTo describes the routes of a's map to host b: "MAC via iface, ...".
func routesTo(a, b *netns.Host) string {
	m, err := readMap(a)
	if err != nil {
		return err.Error()
	}
	e, ok := m.ByHost(b.Name)
	if !ok {
		return "none: " + b.Name + " is not in the map"
	}
	var out []string
	for i, mac := range a.MACs {
		if peer, ok := m.PeerMAC(0, e.ID, nodemap.MAC(mac)); ok {
			out = append(out, nodemap.FormatMAC(peer)+" via "+a.Ifaces[i])
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func boardInfo(t *tools, h *netns.Host) []string {
	return []string{t.boardInfo, "--unit", strings.Join(h.Ifaces, ","), "--hostname", h.Name, "--state-dir", h.Dir}
}

func readMap(h *netns.Host) (*nodemap.Map, error) {
	data, err := os.ReadFile(filepath.Join(h.Dir, "map"))
	if err != nil {
		return nil, err
	}
	return nodemap.Parse(data)
}

func mapVersion(h *netns.Host) (uint32, error) {
	m, err := readMap(h)
	if err != nil {
		return 0, err
	}
	return m.Version, nil
}

// mapperStatus asks h's gm_mapper for its status.
func mapperStatus(h *netns.Host) (driver.Status, error) {
	var st driver.Status
	err := h.Do(func() error {
		_, err := ctl.Query(ctl.MapperName(h.Ifaces[0]), &st)
		return err
	})
	return st, err
}

// waitConfigured waits until every host's gm_mapper reports the same map
// version, fully configured, with every host in it.
func waitConfigured(c *netns.Cluster, timeout time.Duration) (uint32, error) {
	deadline := time.Now().Add(timeout)
	for {
		var v uint32
		ok := true
		for i, h := range c.Hosts {
			st, err := mapperStatus(h)
			if err != nil || !st.Configured || st.Hosts != len(c.Hosts) || (i > 0 && st.MapVersion != v) {
				ok = false
				break
			}
			v = st.MapVersion
		}
		if ok {
			return v, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the network is not fully configured after %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitNewVersion waits until every host's map file has a version other
// than old, the same on all hosts.
func waitNewVersion(c *netns.Cluster, old uint32, timeout time.Duration) (uint32, error) {
	deadline := time.Now().Add(timeout)
	for {
		var v uint32
		ok := true
		for i, h := range c.Hosts {
			hv, err := mapVersion(h)
			if err != nil || hv == old || (i > 0 && hv != v) {
				ok = false
				break
			}
			v = hv
		}
		if ok {
			return v, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("map version still %d after %v", old, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// printIndented prints the lines of out that keep accepts, indented.
func printIndented(out string, keep func(string) bool) {
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if keep(l) {
			fmt.Println("  " + l)
		}
	}
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

// binaries returns the commands the demo runs: from dir if given, else
// the ones next to this program (make build and make install put them
// together), else built into a temporary folder that cleanup removes.
func binaries(dir string) (*tools, func(), error) {
	names := []string{"gm_allsize", "gm_mapper", "gm_board_info", "gm_counters"}
	cleanup := func() {}
	if dir == "" {
		if self, err := os.Executable(); err == nil {
			here := filepath.Dir(self)
			all := true
			for _, n := range names {
				all = all && isExecutable(filepath.Join(here, n))
			}
			if all {
				dir = here
			}
		}
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "egm-demo-")
		if err != nil {
			return nil, nil, err
		}
		cleanup = func() { os.RemoveAll(tmp) }
		for _, n := range names {
			cmd := exec.Command("go", "build", "-o", filepath.Join(tmp, n), "github.com/ethergm/ethergm/cmd/"+n)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				cleanup()
				return nil, nil, fmt.Errorf("building %s (or pass --bin): %v\n%s", n, err, out)
			}
		}
		dir = tmp
	}
	var paths []string
	for _, n := range names {
		p, err := filepath.Abs(filepath.Join(dir, n))
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("no %s in %s: %w", n, dir, err)
		}
		paths = append(paths, p)
	}
	return &tools{allsize: paths[0], mapper: paths[1], boardInfo: paths[2], counters: paths[3]}, cleanup, nil
}

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
