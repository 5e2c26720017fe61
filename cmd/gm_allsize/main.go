package main

import (
	"errors"
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
	"github.com/ethergm/ethergm/internal/cli"
)

// Exit statuses.
const (
	exitOK    = cli.ExitOK      // every message intact, every send succeeded
	exitFail  = cli.ExitFailure // data errors, failed sends, a port that could not be opened, or a run that stopped early
	exitUsage = cli.ExitUsage   // bad command line
)

// options are the parsed command line.
type options struct {
	run allsize.Options

	serve      bool
	once       bool
	remote     string
	unit       string
	port       int
	remotePort int // -1: default
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
	verbose    int
	cfg        gm.Config
	pcap       *capture.Setting
}

const description = `Verify and benchmark EtherGM for every message size: a loopback run on
this host (the first form), a server for two-host runs (--serve), or a
two-host run against a server (--remote-host).

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

A server needs only --unit and --port: the client sends it the run's
parameters.

A summary follows: messages, data errors, failed sends and counter deltas
(resends, nacks, drops, CRC errors). With --verify, every payload carries a
pattern derived from (size, length, sequence) and both sides check it byte
for byte; a mismatch prints "size S len L seq Q: offset O expected 0xEE got
0xGG".

Exit status: 0 when every message was intact and every send succeeded, 1
otherwise (or when a port could not be opened), 2 for a bad command line.`

// newCommand returns gm_allsize's command line, filling o.
func newCommand(o *options, stdout, stderr io.Writer) *cli.Command {
	*o = options{run: allsize.Defaults()}
	c := cli.New("gm_allsize", stdout, stderr)
	c.Synopsis(
		"[--verify] [OPTION]...",
		"--serve [--once] [--unit UNIT] [--port PORT]",
		"--remote-host HOST [--verify] [OPTION]...")
	c.Description(description)
	fs := c.Flags
	fs.BoolVar(&o.run.Verify, "verify", false, "fill payloads with a pattern and check every byte on both sides")
	fs.BoolVar(&o.serve, "serve", false, "serve two-host runs (echo, sink) until interrupted")
	fs.BoolVar(&o.once, "once", false, "with --serve: exit after one session (status 1 if it saw data errors)")
	c.RemoteHostFlag(&o.remote, "run against the server on `HOST` (a host name of the node map, or a node id)")
	c.UnitFlag(&o.unit, "")
	c.PortFlag(&o.port, 2, "the GM `PORT` to open, 2 or 4..15 (the server's port with --serve)")
	o.remotePort = -1
	fs.Var(remotePortValue{&o.remotePort}, "remote-port",
		"the server's `PORT` (default: --port for --remote-host, the next free port for a loopback run)")
	c.GMFlags(&o.cfg)
	fs.IntVar(&o.run.MinSize, "min-size", allsize.DefaultMinSize, "smallest size class tested (3..30)")
	fs.IntVar(&o.run.MaxSize, "max-size", allsize.DefaultMaxSize, "largest size class tested (3..30)")
	fs.IntVar(&o.run.Iterations, "iterations", allsize.DefaultIterations, "timed round trips and bandwidth messages per length")
	fs.StringVar(&o.maxBytes, "max-bytes", "32M", "byte budget per length and measurement: a length L uses min(iterations, max(2, `BYTES`/L)) iterations (k, M, G = 2^10, 2^20, 2^30)")
	fs.StringVar(&o.priority, "priority", "low", "priorities tested: `low`, high or both")
	fs.IntVar(&o.run.Random, "random", 1, "random lengths per size class")
	fs.Uint64Var(&o.run.Seed, "seed", 1, "seed of the random lengths")
	fs.StringVar(&o.lengths, "lengths", "", "test only these comma-separated `LENGTHS` (k, M suffixes), each in its smallest size class")
	fs.DurationVar(&o.run.Timeout, "timeout", allsize.DefaultTimeout, "give up when the peer makes no progress for this long")
	c.JSONFlag(&o.jsonPath, "write the results as JSON to standard output (the text goes to standard error), or to `FILE` with --json=FILE")
	fs.StringVar(&o.csvPath, "csv", "", "write the results as CSV to standard output (the text goes to standard error), or to `FILE` with --csv=FILE")
	fs.Lookup("csv").NoOptDefVal = "-"
	fs.StringVar(&o.plotPath, "plot", "", "draw latency and bandwidth against length in `FILE`.svg (or .png, with rsvg-convert)")
	fs.StringArrayVar(&o.baselines, "baseline", nil, "add the series of a baseline CSV `FILE` to the plot (columns series,length,half_rtt_us,bw_mbs; repeatable)")
	fs.StringVar(&o.title, "title", "", "plot `TITLE`")
	fs.StringVar(&o.label, "label", "EtherGM", "series name prefix of the results (\"LABEL low\", \"LABEL high\")")
	fs.BoolVar(&o.noCRC, "no-crc-check", false, "deliver frames whose CRC32C is wrong (to test --verify itself)")
	fs.IntVar(&o.window, "window", 0, fmt.Sprintf("frames in flight per stream of this side's port, 1..%d (default: %d)", gm.MaxWindow, gm.DefaultWindow))
	c.VerboseFlag(&o.verbose, "also print the loopback server's log (prefixed \"server: \") on standard error")
	o.pcap = c.PcapFlag()
	return c
}

// remotePortValue is --remote-port: a GM port, -1 (its default) shown as
// empty.
type remotePortValue struct{ p *int }

func (v remotePortValue) String() string {
	if v.p == nil || *v.p < 0 {
		return ""
	}
	return strconv.Itoa(*v.p)
}
func (v remotePortValue) Type() string { return "PORT" }
func (v remotePortValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= gm.NumPorts {
		return fmt.Errorf("a GM port is 0..%d", gm.NumPorts-1)
	}
	*v.p = n
	return nil
}

// parseFlags parses and checks the command line. If done, the command
// exits with code (help, version or a usage error, already reported).
func parseFlags(args []string, stdout, stderr io.Writer) (o *options, c *cli.Command, code int, done bool) {
	o = new(options)
	c = newCommand(o, stdout, stderr)
	if code, done := c.Parse(args); done {
		return nil, c, code, true
	}
	if msg := o.check(); msg != "" {
		return nil, c, c.Usagef("%s", msg), true
	}
	return o, c, exitOK, false
}

// check checks the values that pflag does not; it returns the usage
// error, "" if there is none.
func (o *options) check() string {
	switch o.priority {
	case "low":
		o.run.Priorities = []gm.Priority{gm.LowPriority}
	case "high":
		o.run.Priorities = []gm.Priority{gm.HighPriority}
	case "both":
		o.run.Priorities = []gm.Priority{gm.LowPriority, gm.HighPriority}
	default:
		return fmt.Sprintf("invalid value %q for --priority: want low, high or both", o.priority)
	}
	mb, err := parseBytes(o.maxBytes)
	if err != nil {
		return fmt.Sprintf("invalid value %q for --max-bytes: %v", o.maxBytes, err)
	}
	o.run.MaxBytes = mb
	if o.lengths != "" {
		for f := range strings.SplitSeq(o.lengths, ",") {
			l, err := parseBytes(strings.TrimSpace(f))
			if err != nil {
				return fmt.Sprintf("invalid value %q for --lengths: %v", o.lengths, err)
			}
			o.run.Lengths = append(o.run.Lengths, int(l))
		}
	}
	r := &o.run
	switch {
	case r.MinSize < allsize.MinSize || r.MinSize > allsize.MaxSize:
		return fmt.Sprintf("invalid value \"%d\" for --min-size: want %d..%d", r.MinSize, allsize.MinSize, allsize.MaxSize)
	case r.MaxSize < allsize.MinSize || r.MaxSize > allsize.MaxSize:
		return fmt.Sprintf("invalid value \"%d\" for --max-size: want %d..%d", r.MaxSize, allsize.MinSize, allsize.MaxSize)
	case r.MinSize > r.MaxSize:
		return fmt.Sprintf("--min-size %d is larger than --max-size %d", r.MinSize, r.MaxSize)
	case r.Iterations < 1:
		return fmt.Sprintf("invalid value \"%d\" for --iterations: want at least 1", r.Iterations)
	case r.MaxBytes < 1:
		return fmt.Sprintf("invalid value %q for --max-bytes: want at least 1", o.maxBytes)
	case r.Random < 0:
		return fmt.Sprintf("invalid value \"%d\" for --random: want 0 or more", r.Random)
	case r.Timeout <= 0:
		return fmt.Sprintf("invalid value \"%v\" for --timeout: want a positive duration", r.Timeout)
	}
	for _, l := range r.Lengths {
		if l < 0 || l > gm.MaxLengthForSize(allsize.MaxSize) {
			return fmt.Sprintf("invalid value %q for --lengths: %d is longer than the longest message, %d bytes", o.lengths, l, gm.MaxLengthForSize(allsize.MaxSize))
		}
	}
	if err := r.Validate(); err != nil { // whatever the checks above missed
		return err.Error()
	}
	if o.serve && o.remote != "" {
		return "--serve and --remote-host exclude each other"
	}
	if o.window < 0 || o.window > gm.MaxWindow {
		return fmt.Sprintf("invalid value \"%d\" for --window: want 1..%d", o.window, gm.MaxWindow)
	}
	if o.jsonPath == "-" && o.csvPath == "-" {
		return "--json and --csv cannot both write to standard output; give one a file (--csv=FILE)"
	}
	if strings.HasSuffix(o.plotPath, ".png") {
		if _, err := exec.LookPath("rsvg-convert"); err != nil {
			return fmt.Sprintf("--plot %s: PNG needs rsvg-convert (Debian librsvg2-bin); write .svg instead", o.plotPath)
		}
	}
	return ""
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
	o, c, code, done := parseFlags(args, stdout, stderr)
	if done {
		return code
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
		return c.FailWith(err, "pass --pcap with a file in a folder you can write to")
	}
	defer func() {
		if err := capt.Close(); err != nil {
			c.Fail(err)
		}
	}()
	cfg := o.cfg
	cfg.Window = o.window
	cfg.Link.NoCRCCheck = o.noCRC
	unit, err := gm.ResolveUnit(o.unit, &cfg)
	if err != nil {
		return c.Fail(err)
	}
	if o.serve {
		cfg.WrapLink = capt.Wrap
		return serve(c, o, unit, &cfg, stop)
	}
	return client(c, o, unit, &cfg, capt, stop, stdout, stderr)
}

// serve runs server sessions, each on a freshly opened port, so that a
// client that vanished leaves nothing behind.
func serve(c *cli.Command, o *options, unit *gm.Unit, cfg *gm.Config, stop *atomic.Bool) int {
	stdout := c.Stdout
	for first := true; ; first = false {
		p, err := gm.OpenUnit(unit, o.port, "gm_allsize server", cfg)
		if err != nil {
			return c.Fail(fmt.Errorf("open unit %s port %d: %w", unit.Name, o.port, err))
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
func client(c *cli.Command, o *options, unit *gm.Unit, cfg *gm.Config, capt *capture.Writer, stop *atomic.Bool, stdout, stderr *os.File) int {
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
	ccfg.WrapLink = capt.Wrap
	p, err := gm.OpenUnit(unit, o.port, "gm_allsize", &ccfg)
	if err != nil {
		return c.Fail(fmt.Errorf("open unit %s port %d: %w", unit.Name, o.port, err))
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
			return c.FailWith(fmt.Errorf("loopback server port: %w", err),
				"pass --remote-port with a free port (2 or 4..15) for the loopback server")
		}
		defer srvPort.Close()
		cl.Server, cl.ServerPort = p.NodeID(), srvPort.ID()
		srv := &allsize.Server{Port: srvPort, Timeout: o.run.Timeout, Stop: stop}
		if o.verbose > 0 {
			srv.Out = &prefixWriter{w: stderr, prefix: "server: "}
		}
		srvDone = make(chan struct{})
		go func() {
			defer close(srvDone)
			_, _ = srv.Session()
		}()
	} else {
		meta.Mode = "remote"
		node, err := resolveNode(p, o.remote)
		if err != nil {
			return c.Fail(fmt.Errorf("--remote-host %s: %w", o.remote, err))
		}
		cl.Server, cl.ServerPort = node, o.port
		if o.remotePort >= 0 {
			cl.ServerPort = o.remotePort
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
		c.Fail(err)
		status = exitFail
	}
	return status
}

// openServerPort opens the server port of a loopback run: --remote-port,
// or the first free non-reserved port after --port.
func openServerPort(unit *gm.Unit, o *options, cfg *gm.Config) (*gm.Port, error) {
	if o.remotePort >= 0 {
		return gm.OpenUnit(unit, o.remotePort, "gm_allsize loopback", cfg)
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

// prefixWriter writes to w with prefix at the start of every line.
type prefixWriter struct {
	w       io.Writer
	prefix  string
	midLine bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, c := range b {
		if !p.midLine {
			out = append(out, p.prefix...)
		}
		out = append(out, c)
		p.midLine = c != '\n'
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// writeOutputs writes the --json, --csv and --plot files.
func writeOutputs(o *options, r *report.Run, stdout io.Writer) error {
	var errs []error
	write := func(path string, fn func(w io.Writer) error) {
		if path == "" {
			return
		}
		w, closeFn, err := cli.Create(path, stdout)
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
