package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ethergm/ethergm/bench/internal/runner"
)

// config holds the command-line settings.
type config struct {
	reps       int
	ppRuns     int
	n, warmup  int
	ppTime     time.Duration
	streamTime time.Duration
	npRepeats  int
	clientCPU  int
	serverCPU  int
	nice       int
	udpBuf     int
	binDir     string
	outDir     string
	only       string
	verbose    bool
}

func main() {
	var c config
	flag.IntVar(&c.reps, "reps", 5, "interleaved repetitions")
	flag.IntVar(&c.ppRuns, "pp-runs", 3, "runs of each polled ring ping-pong (floor, link, gm) per repetition; the repetition's figure is their median")
	flag.IntVar(&c.n, "n", 50000, "measured round trips per ping-pong run (floor, link, gm)")
	flag.IntVar(&c.warmup, "warmup", 5000, "warm-up round trips per ping-pong run (floor, link, gm)")
	flag.DurationVar(&c.ppTime, "pp-time", 4*time.Second, "sockperf ping-pong duration per run")
	flag.DurationVar(&c.streamTime, "stream-time", 3*time.Second, "streaming duration per run (link, floor, gm, sockperf tp)")
	flag.IntVar(&c.npRepeats, "np-repeats", 5000, "NPtcp round trips per trial (-n)")
	flag.IntVar(&c.clientCPU, "client-cpu", 0, "CPU for clients and senders")
	flag.IntVar(&c.serverCPU, "server-cpu", 1, "CPU for servers and receivers")
	flag.IntVar(&c.udpBuf, "udp-buffer", 4<<20, "sockperf --buffer-size for UDP streaming, capped at net.core.rmem_max (the kernel doubles it; the link's default ring is 8 MiB); 0 = system default")
	flag.IntVar(&c.nice, "nice", 0, "nice level of every benchmark process, all tools alike (e.g. -20 on a machine with background load); 0 = unchanged")
	flag.StringVar(&c.binDir, "bin", "", "directory with prebuilt egm-floor, egm-linkperf and egm-gmperf (default: go build them)")
	flag.StringVar(&c.outDir, "out", "results", "parent directory of the results folder bench-<date>")
	flag.StringVar(&c.only, "only", "", "comma-separated subset of "+strings.Join(names(), ","))
	flag.BoolVar(&c.verbose, "v", false, "print every command and its output")
	flag.Parse()
	if err := run(&c); err != nil {
		fmt.Fprintf(os.Stderr, "egm-bench: %v\n", err)
		if errors.Is(err, errInterrupted) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

var (
	// errMeasure marks a run in which at least one measurement failed.
	errMeasure = errors.New("some measurements failed (see the table and raw.log)")
	// errInterrupted is returned after SIGINT or SIGTERM.
	errInterrupted = errors.New("interrupted; namespaces and processes removed")
)

func run(c *config) error {
	if os.Geteuid() != 0 {
		return errors.New("must run as root (network namespaces, raw sockets): sudo make bench")
	}
	if c.reps < 1 {
		return errors.New("-reps must be at least 1")
	}
	if c.ppRuns < 1 {
		return errors.New("-pp-runs must be at least 1")
	}
	selected, err := selectSpecs(c.only)
	if err != nil {
		return err
	}
	if err := checkTools(selected); err != nil {
		return err
	}
	mach := describeMachine()
	if rmax, err := strconv.Atoi(strings.TrimSpace(readFile("/proc/sys/net/core/rmem_max"))); err == nil && c.udpBuf > rmax {
		c.udpBuf = rmax
	}

	interrupted, stopSignals := runner.StopOnSignal()
	defer stopSignals()

	start := time.Now()
	dir, logf, err := runner.NewResultsDir(c.outDir, "bench", "raw.log", start)
	if err != nil {
		return err
	}
	defer logf.Close()

	nets, closeNets, err := openNets(selected)
	if err != nil {
		return err
	}
	defer func() {
		if err := closeNets(); err != nil {
			fmt.Fprintf(os.Stderr, "egm-bench: cleanup: %v\n", err)
		}
	}()
	var ids []string
	var tmp string
	for _, name := range []string{netDirect, netMTU9000, netRelay, netIncast} {
		if p := nets[name]; p != nil {
			ids = append(ids, p.cl.ID+netLabel(name))
			if tmp == "" {
				tmp = p.cl.Dir
			}
		}
	}
	bins, err := binaries(c.binDir, filepath.Join(tmp, "bin"))
	if err != nil {
		return err
	}
	var logw io.Writer = logf
	if c.verbose {
		logw = io.MultiWriter(logf, os.Stderr)
	}
	b := &bench{cfg: c, bins: bins, log: logw, tmp: tmp, nets: nets}
	fmt.Printf("egm-bench: %s, %d CPUs, kernel %s, %s; %d reps; clusters %s\n",
		mach.CPU, mach.NProc, mach.Kernel, runtime.Version(), c.reps, strings.Join(ids, ", "))
	var load1 float64
	if _, err := fmt.Sscan(mach.LoadBefore, &load1); err == nil && load1 >= 1 {
		fmt.Printf("note: 1-minute load average %.2f: other work may be running\n", load1)
	}
	cpu0, cpuOK := sampleCPU()

	res := newResults(selected, c.reps)
	for rep := range c.reps {
		for _, s := range selected {
			if interrupted.Load() {
				fmt.Println()
				return errInterrupted
			}
			fmt.Printf("  rep %d/%d %-19s ", rep+1, c.reps, s.name)
			t0 := time.Now()
			var vals map[string]float64
			bn, err := b.on(s.net)
			if err == nil {
				vals, err = s.measure(bn, rep, c.ppRuns)
			}
			if err != nil && interrupted.Load() {
				fmt.Println()
				return errInterrupted
			}
			if err != nil {
				fmt.Printf("ERROR %v\n", err)
				fmt.Fprintf(logw, "### rep %d %s: ERROR %v\n", rep+1, s.name, err)
				res.fail(s, rep, err)
			} else {
				fmt.Printf("%s (%.1fs)\n", s.brief(vals), time.Since(t0).Seconds())
				res.set(s, rep, vals)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	mach.LoadAfter = loadAvg()
	mach.Seconds = time.Since(start).Seconds()
	mach.OtherCPU = -1
	if cpu1, ok := sampleCPU(); ok && cpuOK {
		mach.OtherCPU, mach.Steal = interference(cpu0, cpu1, mach.NProc)
	}
	rep := res.report(mach, c)
	fmt.Println()
	fmt.Print(rep.text())
	if err := rep.write(dir); err != nil {
		return err
	}
	fmt.Printf("\nresults: %s\n", dir)
	if res.failed {
		return errMeasure
	}
	return nil
}

// checkTools fails with one line naming what the selected measurements
// need and is missing.
func checkTools(selected []*spec) error {
	tools := []string{"taskset", "nice", "ip"}
	for _, s := range selected {
		for _, t := range s.tools {
			if !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
	}
	if err := runner.CheckTools(tools...); err != nil {
		return err
	}
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("needs at least 2 CPUs (client and server are pinned apart), have %d", runtime.NumCPU())
	}
	return nil
}

// binaries returns the paths of egm-floor, egm-linkperf and egm-gmperf: from binDir if
// given, else built with the Go toolchain into out.
func binaries(binDir, out string) (map[string]string, error) {
	tools := []string{"egm-floor", "egm-linkperf", "egm-gmperf"}
	bins := map[string]string{}
	if binDir != "" {
		for _, t := range tools {
			p, err := filepath.Abs(filepath.Join(binDir, t))
			if err != nil {
				return nil, err
			}
			if _, err := os.Stat(p); err != nil {
				return nil, fmt.Errorf("-bin %s: %w", binDir, err)
			}
			bins[t] = p
		}
		// egm-cperf is C on libgm: `make bench` builds it; without it
		// the C measurements fail and the others run.
		if p, err := filepath.Abs(filepath.Join(binDir, "egm-cperf")); err == nil {
			if _, err := os.Stat(p); err == nil {
				bins["egm-cperf"] = p
			}
		}
		return bins, nil
	}
	goTool, err := runner.GoTool()
	if err != nil {
		return nil, err
	}
	var pkgs []string
	for _, t := range tools {
		pkgs = append(pkgs, "github.com/ethergm/ethergm/bench/cmd/"+t)
		bins[t] = filepath.Join(out, t)
	}
	if err := runner.GoBuild(goTool, out, pkgs...); err != nil {
		return nil, err
	}
	p, err := buildCPerf(goTool, out)
	if err != nil {
		return nil, err
	}
	bins["egm-cperf"] = p
	return bins, nil
}

// buildCPerf builds libgm (scripts/libgm.sh) and egm-cperf, the C
// benchmark program on it, into out, from the repository the Go toolchain
// runs in, and returns egm-cperf's path.
func buildCPerf(goTool, out string) (string, error) {
	o, err := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("finding the repository for libgm: %v", err)
	}
	root := strings.TrimSpace(string(o))
	lib := filepath.Join(out, "libgm")
	cmd := exec.Command(filepath.Join(root, "scripts", "libgm.sh"), "build", lib)
	cmd.Env = append(os.Environ(), "GO="+goTool)
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building libgm: %v: %s", err, strings.TrimSpace(string(o)))
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	bin := filepath.Join(out, "egm-cperf")
	libDir := filepath.Join(lib, "lib")
	cmd = exec.Command(cc, "-O2", "-Wall", "-I", filepath.Join(lib, "include"), filepath.Join(root, "bench", "cperf", "egm-cperf.c"),
		"-L", libDir, "-lgm", "-Wl,-rpath,"+libDir, "-o", bin)
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building egm-cperf (C; scripts/deps.sh bench installs gcc): %v: %s", err, strings.TrimSpace(string(o)))
	}
	return bin, nil
}
