// Command gm_mapper is EtherGM's mapper daemon: one per unit (all its
// rails) on every host. The mappers of a network elect one of them, which
// discovers the hosts on every rail, gives each a node id that never
// changes, and sends every host the node map with its routes; each
// gm_mapper writes the map where the host's ports read it. See
// docs/MAPPER.md and package mapper.
//
// Usage:
//
//	gm_mapper [--unit UNIT] [--level N] [OPTION]...
//
// It runs in the foreground and logs to standard error (log/slog, text or
// JSON); SIGTERM or SIGINT stop it cleanly (the pid file is removed). Exit
// status: 0 after a clean stop, 1 on failure (2 for a bad command line);
// a second gm_mapper for the same unit in the same network namespace fails
// at once, naming the running one's pid.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/ethergm/ethergm/capture"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/mapper/driver"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// Defaults of the file locations.
const (
	// DefaultLibDir is the persistent state directory (survives reboots):
	// the hosts file with the node ids and the last map version.
	DefaultLibDir = "/var/lib/ethergm"
	// EnvHostsFile overrides the default hosts file.
	EnvHostsFile = "ETHERGM_HOSTS_FILE"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, nil))
}

// options are gm_mapper's command-line options.
type options struct {
	unit, host, stateDir, mapFile, hostsFile, pidFile, pcap string
	logFormat                                               string
	level                                                   uint8
	numPasses                                               int
	verify                                                  time.Duration
	verbose, version, help                                  bool
}

const description = `gm_mapper maps the EtherGM network of one unit (all its rails): the mappers
of all hosts elect the one with the highest --level (then the highest MAC
address), which discovers every host on every rail, assigns node ids that
never change (kept in the hosts file) and sends each host the node map. Each
gm_mapper writes the map atomically to the map file, where ports read it,
and answers for this host's closed ports. It runs in the foreground; SIGTERM
or SIGINT stop it. gm_board_info shows what it knows.

Environment: ETHERGM_UNIT, ETHERGM_HOST, ETHERGM_STATE_DIR, ETHERGM_MAP and
ETHERGM_HOSTS_FILE give the defaults of --unit, --hostname, --state-dir,
--map-file and --hosts-file.

Exit status: 0 after SIGTERM or SIGINT, 1 on failure (also when another
gm_mapper runs for the unit), 2 for a bad command line.`

func newFlags(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("gm_mapper", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&o.unit, "unit", "", "the unit: a name from <state dir>/units or a comma-separated list of interfaces (default $ETHERGM_UNIT, else the one interface that is up)")
	fs.StringVar(&o.host, "hostname", "", "this host's name in the map (default $ETHERGM_HOST, else the kernel's host name)")
	fs.Uint8Var(&o.level, "level", 1, "mapper level: the highest level maps; 0 never maps, only answers and follows")
	fs.IntVar(&o.numPasses, "num-passes", 0, "scout passes at start-up before a first map (0: the default, "+strconv.Itoa(mapper.DefaultNumPasses)+")")
	fs.DurationVar(&o.verify, "verify-interval", mapper.DefaultVerifyInterval, "period of the verification scouts (10ms..1s)")
	fs.StringVar(&o.stateDir, "state-dir", "", "runtime state directory (default $ETHERGM_STATE_DIR, else "+gm.DefaultStateDir+")")
	fs.StringVar(&o.mapFile, "map-file", "", "where to write the node map (default $ETHERGM_MAP, else <state dir>/map)")
	fs.StringVar(&o.hostsFile, "hosts-file", "", "persistent hosts file: node ids and the last map version (default $ETHERGM_HOSTS_FILE, else "+DefaultLibDir+"/<unit>.hosts)")
	fs.StringVar(&o.pidFile, "daemon-pid-file", "", "write the process id to this file (removed on exit)")
	fs.StringVar(&o.pcap, "pcap", "", "record every mapper frame sent and received to this pcapng file (%p: the pid)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "log debug messages too")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVarP(&o.help, "help", "h", false, "print this help and exit")
	return fs
}

// run is gm_mapper with its arguments and streams. If ready is not nil, it
// receives the Driver once it runs (tests stop it through it).
func run(args []string, stdout, stderr io.Writer, ready chan<- *driver.Driver) int {
	var o options
	fs := newFlags(&o)
	fs.SetOutput(io.Discard)
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "gm_mapper: %s\nTry 'gm_mapper --help' for more information.\n", fmt.Sprintf(format, a...))
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		if o.help {
			printHelp(stdout, fs)
			return exitOK
		}
		return usage("%v", err)
	}
	switch {
	case o.help:
		printHelp(stdout, fs)
		return exitOK
	case o.version:
		fmt.Fprintf(stdout, "gm_mapper (EtherGM) %s\n", version())
		return exitOK
	case fs.NArg() > 0:
		return usage("unexpected argument %q", fs.Arg(0))
	case o.logFormat != "text" && o.logFormat != "json":
		return usage("invalid value %q for --log-format: text or json", o.logFormat)
	case o.verify < 10*time.Millisecond || o.verify > mapper.MaxVerifyInterval:
		return usage("invalid value %v for --verify-interval: 10ms..%v", o.verify, mapper.MaxVerifyInterval)
	case o.numPasses < 0 || o.numPasses > 100:
		return usage("invalid value %d for --num-passes: 0..100", o.numPasses)
	}

	lvl := slog.LevelInfo
	if o.verbose {
		lvl = slog.LevelDebug
	}
	hopts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(stderr, hopts)
	if o.logFormat == "json" {
		h = slog.NewJSONHandler(stderr, hopts)
	}
	log := slog.New(h)
	fail := func(msg string, a ...any) int {
		log.Error(msg, a...)
		return exitFailure
	}

	// Files and names, as ports find them.
	if o.stateDir == "" {
		o.stateDir = os.Getenv(gm.EnvStateDir)
	}
	if o.stateDir == "" {
		o.stateDir = gm.DefaultStateDir
	}
	if o.mapFile == "" {
		o.mapFile = os.Getenv(gm.EnvMap)
	}
	if o.mapFile == "" {
		o.mapFile = filepath.Join(o.stateDir, "map")
	}
	if o.host == "" {
		o.host = os.Getenv(gm.EnvHost)
	}
	if o.host == "" {
		hn, err := os.Hostname()
		if err != nil {
			return fail("host name", "err", err)
		}
		o.host = hn
	}
	unit, err := gm.ResolveUnit(o.unit, &gm.Config{StateDir: o.stateDir})
	if err != nil {
		return fail("unit", "err", err)
	}
	if o.hostsFile == "" {
		o.hostsFile = os.Getenv(EnvHostsFile)
	}
	if o.hostsFile == "" {
		o.hostsFile = filepath.Join(DefaultLibDir, unit.Name+".hosts")
	}

	var tap func([]byte, bool)
	if o.pcap != "" {
		w, err := capture.Open(capture.ExpandPath(o.pcap, os.Getpid()))
		if err != nil {
			return fail("pcap", "err", err)
		}
		defer w.Close()
		tap = w.Tap
	}

	d, err := driver.New(driver.Config{
		Unit: unit.Name, Interfaces: unit.Interfaces, Host: o.host,
		Level: o.level, NumPasses: o.numPasses, VerifyInterval: o.verify,
		MapFile: o.mapFile, HostsFile: o.hostsFile, StateDir: o.stateDir,
		Tap: tap, Logger: log,
	})
	if err != nil {
		return fail("cannot start", "err", err)
	}
	defer d.Close()

	if o.pidFile != "" {
		if err := writePidFile(o.pidFile); err != nil {
			return fail("pid file", "file", o.pidFile, "err", err)
		}
		defer os.Remove(o.pidFile)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case s := <-sigs:
			log.Info("stopping", "signal", s.String())
			d.Stop()
		case <-done:
		}
	}()
	if ready != nil {
		ready <- d
	}
	if err := d.Run(); err != nil {
		return fail("stopped", "err", err)
	}
	log.Info("stopped")
	return exitOK
}

// writePidFile writes the pid, atomically, creating the directory.
func writePidFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func printHelp(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: gm_mapper [--unit UNIT] [--level N] [OPTION]...\n\n%s\n\nOptions:\n%s", description, fs.FlagUsages())
}

// version is the module version, or the VCS revision, of the binary.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return strings.TrimSpace(s.Value)
		}
	}
	return "(devel)"
}
