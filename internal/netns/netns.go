package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns/relay"
)

// RequireEnv is the environment variable that turns [New]'s skip into a
// failure when set to "1" (make test sets it).
const RequireEnv = "ETHERGM_REQUIRE_NETNS"

// ErrUnavailable is wrapped by the errors of [NewCluster] when this machine
// cannot build namespaces at all (not root, no ip command, ip netns fails).
// [New] skips the test on such errors.
var ErrUnavailable = errors.New("network namespaces unavailable")

// ErrOptions is wrapped by the errors of [NewCluster] for invalid [Options].
var ErrOptions = errors.New("invalid options")

// linkUpTimeout bounds the wait for all interfaces to come up.
const linkUpTimeout = 30 * time.Second

// Options describes a cluster. The zero value is one host with one rail.
type Options struct {
	// Hosts is the number of hosts (network namespaces), 1..MaxHosts.
	// 0 means 1, or 2 with Direct or Relay.
	Hosts int
	// Rails is the number of switches (Linux bridges); each host gets one
	// veth per rail, named "eth0", "eth1", .... 0 means 1.
	Rails int
	// MTU is the MTU of every interface; 0 means 1500.
	MTU int
	// Direct joins exactly 2 hosts by one veth pair per rail, without a
	// bridge (for benchmarks).
	Direct bool
	// Relay, if not nil, joins the hosts (one rail) through the
	// in-process impairment relay configured by *Relay instead of a
	// bridge; see [NewImpairedPair] and [Cluster.Relay]. With two hosts it
	// is a two-port relay (AtoB is host0 to host1); with more, a learning
	// switch whose port i is host i (relay.From(i) are the frames host i
	// sends).
	Relay *relay.Config
	// HostRails, if set, plugs hosts into switches other than one
	// interface per switch: HostRails[i], when not nil, lists the switch
	// (0..Rails-1) of each of host i's interfaces eth0, eth1, ... in
	// order. So {1, 0} crosses a dual-rail host's rails (its eth0 on switch
	// 1), {0} makes a single-rail host among dual-rail ones. Hosts without
	// an entry (or with a nil one) have eth r on switch r. Not with Direct
	// or Relay.
	HostRails [][]int
}

// withDefaults validates o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Direct && o.Relay != nil {
		return o, fmt.Errorf("%w: Direct and Relay are exclusive", ErrOptions)
	}
	if o.Hosts == 0 {
		o.Hosts = 1
		if o.Direct || o.Relay != nil {
			o.Hosts = 2
		}
	}
	if o.Rails == 0 {
		o.Rails = 1
	}
	if o.MTU == 0 {
		o.MTU = 1500
	}
	switch {
	case o.Hosts < 1 || o.Hosts > MaxHosts:
		return o, fmt.Errorf("%w: Hosts %d not in 1..%d", ErrOptions, o.Hosts, MaxHosts)
	case o.Rails < 1 || o.Rails > MaxRails:
		return o, fmt.Errorf("%w: Rails %d not in 1..%d", ErrOptions, o.Rails, MaxRails)
	case o.MTU < 68 || o.MTU > 65535:
		return o, fmt.Errorf("%w: MTU %d not in 68..65535", ErrOptions, o.MTU)
	case o.Direct && o.Hosts != 2:
		return o, fmt.Errorf("%w: Direct needs exactly 2 hosts, not %d", ErrOptions, o.Hosts)
	case o.Relay != nil && (o.Hosts < 2 || o.Rails != 1):
		return o, fmt.Errorf("%w: Relay needs at least 2 hosts and exactly 1 rail", ErrOptions)
	case o.Relay != nil && o.Relay.Ports != nil && len(o.Relay.Ports) != o.Hosts:
		return o, fmt.Errorf("%w: Relay.Ports has %d impairments for %d hosts", ErrOptions, len(o.Relay.Ports), o.Hosts)
	case o.HostRails != nil && (o.Direct || o.Relay != nil):
		return o, fmt.Errorf("%w: HostRails needs switches (not Direct or Relay)", ErrOptions)
	case len(o.HostRails) > o.Hosts:
		return o, fmt.Errorf("%w: HostRails has %d entries for %d hosts", ErrOptions, len(o.HostRails), o.Hosts)
	}
	for i, sw := range o.HostRails {
		if sw == nil {
			continue
		}
		if len(sw) > MaxRails {
			return o, fmt.Errorf("%w: HostRails[%d] has %d interfaces (1..%d)", ErrOptions, i, len(sw), MaxRails)
		}
		if len(sw) == 0 {
			return o, fmt.Errorf("%w: HostRails[%d] is empty (nil means the default)", ErrOptions, i)
		}
		for _, s := range sw {
			if s < 0 || s >= o.Rails {
				return o, fmt.Errorf("%w: HostRails[%d]: switch %d not in 0..%d", ErrOptions, i, s, o.Rails-1)
			}
		}
	}
	return o, nil
}

// Cluster is a set of hosts joined by switches, built by [New],
// [NewCluster] or [NewImpairedPair]. Its methods are safe for concurrent use.
type Cluster struct {
	// Hosts are the hosts, in order; Hosts[i].Name is "host<i>".
	Hosts []*Host
	// ID is the run id embedded in every name of this cluster.
	ID string
	// Switch is the namespace holding the bridges (Ifaces are the bridge
	// names) or, with a relay, the relay's namespace (Ifaces are its two
	// ports). It is nil with Direct. Use it for captures on the switch.
	Switch *Host
	// Dir is a temporary directory removed by Close; each host's Dir is
	// inside it.
	Dir string
	// Opts are the options the cluster was built with, defaults filled in.
	Opts Options

	relay *relay.Relay

	mu         sync.Mutex
	namespaces []string // created namespaces, in creation order
	procs      []*Proc  // started by Host.Start
	closed     bool
	closeOnce  sync.Once
	closeErr   error
}

// Host is one network namespace of a cluster.
type Host struct {
	// Name is "host<i>" (or "switch", "relay"); also the EtherGM host name.
	Name string
	// NS is the network namespace name, usable with "ip netns exec".
	NS string
	// Index is i for "host<i>" and -1 for the switch or relay namespace.
	Index int
	// Ifaces are the interface names, one per rail ("eth0", ...).
	Ifaces []string
	// MACs are the interfaces' MAC addresses, one per rail.
	MACs []net.HardwareAddr
	// Switches are the switch (bridge) of each interface, one per rail:
	// Switches[r] is r unless [Options.HostRails] says otherwise.
	Switches []int
	// Addrs are the interfaces' IPv4 addresses (198.18.switch.(i+1),
	// prefix length 24; the switch is the rail unless [Options.HostRails]
	// says otherwise), one per rail.
	Addrs []netip.Addr
	// Dir is a per-host state directory (removed on Close) for host
	// identity and state files.
	Dir string

	cluster *Cluster
}

// New builds a cluster for a test and registers its removal with
// tb.Cleanup. It skips the test, with a one-line reason, when the machine
// cannot build namespaces (not root, no ip command, ip netns fails), unless
// the environment variable ETHERGM_REQUIRE_NETNS is "1": then it fails the
// test with that line. Other errors fail the test.
func New(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	c, err := NewCluster(opts)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			if os.Getenv(RequireEnv) == "1" {
				tb.Fatalf("%v (%s=1)", err, RequireEnv)
			}
			tb.Skip(err.Error())
		}
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("netns: %v", err)
		}
	})
	return c
}

// NewImpairedPair builds two hosts joined through the impairment relay
// configured by cfg: host0 eth0 ⇄ relay ⇄ eth0 host1. Direction AtoB is
// host0 to host1. The relay runs in this process; [Cluster.Relay] gives its
// counters and changes impairments at run time. Skips like [New].
func NewImpairedPair(tb testing.TB, cfg relay.Config) *Cluster {
	tb.Helper()
	return New(tb, Options{Hosts: 2, Relay: &cfg})
}

// Available returns nil if this process can probably build clusters, else
// an error wrapping [ErrUnavailable] with a one-line reason.
func Available() error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("netns: %w: need root (euid %d)", ErrUnavailable, uid)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("netns: %w: iproute2 ip command not found", ErrUnavailable)
	}
	return nil
}

// NewCluster builds a cluster for a program (benchmarks, demos). The caller
// must call Close. Errors wrap [ErrUnavailable] when the machine cannot
// build namespaces and [ErrOptions] for invalid options.
func NewCluster(opts Options) (*Cluster, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	removeStaleOnce()
	c := &Cluster{Opts: opts}
	err = c.reserve()
	if err == nil {
		err = c.build()
	}
	if err != nil {
		if cerr := c.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return c, nil
}

// reserve picks a run id, records it in the state directory (atomically,
// so concurrent processes never share one), creates the cluster directory
// and registers the cluster for signal cleanup.
func (c *Cluster) reserve() error {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("netns: %w: %v", ErrUnavailable, err)
	}
	for range 16 {
		id := newRunID()
		if entries, _ := filepath.Glob(filepath.Join(netnsRunDir, Prefix+id+"*")); len(entries) > 0 {
			continue
		}
		f, err := os.OpenFile(filepath.Join(stateDir, id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("netns: %w: %v", ErrUnavailable, err)
		}
		_, err = f.WriteString(ownerRecord(os.Getpid(), "go"))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		c.ID = id
		register(c)
		if err != nil {
			return fmt.Errorf("netns: state file: %w", err)
		}
		c.Dir, err = os.MkdirTemp("", Prefix+id+"-")
		if err != nil {
			return fmt.Errorf("netns: %w", err)
		}
		return nil
	}
	return errors.New("netns: no free run id")
}

// addNS creates namespace name, disables IPv6 in it and brings lo up.
func (c *Cluster) addNS(name string) error {
	if _, err := ipCmd("netns", "add", name); err != nil {
		c.mu.Lock()
		first := len(c.namespaces) == 0
		c.mu.Unlock()
		if first {
			return fmt.Errorf("netns: %w: %v", ErrUnavailable, err)
		}
		return fmt.Errorf("netns: %w", err)
	}
	c.mu.Lock()
	c.namespaces = append(c.namespaces, name)
	c.mu.Unlock()
	err := doInNS(name, func() error {
		for _, p := range []string{"default", "all"} {
			// Best effort: the kernel may have no IPv6.
			_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+p+"/disable_ipv6", []byte("1\n"), 0)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	if _, err := ipCmd("-n", name, "link", "set", "lo", "up"); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	return nil
}

// newHost returns the Host value for host i (no system changes).
func (c *Cluster) newHost(i int) (*Host, error) {
	h := &Host{
		Name:    hostName(i),
		NS:      nsName(c.ID, hostName(i)),
		Index:   i,
		Dir:     filepath.Join(c.Dir, hostName(i)),
		cluster: c,
	}
	switches := make([]int, c.Opts.Rails)
	for r := range switches {
		switches[r] = r
	}
	if i < len(c.Opts.HostRails) && c.Opts.HostRails[i] != nil {
		switches = c.Opts.HostRails[i]
	}
	for r, sw := range switches {
		h.Ifaces = append(h.Ifaces, ifaceName(r))
		h.MACs = append(h.MACs, hostMAC(c.ID, i, r))
		h.Addrs = append(h.Addrs, hostPrefix(i, sw).Addr())
		h.Switches = append(h.Switches, sw)
	}
	return h, os.Mkdir(h.Dir, 0o755)
}

// build creates the namespaces and links.
func (c *Cluster) build() error {
	o := c.Opts
	mtu := fmt.Sprint(o.MTU)
	for i := range o.Hosts {
		h, err := c.newHost(i)
		if err != nil {
			return fmt.Errorf("netns: %w", err)
		}
		c.Hosts = append(c.Hosts, h)
		if err := c.addNS(h.NS); err != nil {
			return err
		}
	}
	if !o.Direct {
		name, role := "switch", "sw"
		if o.Relay != nil {
			name, role = "relay", "relay"
		}
		c.Switch = &Host{Name: name, NS: nsName(c.ID, role), Index: -1, Dir: filepath.Join(c.Dir, role), cluster: c}
		if err := os.Mkdir(c.Switch.Dir, 0o755); err != nil {
			return fmt.Errorf("netns: %w", err)
		}
		if err := c.addNS(c.Switch.NS); err != nil {
			return err
		}
	}

	// Host-side configuration, one ip batch per host.
	for _, h := range c.Hosts {
		var lines []string
		for r, ifn := range h.Ifaces {
			if o.Direct {
				if h.Index == 0 {
					peer := c.Hosts[1]
					lines = append(lines, fmt.Sprintf("link add %s index %d address %s mtu %s type veth peer name %s index %d address %s mtu %s netns %s",
						ifn, hostIndex(0, r), h.MACs[r], mtu, peer.Ifaces[r], hostIndex(1, r), peer.MACs[r], mtu, peer.NS))
				}
			} else {
				lines = append(lines, fmt.Sprintf("link add %s index %d address %s mtu %s type veth peer name %s index %d address %s mtu %s netns %s",
					ifn, hostIndex(0, r), h.MACs[r], mtu, portName(c.ID, h.Index, r), portIndex(h.Index, r), portMAC(c.ID, h.Index, r), mtu, c.Switch.NS))
			}
		}
		if err := ipBatch(h.NS, lines); err != nil {
			return fmt.Errorf("netns: %s: %w", h.Name, err)
		}
	}
	for _, h := range c.Hosts {
		var lines []string
		for r, ifn := range h.Ifaces {
			lines = append(lines,
				fmt.Sprintf("addr add %s dev %s", hostPrefix(h.Index, h.Switches[r]), ifn),
				fmt.Sprintf("link set %s up", ifn))
		}
		if err := ipBatch(h.NS, lines); err != nil {
			return fmt.Errorf("netns: %s: %w", h.Name, err)
		}
	}

	// Switch-side configuration.
	switch {
	case o.Relay != nil:
		var lines []string
		for _, h := range c.Hosts {
			p := portName(c.ID, h.Index, 0)
			c.Switch.Ifaces = append(c.Switch.Ifaces, p)
			lines = append(lines, "link set "+p+" up")
		}
		if err := ipBatch(c.Switch.NS, lines); err != nil {
			return fmt.Errorf("netns: relay: %w", err)
		}
		// The relay copies frames byte for byte, so the hosts must not
		// leave checksums or segmentation to the (virtual) hardware.
		for _, h := range c.Hosts {
			if err := h.Do(func() error { return disableOffloads(h.Ifaces[0]) }); err != nil {
				return fmt.Errorf("netns: %s: %w", h.Name, err)
			}
		}
	case !o.Direct:
		var lines []string
		for r := range o.Rails {
			br := bridgeName(c.ID, r)
			c.Switch.Ifaces = append(c.Switch.Ifaces, br)
			lines = append(lines, fmt.Sprintf("link add %s mtu %s type bridge stp_state 0 forward_delay 0", br, mtu))
		}
		for _, h := range c.Hosts {
			for r, sw := range h.Switches {
				p := portName(c.ID, h.Index, r)
				lines = append(lines, fmt.Sprintf("link set %s master %s", p, bridgeName(c.ID, sw)), "link set "+p+" up")
			}
		}
		for r := range o.Rails {
			lines = append(lines, "link set "+bridgeName(c.ID, r)+" up")
		}
		if err := ipBatch(c.Switch.NS, lines); err != nil {
			return fmt.Errorf("netns: switch: %w", err)
		}
	}
	if err := c.waitUp(); err != nil {
		return err
	}
	if o.Relay != nil {
		return c.startRelay(*o.Relay)
	}
	return nil
}

// waitUp waits until every host interface is running and every switch
// port is running and, on a bridge, forwarding. (The kernel may take up to
// a second to propagate a veth carrier change to the bridge.)
func (c *Cluster) waitUp() error {
	deadline := time.Now().Add(linkUpTimeout)
	for _, h := range c.Hosts {
		for r := range h.Ifaces {
			if err := h.waitRunning(r, deadline); err != nil {
				return fmt.Errorf("netns: %w", err)
			}
		}
	}
	if c.Switch == nil {
		return nil
	}
	var ports []string
	for _, h := range c.Hosts {
		for r := range h.Ifaces {
			ports = append(ports, portName(c.ID, h.Index, r))
		}
	}
	return c.waitPorts(ports, deadline)
}

// waitPorts waits until the switch-side ports are up and, on a bridge,
// forwarding.
func (c *Cluster) waitPorts(ports []string, deadline time.Time) error {
	bridged := c.Opts.Relay == nil
	for {
		out, err := ipCmd("-n", c.Switch.NS, "-o", "-d", "link", "show")
		if err != nil {
			return fmt.Errorf("netns: %w", err)
		}
		ready := map[string]bool{}
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			ready[name] = strings.Contains(line, "state UP ") &&
				(!bridged || strings.Contains(line, "bridge_slave state forwarding"))
		}
		var waiting string
		for _, p := range ports {
			if !ready[p] {
				waiting = p
			}
		}
		if waiting == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: switch port %s not forwarding after %v", waiting, linkUpTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startRelay opens the relay's sockets inside the relay namespace and
// starts it.
func (c *Cluster) startRelay(cfg relay.Config) error {
	var conns []relay.Conn
	closeAll := func() {
		for _, x := range conns {
			x.Close()
		}
	}
	err := c.Switch.Do(func() error {
		for _, ifn := range c.Switch.Ifaces {
			x, err := relay.Listen(ifn)
			if err != nil {
				return err
			}
			conns = append(conns, x)
		}
		return nil
	})
	if err != nil {
		closeAll()
		return fmt.Errorf("netns: relay: %w", err)
	}
	r, err := relay.StartN(conns, cfg)
	if err != nil {
		closeAll()
		return fmt.Errorf("netns: relay: %w", err)
	}
	c.mu.Lock()
	c.relay = r
	c.mu.Unlock()
	return nil
}

// Relay returns the impairment relay of a cluster built with
// [Options.Relay] or [NewImpairedPair], or nil.
func (c *Cluster) Relay() *relay.Relay {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relay
}

// Host returns the host named name ("host0", ...), or nil.
func (c *Cluster) Host(name string) *Host {
	for _, h := range c.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Close stops the relay, kills every process started in the cluster's
// namespaces, deletes the namespaces (and with them every link and bridge)
// and removes the cluster's directory and state file. It is idempotent;
// later calls return the first call's result.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	c.mu.Lock()
	c.closed = true
	procs := c.procs
	r := c.relay
	namespaces := c.namespaces
	c.mu.Unlock()

	var errs []error
	if r != nil {
		if err := r.Close(); err != nil {
			errs = append(errs, fmt.Errorf("relay: %w", err))
		}
	}
	for _, p := range procs {
		p.kill()
	}
	for _, p := range procs {
		<-p.done
	}
	for i := len(namespaces) - 1; i >= 0; i-- {
		if err := removeNS(namespaces[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Dir != "" {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ID != "" {
		if err := os.Remove(filepath.Join(stateDir, c.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	unregister(c)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", c.ID, err)
	}
	return nil
}

// removeNS kills every process in namespace name and deletes it.
func removeNS(name string) error {
	killNSPids(name)
	if _, err := ipCmd("netns", "del", name); err != nil {
		if _, serr := os.Stat(filepath.Join(netnsRunDir, name)); errors.Is(serr, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return nil
}

// killNSPids sends SIGKILL to every process in namespace name (except this
// one) and waits, bounded, until they are gone.
func killNSPids(name string) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		out, err := ipCmd("netns", "pids", name)
		if err != nil {
			return
		}
		var alive bool
		for f := range strings.FieldsSeq(out) {
			var pid int
			if _, err := fmt.Sscan(f, &pid); err != nil || pid <= 1 || pid == os.Getpid() {
				continue
			}
			alive = true
			killPid(pid)
		}
		if !alive || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
