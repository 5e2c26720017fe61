package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/bench/internal/runner"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
)

// config holds the command-line settings.
type config struct {
	results    string
	reps       int
	mtus       []int
	clientCPU  int
	serverCPU  int
	minSize    int
	maxSize    int
	iterations int
	ppTime     time.Duration
	tpTime     time.Duration
	readme     string
}

func parseConfig(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("allsize", flag.ContinueOnError)
	def := os.Getenv("RESULTS")
	if def == "" {
		def = "results"
	}
	fs.StringVar(&c.results, "results", def, "results `directory`; the run writes into <dir>/allsize-<date>/ (default $RESULTS or results)")
	fs.IntVar(&c.reps, "reps", 3, "repetitions (interleaved)")
	mtus := fs.String("mtus", "1500,9000", "comma-separated MTUs, one two-host path each")
	fs.DurationVar(&c.ppTime, "pp-time", 2*time.Second, "duration of each sockperf ping-pong run")
	fs.DurationVar(&c.tpTime, "tp-time", 3*time.Second, "duration of each sockperf throughput run")
	fs.IntVar(&c.clientCPU, "client-cpu", 0, "CPU of the clients (taskset)")
	fs.IntVar(&c.serverCPU, "server-cpu", 1, "CPU of the servers (taskset)")
	fs.IntVar(&c.minSize, "min-size", 4, "gm_allsize --min-size")
	fs.IntVar(&c.maxSize, "max-size", 21, "gm_allsize --max-size")
	fs.IntVar(&c.iterations, "iterations", 1000, "gm_allsize --iterations")
	fs.StringVar(&c.readme, "readme", "", "update the results section of this README `file` and copy the plot next to it")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for f := range strings.SplitSeq(*mtus, ",") {
		m, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || m < 576 || m > 65535 {
			return nil, fmt.Errorf("-mtus: bad MTU %q", f)
		}
		c.mtus = append(c.mtus, m)
	}
	if c.reps < 1 {
		return nil, errors.New("-reps must be at least 1")
	}
	return c, nil
}

func main() {
	cfg, err := parseConfig(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "allsize: %v\n", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "allsize: %v\n", err)
		os.Exit(1)
	}
}

// path is one two-host path: two namespaces joined by a veth pair.
type path struct {
	mtu     int
	cl      *netns.Cluster
	client  *netns.Host // host0: every client
	server  *netns.Host // host1: every server
	mapFile string
}

// bench is the state of a run.
type bench struct {
	cfg   *config
	dir   string // the results folder of this run
	bin   string // gm_allsize
	log   io.Writer
	stop  *atomic.Bool
	paths []*path
}

func run(cfg *config) error {
	if err := runner.CheckTools("NPtcp", "sockperf", "taskset"); err != nil {
		return err
	}
	goTool, err := runner.GoTool()
	if err != nil {
		return err
	}
	start := time.Now()
	dir, logf, err := runner.NewResultsDir(cfg.results, "allsize", "bench.log", start)
	if err != nil {
		return err
	}
	defer logf.Close()
	stop, stopSignals := runner.StopOnSignal()
	defer stopSignals()
	b := &bench{cfg: cfg, dir: dir, log: logf, stop: stop}

	tmp, err := os.MkdirTemp("", "allsize-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b.bin = filepath.Join(tmp, "gm_allsize")
	fmt.Fprintf(os.Stderr, "building gm_allsize\n")
	if err := runner.GoBuild(goTool, tmp, "github.com/ethergm/ethergm/cmd/gm_allsize"); err != nil {
		return err
	}

	defer b.closePaths()
	for _, mtu := range cfg.mtus {
		p, err := b.newPath(mtu)
		if err != nil {
			return err
		}
		b.paths = append(b.paths, p)
	}
	res := &Results{Machine: describeMachine(), Started: start.UTC(), LoadStart: loadAvg(), Config: ConfigRecord{
		Reps: cfg.reps, MTUs: cfg.mtus, ClientCPU: cfg.clientCPU, ServerCPU: cfg.serverCPU,
		MinSize: cfg.minSize, MaxSize: cfg.maxSize, Iterations: cfg.iterations,
	}}
	for _, p := range b.paths {
		res.Paths = append(res.Paths, &PathResult{MTU: p.mtu, UDPDatagram: p.mtu - 28})
	}
	for rep := 1; rep <= cfg.reps; rep++ {
		for _, p := range b.paths {
			if err := b.repetition(p, rep, res); err != nil {
				return fmt.Errorf("MTU %d repetition %d: %w", p.mtu, rep, err)
			}
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.LoadEnd = loadAvg()
	res.compute()
	table := res.Markdown()
	fmt.Print(table)
	if err := res.write(dir); err != nil {
		return err
	}
	if cfg.readme != "" {
		if err := res.updateReadme(cfg.readme, dir); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "results in %s (%.0f s)\n", dir, res.Seconds)
	if len(res.Failures) > 0 {
		return fmt.Errorf("%d measurements failed (see results.json and bench.log): %s", len(res.Failures), strings.Join(res.Failures, "; "))
	}
	return nil
}

func (b *bench) newPath(mtu int) (*path, error) {
	cl, err := netns.NewCluster(netns.Options{Hosts: 2, Direct: true, MTU: mtu})
	if err != nil {
		return nil, err
	}
	p := &path{mtu: mtu, cl: cl, client: cl.Hosts[0], server: cl.Hosts[1]}
	if p.mapFile, err = gmmap.WriteInto(cl); err != nil {
		cl.Close()
		return nil, err
	}
	fmt.Fprintf(b.log, "== path MTU %d: %s (%s) <-> %s (%s)\n", mtu, p.client.Name, p.client.Addrs[0], p.server.Name, p.server.Addrs[0])
	return p, nil
}

func (b *bench) closePaths() {
	for _, p := range b.paths {
		if err := p.cl.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "allsize: %v\n", err)
		}
	}
}

// interrupted reports whether a signal asked the run to stop.
func (b *bench) interrupted() error {
	if b.stop.Load() {
		return errors.New("stopped by a signal")
	}
	return nil
}

// repetition runs every measurement once on p. A measurement that fails
// is recorded in res.Failures and left out of the medians; only an
// interruption stops the run.
func (b *bench) repetition(p *path, rep int, res *Results) error {
	var r *PathResult
	for _, x := range res.Paths {
		if x.MTU == p.mtu {
			r = x
		}
	}
	steps := []struct {
		name string
		fn   func() error
	}{
		{"gm_allsize", func() error {
			pts, err := b.gmAllsize(p, rep)
			if err == nil {
				r.EtherGM = append(r.EtherGM, pts)
			}
			return err
		}},
		{"NPtcp", func() error {
			s, err := b.netpipe(p, rep)
			if err == nil {
				r.TCP = append(r.TCP, s)
			}
			return err
		}},
		{"sockperf pp", func() error {
			s, err := b.udpPingPong(p, r.UDPDatagram)
			if err == nil {
				r.UDPPingPong = append(r.UDPPingPong, s)
			}
			return err
		}},
		{"sockperf tp", func() error {
			s, err := b.udpThroughput(p, r.UDPDatagram)
			if err == nil {
				r.UDPThroughput = append(r.UDPThroughput, s)
			}
			return err
		}},
	}
	for _, s := range steps {
		if err := b.interrupted(); err != nil {
			return err
		}
		t0 := time.Now()
		fmt.Fprintf(os.Stderr, "MTU %d rep %d/%d: %s ... ", p.mtu, rep, b.cfg.reps, s.name)
		fmt.Fprintf(b.log, "\n=== MTU %d rep %d: %s\n", p.mtu, rep, s.name)
		if err := s.fn(); err != nil {
			fmt.Fprintf(os.Stderr, "failed: %v\n", err)
			fmt.Fprintf(b.log, "FAILED: %v\n", err)
			res.Failures = append(res.Failures, fmt.Sprintf("MTU %d rep %d %s: %v", p.mtu, rep, s.name, err))
			continue
		}
		fmt.Fprintf(os.Stderr, "%.1f s\n", time.Since(t0).Seconds())
	}
	return nil
}
