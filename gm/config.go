package gm

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethergm/ethergm/gm/internal/proto"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/token"
)

// Environment variables that configure a port when the Config field is
// empty.
const (
	// EnvHost names this host (its line in the node map); default: the
	// kernel host name.
	EnvHost = "ETHERGM_HOST"
	// EnvStateDir is the per-host state directory (units file, default
	// map file); default DefaultStateDir.
	EnvStateDir = "ETHERGM_STATE_DIR"
	// EnvMap is the node map file; default <state dir>/map.
	EnvMap = "ETHERGM_MAP"
	// EnvUnit selects the unit when Open is given "": a unit name from the
	// units file or a comma-separated list of interfaces.
	EnvUnit = "ETHERGM_UNIT"
	// EnvCongestionControl, set to 1, turns on Config.CongestionControl.
	EnvCongestionControl = "ETHERGM_CONGESTION_CONTROL"
)

// DefaultStateDir is the state directory used when neither
// Config.StateDir nor ETHERGM_STATE_DIR is set.
const DefaultStateDir = "/run/ethergm"

// Defaults of the timeouts in Config (the first two are the protocol
// engine's, which applies them).
const (
	DefaultProgressTimeout = proto.DefaultProgressTimeout
	DefaultLivenessTimeout = proto.DefaultLivenessTimeout
	DefaultMapPoll         = 250 * time.Millisecond
)

// Config configures Open. The zero value (or nil) means: every setting
// from the environment or its default.
type Config struct {
	// Host is this host's name in the node map; "" means ETHERGM_HOST,
	// then os.Hostname.
	Host string
	// StateDir is the per-host state directory; "" means
	// ETHERGM_STATE_DIR, then DefaultStateDir. Open only reads it: the
	// optional units file and the default map file. (Port ownership does
	// not depend on it: see Open.)
	StateDir string
	// MapFile is the node map; "" means ETHERGM_MAP, then <StateDir>/map.
	// It need not exist when the port opens (see Open).
	MapFile string
	// Privileged allows opening the reserved ports 0, 1 and 3 (GM's
	// daemon, mapper and Ethernet ports).
	Privileged bool
	// SendTokens and ReceiveTokens override GM's 61 and 253 (0 keeps
	// them). SendTokens may be at most MaxSendTokens, ReceiveTokens at
	// most MaxReceiveTokens; Open refuses other values with
	// InvalidParameter.
	SendTokens, ReceiveTokens int
	// ProgressTimeout: a send that finds no receive buffer for this long
	// fails with SendTimedOut. 0 means DefaultProgressTimeout (GM used
	// 300 s).
	ProgressTimeout time.Duration
	// LivenessTimeout: a send whose target answers nothing for this long
	// fails with SendTargetNodeUnreachable. 0 means
	// DefaultLivenessTimeout.
	LivenessTimeout time.Duration
	// MapPoll is how often the progress goroutine checks the map file and
	// the set of open ports for changes; 0 means DefaultMapPoll.
	MapPoll time.Duration
	// Window is the maximum number of frames in flight per stream
	// (1..MaxWindow, 1024; more means MaxWindow); 0 means DefaultWindow
	// (512). A stream keeps fewer in flight if its receiver advertises a
	// smaller receive window: each port advertises half the full-size
	// frames its link's receive ring holds (link.Geometry; 448 at MTU
	// 9000 with the default ring), so that one stream cannot overflow its
	// peer's ring (docs/PROTOCOL.md, section 7.9).
	Window int
	// UseQdisc sends bulk data through the interface's queueing
	// discipline. By default the port's transmit ring bypasses it
	// (link.Config.QdiscBypass, set by Open): about a fifth less CPU per
	// frame on the sender, because the kernel no longer hands a clone of
	// every transmitted frame to the host's packet sockets (this port's
	// own among them). The price: tc rules do not apply to those frames,
	// tcpdump on the sending host does not see them (the receiving host
	// and WrapLink captures do), and a full driver queue drops frames
	// (which are retransmitted) instead of queueing them. Frames to the
	// host's own MAC address always go through the qdisc path.
	UseQdisc bool
	// Link tunes the port's link (Ports, SpinTime and QdiscBypass are set
	// by Open).
	Link link.Config
	// ClusterKeyFile names the cluster key file (docs/SECURITY.md): every
	// frame the port sends is then authenticated, and frames without a
	// valid MAC of the key, or of another Partition, are dropped. "" means
	// $ETHERGM_CLUSTER_KEY_FILE (with $ETHERGM_PARTITION), else no key.
	// All hosts of a cluster, their mapper included, must use the same
	// key and partition. Link.Auth, if set, takes precedence.
	ClusterKeyFile string
	// Partition is the partition number used with ClusterKeyFile.
	Partition uint16
	// CongestionControl turns on the congestion window per destination
	// host (docs/PROTOCOL.md §20), for many-to-one traffic through a
	// switch port; $ETHERGM_CONGESTION_CONTROL=1 turns it on too. It is
	// off by default while it treats a path's random loss as congestion:
	// through a relay that drops 5 % of the frames it leaves a stream a
	// fraction of its goodput (docs/RELIABILITY.md §6).
	CongestionControl bool
	// VirtualAddresses makes the port's remote pointers its process's
	// virtual addresses, as in GM (for C programs, through libgm): peers'
	// puts and gets name addresses, and memory is made reachable by page
	// with RegisterPages and DeregisterPages, which count registrations
	// per page. RegisterMemory and DeregisterMemory then return an
	// error. The memory registered must be C or mmap'd memory, never Go
	// memory (see RegisterPages).
	VirtualAddresses bool
	// OpenLink opens the link of each interface of the unit; nil means
	// link.Open (an AF_PACKET socket). Tests run ports over in-memory
	// links with it (package linktest).
	OpenLink func(ifname string, cfg *link.Config) (link.Endpoint, error)
	// WrapLink, if set, decorates each link the port opens (after the
	// checks of its address and MTU); the port uses what it returns. A
	// capture is one: WrapLink = w.Wrap, with w a *capture.Writer (nil
	// turns it off), records every frame the port sends and receives.
	// The decorator keeps the link's capabilities (link.Endpoint); the
	// port closes it, the program closes what it wraps with (the Writer)
	// after the port.
	WrapLink func(link.Endpoint) link.Endpoint

	// progressTicks, if not nil, are the progress goroutine's ticks
	// instead of a progressTick ticker (tests drive it tick by tick).
	progressTicks <-chan time.Time
	// clock, if not nil, is the port's clock instead of the time since
	// Open (tests count its readings).
	clock func() time.Duration
}

// openLink is Config.OpenLink or link.Open.
func (c *Config) openLink(ifname string, lc *link.Config) (link.Endpoint, error) {
	if c.OpenLink != nil {
		return c.OpenLink(ifname, lc)
	}
	l, err := link.Open(ifname, lc)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return l, nil
}

// Bounds of Config.SendTokens and Config.ReceiveTokens.
const (
	// MaxSendTokens is the most send tokens a port can have (96): a
	// stream queues at most 128 transfers, and besides this port's sends,
	// puts and gets (one token each, possibly all to one stream) it
	// carries up to 32 replies to its peers' gets.
	MaxSendTokens = proto.MaxSendTokens
	// MaxReceiveTokens is the most receive tokens a port can have: the
	// port keeps room for one queued event per token.
	MaxReceiveTokens = 1 << 16
)

// validate checks the settings Open cannot correct (c may be nil).
func (c *Config) validate() error {
	if c == nil {
		return nil
	}
	if c.SendTokens < 0 || c.SendTokens > MaxSendTokens {
		return fmt.Errorf("%w: Config.SendTokens is %d; a port has 1..%d send tokens (0: GM's %d)",
			InvalidParameter, c.SendTokens, MaxSendTokens, token.DefaultSendTokens)
	}
	if c.ReceiveTokens < 0 || c.ReceiveTokens > MaxReceiveTokens {
		return fmt.Errorf("%w: Config.ReceiveTokens is %d; a port has 1..%d receive tokens (0: GM's %d)",
			InvalidParameter, c.ReceiveTokens, MaxReceiveTokens, token.DefaultReceiveTokens)
	}
	return nil
}

// linkAuth puts the cluster key of ClusterKeyFile, if any, into lc.
func (c *Config) linkAuth(lc *link.Config) error {
	if lc.Auth != nil || c.ClusterKeyFile == "" {
		return nil // link.Open takes the environment's key, if any
	}
	a, err := link.LoadAuth(c.ClusterKeyFile, c.Partition)
	if err != nil {
		return fmt.Errorf("%w: cluster key: %w", InvalidParameter, err)
	}
	lc.Auth = a
	return nil
}

func (c *Config) host() (string, error) {
	if c.Host != "" {
		return c.Host, nil
	}
	if h := os.Getenv(EnvHost); h != "" {
		return h, nil
	}
	return os.Hostname()
}

func (c *Config) stateDir() string {
	if c.StateDir != "" {
		return c.StateDir
	}
	if d := os.Getenv(EnvStateDir); d != "" {
		return d
	}
	return DefaultStateDir
}

func (c *Config) mapFile() string {
	if c.MapFile != "" {
		return c.MapFile
	}
	if f := os.Getenv(EnvMap); f != "" {
		return f
	}
	return filepath.Join(c.stateDir(), "map")
}

// Unit is a GM unit (board): a named set of Ethernet interfaces, one per
// rail (at most 8).
//
// A port opens one link per interface and uses them all: it receives on
// every rail, and stripes the frames of large messages over the rails that
// work (see docs/GM-API.md, "Multi-rail units"). The rail number of an
// interface is the position of its MAC address in this host's node map
// entry; rail n reaches rail n of a peer (the n-th MAC of its entry). A
// rail whose interface goes down, or on which a peer stops answering, is
// left until it works again; the frames lost on it are retransmitted on
// the others, without errors for the application. A port opens while one
// of its unit's interfaces is up: the rail of a down interface starts
// down and comes back when the interface comes up.
type Unit struct {
	// Name names the unit: a port is exclusive per (network namespace,
	// unit name, port id).
	Name string
	// Interfaces are the unit's rails. Interfaces[0] gives the port's
	// unique id (UniqueID).
	Interfaces []string
}

// ResolveUnit finds the unit Open uses for name:
//
//   - "" means ETHERGM_UNIT if set, else the default unit;
//   - a name listed in <StateDir>/units ("name iface[,iface...]" per line,
//     '#' comments) is that unit;
//   - otherwise name is a comma-separated list of interface names; "0"
//     (GM's first board) means the default unit.
//
// The default unit is the one non-loopback interface that is up; it is
// an error (NoSuchDevice) if there is none or more than one.
func ResolveUnit(name string, cfg *Config) (*Unit, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if name == "" {
		name = os.Getenv(EnvUnit)
	}
	if name != "" {
		if u, ok := readUnits(filepath.Join(cfg.stateDir(), "units"))[name]; ok {
			return u, nil
		}
	}
	if name == "" || name == "0" {
		return defaultUnit()
	}
	u := &Unit{Name: name, Interfaces: strings.Split(name, ",")}
	for _, i := range u.Interfaces {
		if _, err := net.InterfaceByName(i); err != nil {
			return nil, noInterface(i, err)
		}
	}
	u.Name = u.Interfaces[0]
	return u, nil
}

func readUnits(path string) map[string]*Unit {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	units := map[string]*Unit{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fl := strings.Fields(text)
		if len(fl) != 2 {
			continue
		}
		units[fl[0]] = &Unit{Name: fl[0], Interfaces: strings.Split(fl[1], ",")}
	}
	return units
}

func defaultUnit() (*Unit, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("%w: listing the network interfaces: %w", UntranslatedSystemError, err)
	}
	var found []string
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 || i.Flags&net.FlagUp == 0 || len(i.HardwareAddr) != 6 {
			continue
		}
		found = append(found, i.Name)
	}
	switch len(found) {
	case 1:
		return &Unit{Name: found[0], Interfaces: found}, nil
	case 0:
		return nil, fmt.Errorf("%w: no non-loopback interface is up", NoSuchDevice)
	default:
		return nil, fmt.Errorf("%w: several interfaces are up (%s) and no unit is named: name one (or several, separated by commas) as the unit, or in %s", NoSuchDevice, strings.Join(found, ", "), EnvUnit)
	}
}

// noInterface is the error for a missing interface name: NoSuchDevice,
// with the host's Ethernet interfaces in the message and cause wrapped.
func noInterface(name string, cause error) error {
	var names []string
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if i.Flags&net.FlagLoopback == 0 && len(i.HardwareAddr) == 6 {
				names = append(names, i.Name)
			}
		}
	}
	have := "none"
	if len(names) > 0 {
		have = strings.Join(names, ", ")
	}
	return &statusError{st: NoSuchDevice, msg: fmt.Sprintf("no interface %q on this host (interfaces: %s)", name, have), cause: cause}
}
