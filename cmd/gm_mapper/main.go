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
// at once with GM_BUSY, naming the running one's pid.
//
// # Files
//
//   - the node map, --map-file (default <state dir>/map, state dir
//     /run/ethergm): written atomically at every new map, where ports read
//     it;
//   - the hosts file, --hosts-file (default /var/lib/ethergm/<unit>.hosts):
//     the node ids of every host ever mapped and the last map version, kept
//     across reboots (a persistent directory, not tmpfs);
//   - the pid file, --daemon-pid-file, removed on exit;
//   - a capture of every mapper frame, --pcap.
//
// # Status
//
// The daemon holds the abstract socket ctl.MapperName(unit) of its network
// namespace and answers every connection with one JSON document
// (mapper/driver.Status: the mapper's status, its pid, unit, interfaces
// with their link counters, open ports, start time); gm_board_info reads
// it.
//
// # Installing
//
// "make install-mapper PREFIX=/usr" installs the binary, the systemd unit
// dist/systemd/gm_mapper@.service (one instance per unit:
// "systemctl enable --now gm_mapper@eth0") and its settings file
// /etc/default/gm_mapper (from dist/gm_mapper.conf).
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/internal/cli"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/mapper/driver"
	"github.com/ethergm/ethergm/wire/auth"
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
	if os.Getenv("GOMAXPROCS") == "" {
		// One goroutine does the work; with more Ps the runtime wakes
		// idle threads to look for work at every timer, which costs
		// more than the work (see mapper/driver, Config.RecvPoll).
		runtime.GOMAXPROCS(1)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, nil))
}

// options are gm_mapper's command-line options.
type options struct {
	unit, host, stateDir, mapFile, hostsFile, pidFile string
	logFormat                                         string
	keyFile                                           string // --cluster-key-file
	partition                                         uint16
	level                                             uint8
	numPasses, verbose                                int
	verify                                            time.Duration
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

// run is gm_mapper with its arguments and streams. If ready is not nil, it
// receives the Driver once it runs (tests stop it through it).
func run(args []string, stdout, stderr io.Writer, ready chan<- *driver.Driver) int {
	var o options
	c := cli.New("gm_mapper", stdout, stderr)
	c.Synopsis("[--unit UNIT] [--level N] [OPTION]...")
	c.Description(description)
	c.UnitFlag(&o.unit, "")
	c.HostnameFlag(&o.host, "")
	c.Flags.Uint8Var(&o.level, "level", 1, "mapper level `N`: the highest level maps; 0 never maps, only answers and follows")
	c.Flags.IntVar(&o.numPasses, "num-passes", 0, "scout passes `N` at start-up before a first map (0: the default, "+strconv.Itoa(mapper.DefaultNumPasses)+")")
	c.Flags.DurationVar(&o.verify, "verify-interval", mapper.DefaultVerifyInterval, "period `D` of the verification scouts, 10ms..1s")
	c.StateDirFlag(&o.stateDir, "")
	c.MapFileFlag(&o.mapFile, "where to write the node map, `FILE` (default: $"+gm.EnvMap+", else STATE-DIR/map)")
	c.Flags.StringVar(&o.hostsFile, "hosts-file", "", "the persistent hosts `FILE`: node ids and the last map version (default: $"+EnvHostsFile+", else "+DefaultLibDir+"/UNIT.hosts)")
	c.Flags.StringVar(&o.pidFile, "daemon-pid-file", "", "write the process id to `FILE` (removed on exit)")
	pcap := c.PcapFlag()
	c.ClusterKeyFlags(&o.keyFile, &o.partition)
	c.Flags.StringVar(&o.logFormat, "log-format", "text", "log `FORMAT`: text or json")
	c.VerboseFlag(&o.verbose, "log debug messages too")
	if code, done := c.Parse(args); done {
		return code
	}
	switch {
	case o.logFormat != "text" && o.logFormat != "json":
		return c.Usagef("invalid value %q for --log-format: text or json", o.logFormat)
	case o.verify < 10*time.Millisecond || o.verify > mapper.MaxVerifyInterval:
		return c.Usagef("invalid value %v for --verify-interval: 10ms..%v", o.verify, mapper.MaxVerifyInterval)
	case o.numPasses < 0 || o.numPasses > 100:
		return c.Usagef("invalid value %d for --num-passes: 0..100", o.numPasses)
	}

	lvl := slog.LevelInfo
	if o.verbose > 0 {
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
		return cli.ExitFailure
	}
	// Start-up failures are one line in the commands' convention
	// ("gm_mapper: <GM status>: <what happened>; <what to do>").
	startFail := func(err error, advice string) int {
		if advice == "" {
			advice = cli.Advice(err)
		}
		return c.FailWith(err, advice)
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
			return startFail(fmt.Errorf("host name: %w", err), "pass --hostname")
		}
		o.host = hn
	}
	unit, err := gm.ResolveUnit(o.unit, &gm.Config{StateDir: o.stateDir})
	if err != nil {
		return startFail(err, "")
	}
	if o.hostsFile == "" {
		o.hostsFile = os.Getenv(EnvHostsFile)
	}
	if o.hostsFile == "" {
		o.hostsFile = filepath.Join(DefaultLibDir, unit.Name+".hosts")
	}

	w, err := pcap.Open()
	if err != nil {
		return startFail(fmt.Errorf("--pcap: %w", err), "")
	}
	defer w.Close()

	var keyAuth *auth.Authenticator
	if o.keyFile != "" {
		if keyAuth, err = link.LoadAuth(o.keyFile, o.partition); err != nil {
			return startFail(fmt.Errorf("%w: --cluster-key-file: %w", gm.InvalidParameter, err), "")
		}
	}
	d, err := driver.New(driver.Config{
		Unit: unit.Name, Interfaces: unit.Interfaces, Host: o.host,
		Level: o.level, NumPasses: o.numPasses, VerifyInterval: o.verify,
		MapFile: o.mapFile, HostsFile: o.hostsFile,
		Logger: log, Auth: keyAuth,
		OpenLink: func(ifname string, cfg *link.Config) (link.Endpoint, error) {
			l, err := link.Open(ifname, cfg)
			if err != nil {
				return nil, err
			}
			return w.Wrap(l), nil // records every frame in --pcap's file
		},
	})
	if err != nil {
		if errors.Is(err, driver.ErrBusy) {
			return startFail(fmt.Errorf("%w: %w", gm.Busy, err), "stop it first, or give this one another --unit")
		}
		return startFail(err, "")
	}
	defer d.Close()

	if o.pidFile != "" {
		if err := writePidFile(o.pidFile); err != nil {
			return startFail(fmt.Errorf("--daemon-pid-file: %w", err), "")
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
	return cli.ExitOK
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
