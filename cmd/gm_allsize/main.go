package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/capture"
	"github.com/ethergm/ethergm/cmd/gm_allsize/internal/allsize"
	"github.com/ethergm/ethergm/cmd/gm_allsize/report"
	"github.com/ethergm/ethergm/gm"
)

// Exit statuses.
const (
	exitOK    = 0 // every message intact, every send succeeded
	exitFail  = 1 // data errors, failed sends, or the run stopped early
	exitUsage = 2 // bad options, or the port could not be opened
)

// errUsage marks command-line errors.
var errUsage = errors.New("usage")

// options are the parsed command line.
type options struct {
	run allsize.Options

	serve      bool
	once       bool
	remote     string
	unit       string
	port       int
	serverPort int // -1: default
	priority   string
	lengths    string
	maxBytes   string
	jsonPath   string
	csvPath    string
	plotPath   string
	baselines  []string
	title      string
	label      string
	noCRC      bool
	window     int
	pcap       *capture.Setting
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

const usageText = `Usage:
  gm_allsize [--verify] [options]                loopback run on this host (two local ports)
  gm_allsize --serve [--once] [--unit U] [--port P]   serve two-host runs
  gm_allsize --remote-host=HOST|NODE [options]   two-host run against a server

For each size class from --min-size to --max-size, gm_allsize sends the
lengths 0, 1, the powers of two of the class, the class maximum (2^size-8)
and --random random lengths of the class, at each --priority, and prints
one line per (size, length, priority):

  size 10 len     1016 prio low  iters  1000 half-rtt    12.30 us bw    512.40 MB/s

Units: len is bytes. half-rtt is half the ping-pong round trip (one message
in flight, echoed by the server) in microseconds. bw is the bandwidth with
every send token in flight, in MB/s with 1 MB = 10^6 bytes, timed from the
first send to the server's report that it received the last message. iters
is the number of timed round trips and of bandwidth messages (long messages
use fewer: --max-bytes).

A summary follows: messages, data errors, failed sends and counter deltas
(resends, nacks, drops, CRC errors). With --verify, every payload carries a
pattern derived from (size, length, sequence) and both sides check it byte
for byte; a mismatch prints "size S len L seq Q: offset O expected 0xEE got
0xGG". The exit status is 0 when every message was intact and every send
succeeded, 1 otherwise, 2 for bad options or a port that cannot be opened.

The node map, host name and state directory come from ETHERGM_MAP,
ETHERGM_HOST and ETHERGM_STATE_DIR (see package gm).

Options:
`

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{run: allsize.Defaults(), serverPort: -1}
	fs := flag.NewFlagSet("gm_allsize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	fs.BoolVar(&o.run.Verify, "verify", false, "fill payloads with a pattern and check every byte on both sides")
	fs.BoolVar(&o.run.Verify, "v", false, "short for --verify")
	fs.BoolVar(&o.serve, "serve", false, "serve two-host runs (echo, sink) until interrupted")
	fs.BoolVar(&o.once, "once", false, "with --serve: exit after one session (status 1 if it saw data errors)")
	fs.StringVar(&o.remote, "remote-host", "", "run against the server on `HOST` (a host name of the node map, or a node id)")
	fs.StringVar(&o.unit, "unit", "", "the GM `unit`: a unit name or interface list (default: $ETHERGM_UNIT, else the only interface that is up)")
	fs.IntVar(&o.port, "port", 2, "the GM `port` to open (the server's port with --serve)")
	fs.IntVar(&o.serverPort, "server-port", -1, "the server's `port`: default --port for --remote-host, the next free port for a loopback run")
	fs.IntVar(&o.run.MinSize, "min-size", allsize.DefaultMinSize, "smallest size class tested (3..30)")
	fs.IntVar(&o.run.MaxSize, "max-size", allsize.DefaultMaxSize, "largest size class tested (3..30)")
	fs.IntVar(&o.run.Iterations, "iterations", allsize.DefaultIterations, "timed round trips and bandwidth messages per length")
	fs.StringVar(&o.maxBytes, "max-bytes", "32M", "byte budget per length and measurement: a length L uses min(iterations, max(2, bytes/L)) iterations (k, M, G = 2^10, 2^20, 2^30)")
	fs.StringVar(&o.priority, "priority", "low", "priorities tested: `low`, high or both")
	fs.IntVar(&o.run.Random, "random", 1, "random lengths per size class")
	fs.Uint64Var(&o.run.Seed, "seed", 1, "seed of the random lengths")
	fs.StringVar(&o.lengths, "lengths", "", "test only these comma-separated `lengths` (k, M suffixes), each in its smallest size class")
	fs.DurationVar(&o.run.Timeout, "timeout", allsize.DefaultTimeout, "give up when the peer makes no progress for this long")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to `FILE` (- for standard output)")
	fs.StringVar(&o.csvPath, "csv", "", "also write the results as CSV to `FILE` (- for standard output)")
	fs.StringVar(&o.plotPath, "plot", "", "draw latency and bandwidth against length in `FILE`.svg (or .png, with rsvg-convert)")
	fs.Var((*listFlag)(&o.baselines), "baseline", "add the series of a baseline CSV `FILE` to the plot (columns series,length,half_rtt_us,bw_mbs; repeatable)")
	fs.StringVar(&o.title, "title", "", "plot title")
	fs.StringVar(&o.label, "label", "EtherGM", "series name prefix of the results (\"<label> low\", \"<label> high\")")
	fs.BoolVar(&o.noCRC, "no-crc-check", false, "deliver frames whose CRC32C is wrong (to test --verify itself)")
	fs.IntVar(&o.window, "window", 0, "frames in flight per stream of this side's port, 1..1024 (default: the gm default, 512)")
	o.pcap = capture.Flag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	switch o.priority {
	case "low":
		o.run.Priorities = []gm.Priority{gm.LowPriority}
	case "high":
		o.run.Priorities = []gm.Priority{gm.HighPriority}
	case "both":
		o.run.Priorities = []gm.Priority{gm.LowPriority, gm.HighPriority}
	default:
		return nil, fmt.Errorf("%w: --priority %q: want low, high or both", errUsage, o.priority)
	}
	mb, err := parseBytes(o.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: --max-bytes: %v", errUsage, err)
	}
	o.run.MaxBytes = mb
	if o.lengths != "" {
		for f := range strings.SplitSeq(o.lengths, ",") {
			l, err := parseBytes(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("%w: --lengths: %v", errUsage, err)
			}
			o.run.Lengths = append(o.run.Lengths, int(l))
		}
	}
	if err := o.run.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if o.serve && o.remote != "" {
		return nil, fmt.Errorf("%w: --serve and --remote-host exclude each other", errUsage)
	}
	if o.window < 0 || o.window > 1024 {
		return nil, fmt.Errorf("%w: --window %d: want 1..1024", errUsage, o.window)
	}
	if o.port < 0 || o.port >= gm.NumPorts {
		return nil, fmt.Errorf("%w: --port %d (ports are 0..%d)", errUsage, o.port, gm.NumPorts-1)
	}
	if strings.HasSuffix(o.plotPath, ".png") {
		if _, err := exec.LookPath("rsvg-convert"); err != nil {
			return nil, fmt.Errorf("%w: --plot %s: PNG needs rsvg-convert (Debian librsvg2-bin); write .svg instead", errUsage, o.plotPath)
		}
	}
	return o, nil
}

// parseBytes parses a byte count with an optional k, M or G suffix
// (powers of two).
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad byte count %q", s)
	}
	return n * mult, nil
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the whole command; it returns the exit status.
func run(args []string, stdout, stderr *os.File) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "gm_allsize: %v\n", strings.TrimPrefix(err.Error(), "usage: "))
		return exitUsage
	}
	stop := new(atomic.Bool)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for range sigs {
			stop.Store(true)
		}
	}()

	capt, err := o.pcap.Open()
	if err != nil {
		fmt.Fprintf(stderr, "gm_allsize: %v\n", err)
		return exitUsage
	}
	defer func() {
		if err := capt.Close(); err != nil {
			fmt.Fprintf(stderr, "gm_allsize: %v\n", err)
		}
	}()
	cfg := &gm.Config{Window: o.window}
	cfg.Link.NoCRCCheck = o.noCRC
	unit, err := gm.ResolveUnit(o.unit, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "gm_allsize: %v\n", err)
		return exitUsage
	}
	if o.serve {
		cfg.Link.Tap = capt.TapFunc()
		return serve(o, unit, cfg, stop, stdout, stderr)
	}
	return client(o, unit, cfg, capt, stop, stdout, stderr)
}

// serve runs server sessions, each on a freshly opened port, so that a
// client that vanished leaves nothing behind.
func serve(o *options, unit *gm.Unit, cfg *gm.Config, stop *atomic.Bool, stdout, stderr io.Writer) int {
	for first := true; ; first = false {
		p, err := gm.OpenUnit(unit, o.port, "gm_allsize server", cfg)
		if err != nil {
			fmt.Fprintf(stderr, "gm_allsize: open unit %s port %d: %v\n", unit.Name, o.port, err)
			if first {
				return exitUsage
			}
			return exitFail
		}
		if first {
			fmt.Fprintf(stdout, "gm_allsize: serving on host %s node %d unit %s port %d\n", p.HostName(), p.NodeID(), unit.Name, o.port)
		}
		srv := &allsize.Server{Port: p, Out: stdout, Timeout: o.run.Timeout, Stop: stop}
		res, err := srv.Session()
		p.Close()
		switch {
		case stop.Load():
			return exitOK
		case o.once && (err != nil || res.DataErrors > 0):
			return exitFail
		case o.once:
			return exitOK
		}
	}
}

// progress shows the current test point on a terminal, on one line of
// standard error that the result lines erase.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
	start time.Time
}

func (p *progress) update(done, total int, tp allsize.TestPoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if done == total {
		p.clearLocked()
		return
	}
	fmt.Fprintf(p.w, "\r\033[K[%d/%d %.0fs] size %d len %d prio %s", done+1, total,
		time.Since(p.start).Seconds(), tp.Size, tp.Length, allsize.PriorityName(tp.Priority))
	p.shown = true
}

func (p *progress) clearLocked() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// lineWriter clears the progress line before each write.
type lineWriter struct {
	w io.Writer
	p *progress
}

func (l lineWriter) Write(b []byte) (int, error) {
	if l.p != nil {
		l.p.mu.Lock()
		l.p.clearLocked()
		l.p.mu.Unlock()
	}
	return l.w.Write(b)
}

// client runs a loopback or two-host run and writes its results.
func client(o *options, unit *gm.Unit, cfg *gm.Config, capt *capture.Writer, stop *atomic.Bool, stdout, stderr *os.File) int {
	var text io.Writer = stdout
	if o.jsonPath == "-" || o.csvPath == "-" {
		text = stderr
	}
	var prog *progress
	if isTerminal(stderr) {
		prog = &progress{w: stderr, start: time.Now()}
		text = lineWriter{w: text, p: prog}
	}
	ccfg := *cfg
	ccfg.Link.Tap = capt.TapFunc()
	p, err := gm.OpenUnit(unit, o.port, "gm_allsize", &ccfg)
	if err != nil {
		fmt.Fprintf(stderr, "gm_allsize: open unit %s port %d: %v\n", unit.Name, o.port, err)
		return exitUsage
	}
	defer p.Close()

	meta := report.Meta{
		Tool: "gm_allsize", Date: time.Now().UTC(), Host: p.HostName(), Node: uint32(p.NodeID()),
		Unit: unit.Name, Port: o.port, LinkMTU: linkMTU(unit), Verify: o.run.Verify,
		MinSize: o.run.MinSize, MaxSize: o.run.MaxSize, Iterations: o.run.Iterations, MaxBytes: o.run.MaxBytes,
		Seed: o.run.Seed,
	}
	for _, pr := range o.run.Priorities {
		meta.Priorities = append(meta.Priorities, allsize.PriorityName(pr))
	}
	cl := &allsize.Client{Port: p, Opts: o.run, Series: o.label, Out: text, Stop: stop}
	if prog != nil {
		cl.Progress = prog.update
	}
	var srvPort *gm.Port
	var srvDone chan struct{}
	if o.remote == "" {
		meta.Mode = "loopback"
		srvPort, err = openServerPort(unit, o, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "gm_allsize: loopback server port: %v\n", err)
			return exitUsage
		}
		defer srvPort.Close()
		cl.Server, cl.ServerPort = p.NodeID(), srvPort.ID()
		srv := &allsize.Server{Port: srvPort, Timeout: o.run.Timeout, Stop: stop}
		srvDone = make(chan struct{})
		go func() {
			defer close(srvDone)
			_, _ = srv.Session()
		}()
	} else {
		meta.Mode = "remote"
		node, err := resolveNode(p, o.remote)
		if err != nil {
			fmt.Fprintf(stderr, "gm_allsize: --remote-host: %v\n", err)
			return exitUsage
		}
		cl.Server, cl.ServerPort = node, o.port
		if o.serverPort >= 0 {
			cl.ServerPort = o.serverPort
		}
	}
	meta.RemoteNode, meta.ServerPort = uint32(cl.Server), cl.ServerPort
	fmt.Fprintf(text, "gm_allsize: %s run, host %s node %d port %d -> node %d port %d, unit %s (MTU %d), sizes %d..%d, verify %v\n",
		meta.Mode, meta.Host, meta.Node, meta.Port, meta.RemoteNode, meta.ServerPort, strings.Join(unit.Interfaces, ","), meta.LinkMTU,
		o.run.MinSize, o.run.MaxSize, o.run.Verify)

	points, sum := cl.Run()
	if srvDone != nil {
		if sum.Error != "" {
			stop.Store(true)
		}
		<-srvDone
		// Loopback: both ports are this side's.
		if sum.Remote != nil {
			sum.Local = sum.Local.Add(*sum.Remote)
			sum.Remote = nil
		}
	}
	meta.Remote = cl.ServerHost
	for _, l := range report.SummaryLines(&sum) {
		fmt.Fprintln(text, l)
	}
	r := &report.Run{Meta: meta, Points: points, Summary: sum}
	status := exitOK
	if !sum.OK() {
		status = exitFail
	}
	if err := writeOutputs(o, r, stdout); err != nil {
		fmt.Fprintf(stderr, "gm_allsize: %v\n", err)
		status = exitFail
	}
	return status
}

// openServerPort opens the server port of a loopback run: --server-port,
// or the first free non-reserved port after --port.
func openServerPort(unit *gm.Unit, o *options, cfg *gm.Config) (*gm.Port, error) {
	if o.serverPort >= 0 {
		return gm.OpenUnit(unit, o.serverPort, "gm_allsize loopback", cfg)
	}
	var last error
	for i := 1; i < gm.NumPorts; i++ {
		id := (o.port + i) % gm.NumPorts
		if id == gm.DaemonPortID || id == gm.MapperPortID || id == gm.EthernetPortID {
			continue
		}
		p, err := gm.OpenUnit(unit, id, "gm_allsize loopback", cfg)
		if err == nil {
			return p, nil
		}
		last = err
		if !errors.Is(err, gm.Busy) {
			break
		}
	}
	return nil, fmt.Errorf("no free port: %w", last)
}

// resolveNode turns a host name or node id into a node id.
func resolveNode(p *gm.Port, s string) (gm.NodeID, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		if _, err := p.NodeIDToHostName(gm.NodeID(n)); err != nil {
			return 0, err
		}
		return gm.NodeID(n), nil
	}
	return p.HostNameToNodeID(s)
}

// linkMTU returns the MTU of the unit's first interface, 0 if unknown.
func linkMTU(u *gm.Unit) int {
	ifi, err := net.InterfaceByName(u.Interfaces[0])
	if err != nil {
		return 0
	}
	return ifi.MTU
}

// create opens path for writing; "-" is standard output.
func create(path string, stdout io.Writer) (io.Writer, func() error, error) {
	if path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// writeOutputs writes the --json, --csv and --plot files.
func writeOutputs(o *options, r *report.Run, stdout io.Writer) error {
	var errs []error
	write := func(path string, fn func(w io.Writer) error) {
		if path == "" {
			return
		}
		w, closeFn, err := create(path, stdout)
		if err == nil {
			err = errors.Join(fn(w), closeFn())
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
	}
	write(o.jsonPath, func(w io.Writer) error { return report.WriteJSON(w, r) })
	write(o.csvPath, func(w io.Writer) error { return report.WriteCSV(w, r.Points) })
	if o.plotPath != "" {
		if err := plotRun(o, r); err != nil {
			errs = append(errs, fmt.Errorf("--plot %s: %w", o.plotPath, err))
		}
	}
	return errors.Join(errs...)
}

// plotRun draws the run and the baselines.
func plotRun(o *options, r *report.Run) error {
	var baselines []report.Series
	for _, path := range o.baselines {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		s, err := report.ReadSeries(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		baselines = append(baselines, s...)
	}
	title := o.title
	if title == "" {
		title = fmt.Sprintf("gm_allsize %s: %s → %s", r.Meta.Mode, r.Meta.Host, r.Meta.Remote)
	}
	sub := fmt.Sprintf("%s, unit %s, MTU %d, sizes %d..%d", r.Meta.Date.Format("2006-01-02 15:04 MST"), r.Meta.Unit, r.Meta.LinkMTU, r.Meta.MinSize, r.Meta.MaxSize)
	svgPath := o.plotPath
	png := strings.HasSuffix(svgPath, ".png")
	if png {
		svgPath = strings.TrimSuffix(svgPath, ".png") + ".svg"
	}
	f, err := os.Create(svgPath)
	if err != nil {
		return err
	}
	err = report.WriteSVG(f, title, sub, report.PointSeries(r.Points), baselines)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || !png {
		return err
	}
	out, err := exec.Command("rsvg-convert", "-o", o.plotPath, svgPath).CombinedOutput()
	if err != nil {
		return fmt.Errorf("rsvg-convert: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
