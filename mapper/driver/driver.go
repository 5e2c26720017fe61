package driver

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
	"github.com/ethergm/ethergm/wire/auth"
)

// MapperPort is GM_MAPPER_PORT_ID: the target port of every mapper frame.
const MapperPort = 1

// DefaultPollInterval is how often a Driver looks at its interfaces when
// Config.PollInterval is 0. The set of open ports is looked at every
// PortProbeInterval (but not more often than the interfaces).
const DefaultPollInterval = 100 * time.Millisecond

// PortProbeInterval is how often a Driver lists the open ports of its
// unit. Ports hold a connection to the Driver (ctl.DialWatch) whose end
// tells it at once that a port closed or its process died; the list
// covers the ports that hold none (the Driver started after them, and they
// have not connected yet). A port that opens is noticed at once anyway
// (the answerer asks its name before answering for it).
const PortProbeInterval = 250 * time.Millisecond

// ErrBusy is wrapped by New's error when another gm_mapper serves the unit
// in this network namespace.
var ErrBusy = errors.New("gm_mapper already running")

// Core is what a Driver needs of the mapper core; *mapper.Mapper has it.
// Tests substitute fakes.
type Core interface {
	Input(now mapper.Time, rail int, frame []byte)
	FramesLost(rail int, since, now mapper.Time)
	Tick(now mapper.Time)
	NextDeadline() mapper.Time
	RecvDelay() mapper.Time
	SetRailUp(rail int, up bool, now mapper.Time)
	Status() mapper.Status
	Summary() mapper.Status
	Map() *nodemap.Map
}

// Config configures a Driver.
type Config struct {
	// Unit names the unit: its mapper and port socket names (package ctl)
	// use it.
	Unit string
	// Interfaces are the unit's rails, in rail order.
	Interfaces []string
	// Host is this host's name in the node map.
	Host string
	// Level, NumPasses and VerifyInterval go to the core (mapper.Config).
	Level          uint8
	NumPasses      int
	VerifyInterval time.Duration
	// EtherType is the EtherType of EtherGM frames (0: wire.EtherType).
	EtherType uint16
	// MapFile is where installed maps are written (atomically).
	MapFile string
	// HostsFile is where the core's persistent state is kept.
	HostsFile string
	// PollInterval is how often, at most, interfaces and open ports are
	// looked at (0: DefaultPollInterval): at the first wake-up after it
	// elapsed, so that it costs no wake-up of its own.
	PollInterval time.Duration
	// RecvPoll, if positive, caps how long received frames wait in the
	// rings; 0 means as long as the core allows (mapper.Mapper.RecvDelay);
	// negative means sleeping in link.MultiWait instead, woken by each
	// frame. The package doc says why polling is the default.
	RecvPoll time.Duration
	// OpenLink opens the Driver's links (nil: link.Open): a link per
	// rail for mapper frames, and one for the frames of closed ports.
	// Tests give in-memory links (linktest.Hub.Opener).
	OpenLink func(ifname string, cfg *link.Config) (link.Endpoint, error)
	// Probe looks at the interfaces (nil: the kernel's, with ioctls in
	// the network namespace New runs in). Tests give fakes.
	Probe Prober
	// Auth, if set, is the cluster key its links seal and check every
	// frame with (link.Config.Auth); nil means the key of
	// $ETHERGM_CLUSTER_KEY_FILE, if any (docs/SECURITY.md).
	Auth *auth.Authenticator
	// Logger receives the Driver's log; nil means slog.Default().
	Logger *slog.Logger
	// NewCore builds the core; nil means mapper.New.
	NewCore func(mapper.Config, mapper.Output) (Core, error)
}

// Status is the document a Driver serves on its ctl name: the core's status
// and the daemon's own facts.
type Status struct {
	mapper.Status
	PID        int         `json:"pid"`
	Unit       string      `json:"unit"`
	Start      time.Time   `json:"start_time"`
	MapFile    string      `json:"map_file"`
	HostsFile  string      `json:"hosts_file"`
	Interfaces []Interface `json:"interfaces"`
	// OpenPorts are the ports of the unit the Driver knows open: those
	// connected to it, and those its last look at the socket list found
	// (but not one whose connection ended since).
	OpenPorts []int `json:"open_ports"`
	// WatchedPorts are the open ports that hold a connection to the
	// Driver (ctl.DialWatch): their closing is known at once.
	WatchedPorts []int `json:"watched_ports"`
	// PortsClosedByEvent counts the ports the Driver learned closed by
	// the end of their connection (at once), PortsClosedByPoll those it
	// learned closed by not finding them in the socket list (ports that
	// held no connection).
	PortsClosedByEvent uint64 `json:"ports_closed_by_event"`
	PortsClosedByPoll  uint64 `json:"ports_closed_by_poll"`
	// ClosedNacks counts the PORT_CLOSED nacks sent for closed ports.
	ClosedNacks uint64 `json:"closed_port_nacks"`
	// SendErrors counts frames the links refused.
	SendErrors uint64 `json:"send_errors"`
}

// Interface describes one rail of the unit.
type Interface struct {
	Rail int    `json:"rail"`
	Name string `json:"name"`
	MAC  string `json:"mac"`
	// Up is what the Driver last told the core (present, up and running).
	Up bool `json:"up"`
	// Mode is the link's receive mode ("" while it is not open).
	Mode string `json:"mode,omitempty"`
	// ClosedPorts are the ports answered for on this interface (bit p):
	// every closed port once this host has a node id.
	ClosedPorts uint32 `json:"closed_ports_mask"`
	// Link are the counters of the interface's mapper link since it was
	// last opened (frames received and sent, frames the kernel dropped
	// for a full ring, bad frames).
	Link LinkCounters `json:"link"`
}

// LinkCounters are a link's counters (package gm/link's Stats).
type LinkCounters struct {
	RxFrames    uint64 `json:"rx_frames"`
	TxFrames    uint64 `json:"tx_frames"`
	KernelDrops uint64 `json:"kernel_drops"`
	CRCErrors   uint64 `json:"crc_errors"`
	Malformed   uint64 `json:"malformed"`
}

// rail is one interface of the unit.
type rail struct {
	name     string
	mac      nodemap.MAC
	ifindex  int
	up       bool          // as told to the core
	lk       link.Endpoint // mapper frames (port 1); nil while closed
	closed   link.Endpoint // frames for closed ports; nil if none
	answerer *answerer     // reads closed
	mask     link.PortMask
	mtu      int
	// drops is lk's Stats().KernelDrops at readAt, the last look at its
	// ring: frames dropped since were lost after readAt.
	drops  uint64
	readAt mapper.Time
}

// Driver runs a mapper core over the unit's interfaces.
type Driver struct {
	cfg   Config
	log   *slog.Logger
	start time.Time
	core  Core
	srv   *ctl.Server
	rails []*rail

	ports         portState
	nextPortProbe mapper.Time
	list          *ctl.PortList // nil if the socket list cannot be read
	watch         *ctl.Watch
	probe         Prober
	ifs           *ifProbe // the kernel's Prober, if probe is it
	selfID        uint32   // this host's node id in the installed map (0: none)
	nack          nackState
	view          atomic.Pointer[closedView] // for the answerers
	answerErrors  atomic.Uint64              // answers their links refused

	frames  [][]byte
	timer   *time.Timer
	waitAll func(time.Duration) error // sleeps on every link of waitSet (RecvPoll < 0)
	wl      []waitLink                // what each link of waitSet is
	waitSet []link.Endpoint

	wakeLinks atomic.Pointer[[]link.Endpoint]
	nudge     chan struct{} // a port connected or its connection ended
	reqs      chan func()
	stop      atomic.Bool
	stopped   chan struct{}

	disk       *diskWriter // writes the map and hosts files
	sendErrors uint64
	lastStatus atomic.Pointer[Status]
	logged     logState // what logChanges last reported
}

// logState is what the log last said about the network.
type logState struct {
	configured bool
	version    uint32 // of the map last said configured
	leader     bool
	elected    string
	dups       string
}

type waitLink struct {
	rail int
}

// New checks cfg, takes the unit's mapper name (ErrBusy if another
// process holds it), opens the links of the interfaces that are up, loads
// the persistent state and builds the core. Run starts it; Close releases
// everything.
func New(cfg Config) (*Driver, error) {
	if len(cfg.Interfaces) == 0 || len(cfg.Interfaces) > nodemap.MaxRails {
		return nil, fmt.Errorf("unit %s: %d interfaces (1..%d)", cfg.Unit, len(cfg.Interfaces), nodemap.MaxRails)
	}
	if cfg.Unit == "" {
		cfg.Unit = cfg.Interfaces[0]
	}
	if cfg.EtherType == 0 {
		cfg.EtherType = wire.EtherType
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NewCore == nil {
		cfg.NewCore = func(c mapper.Config, o mapper.Output) (Core, error) { return mapper.New(c, o) }
	}
	if cfg.OpenLink == nil {
		cfg.OpenLink = func(ifname string, c *link.Config) (link.Endpoint, error) { return link.Open(ifname, c) }
	}
	d := &Driver{
		cfg: cfg, log: cfg.Logger, start: time.Now(),
		frames:  make([][]byte, 64),
		nudge:   make(chan struct{}, 1),
		reqs:    make(chan func(), 16),
		stopped: make(chan struct{}),
		probe:   cfg.Probe,
	}
	d.nack.init()
	d.disk = newDiskWriter(cfg.Logger, cfg.MapFile, cfg.HostsFile)

	// The name first: a second daemon must fail before touching anything.
	if d.probe == nil {
		ifs, err := openIfProbe()
		if err != nil {
			return nil, fmt.Errorf("unit %s: %w", cfg.Unit, err)
		}
		d.ifs, d.probe = ifs, ifs
	}
	if l, err := ctl.OpenPortList(cfg.Unit); err == nil {
		d.list = l
	}
	srv, err := ctl.Listen(ctl.MapperName(cfg.Unit), d.statusDoc)
	if err != nil {
		d.Close()
		if errors.Is(err, ctl.ErrInUse) {
			if pid, perr := ctl.Owner(ctl.MapperName(cfg.Unit)); perr == nil {
				return nil, fmt.Errorf("%w for unit %s in this network namespace (pid %d)", ErrBusy, cfg.Unit, pid)
			}
			return nil, fmt.Errorf("%w for unit %s in this network namespace", ErrBusy, cfg.Unit)
		}
		return nil, fmt.Errorf("unit %s: %w", cfg.Unit, err)
	}
	d.srv = srv
	// The ports' connections: taken after the mapper name, so a second
	// daemon never gets here.
	if d.watch, err = ctl.ListenWatch(cfg.Unit, d.portEvent); err != nil {
		d.Close()
		return nil, fmt.Errorf("unit %s: %w", cfg.Unit, err)
	}

	macs := make([]nodemap.MAC, len(cfg.Interfaces))
	mtu := 0
	for i, name := range cfg.Interfaces {
		mac, ifmtu, err := d.probe.Addr(name)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("unit %s: interface %s: %w", cfg.Unit, name, err)
		}
		if len(mac) != 6 {
			d.Close()
			return nil, fmt.Errorf("unit %s: %s is not an Ethernet interface", cfg.Unit, name)
		}
		r := &rail{name: name, mac: nodemap.MAC(mac), mtu: ifmtu, up: true}
		macs[i] = r.mac
		if mtu == 0 || ifmtu < mtu {
			mtu = ifmtu
		}
		d.rails = append(d.rails, r)
	}

	state, err := loadState(cfg.HostsFile)
	if err != nil {
		d.Close()
		return nil, err
	}
	floor := uint32(0)
	if data, err := os.ReadFile(cfg.MapFile); err == nil {
		if m, err := nodemap.Parse(data); err == nil && m.Version > 0 {
			floor = m.Version
		}
	}
	mc := mapper.Config{
		Host: cfg.Host, Level: cfg.Level, MACs: macs, EtherType: cfg.EtherType,
		VerifyInterval: cfg.VerifyInterval, NumPasses: cfg.NumPasses,
		State: state, VersionFloor: floor, MTU: min(max(mtu, 576), 65535),
	}
	d.core, err = cfg.NewCore(mc, output{d})
	if err != nil {
		d.Close()
		return nil, err
	}
	d.log.Info("gm_mapper starting", "unit", cfg.Unit, "interfaces", cfg.Interfaces, "host", cfg.Host,
		"level", cfg.Level, "map_file", cfg.MapFile, "hosts_file", cfg.HostsFile,
		"hosts_known", len(state.Hosts), "last_version", state.LastVersion)
	return d, nil
}

// Run runs the Driver until Stop is called (or a fatal error). It returns
// nil after Stop.
func (d *Driver) Run() error {
	defer close(d.stopped)
	go d.disk.run()
	defer d.disk.close()
	d.timer = time.NewTimer(time.Hour)
	now := d.now()
	d.pollInterfaces(now, true)
	d.probePorts(now)
	nextPoll := now + d.cfg.PollInterval
	for !d.stop.Load() {
		now = d.now()
		if now >= nextPoll {
			d.pollInterfaces(now, false)
			if now >= d.nextPortProbe {
				d.probePorts(now)
				d.logChanges()
			}
			nextPoll = now + d.cfg.PollInterval
		}
		d.serveRequests()
		d.watchPorts(now)
		d.syncLinks()
		d.recvAll()
		now = d.now()
		if dl := d.core.NextDeadline(); now >= dl {
			d.core.Tick(now)
		}
		wait := max(d.core.NextDeadline()-now, 0)
		if d.cfg.RecvPoll >= 0 {
			d.sleep(min(wait, d.recvPoll()))
			continue
		}
		wait = min(wait, max(nextPoll-now, 0))
		if d.waitAll == nil {
			d.sleep(wait)
			continue
		}
		// The links' frames are read by recvAll on the next round. A
		// negative timeout would wait without limit.
		if err := d.waitAll(max(wait, 0)); err != nil {
			if errors.Is(err, link.ErrClosed) {
				// A link was closed under us (interface removed):
				// rebuild the wait set on the next round.
				d.waitAll, d.waitSet = nil, nil
				continue
			}
			d.log.Warn("wait", "err", err)
			d.sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// recvPoll is how long frames may wait in the rings now.
func (d *Driver) recvPoll() time.Duration {
	if d.cfg.RecvPoll > 0 {
		return min(d.cfg.RecvPoll, d.core.RecvDelay())
	}
	return d.core.RecvDelay()
}

// recvAll reads every link's ring until it is empty (or a bounded number
// of frames was read). A look that finds a full batch of frames waiting
// first asks whether the kernel dropped frames from the ring since the
// previous look, and tells the core (mapper.Mapper.FramesLost), so that
// it counts no silence over that window: a ring that dropped frames was
// full, so the next look finds a batch at least. Other looks make no
// system call (see rawIoctlIfreq: the Stats of a link.Link make one).
func (d *Driver) recvAll() {
	for k, l := range d.waitSet {
		rail := d.wl[k].rail
		n := l.Recv(d.frames)
		if n == len(d.frames) {
			d.checkDrops(rail, l)
		}
		d.rails[rail].readAt = d.now()
		for range 64 {
			if n == 0 {
				break
			}
			d.dispatch(d.wl[k], d.frames[:n])
			n = l.Recv(d.frames)
		}
	}
}

// checkDrops tells the core when the kernel dropped frames from rail's
// full receive ring since the previous look at it (a PACKET_STATISTICS
// read).
func (d *Driver) checkDrops(rail int, l link.Endpoint) {
	r := d.rails[rail]
	if drops := l.Stats().KernelDrops; drops > r.drops {
		d.core.FramesLost(rail, r.readAt, d.now())
		r.drops = drops
	}
}

// dispatch hands frames received on w to the core or answers them.
func (d *Driver) dispatch(w waitLink, frames [][]byte) {
	now := d.now()
	for _, f := range frames {
		// A link that cannot select target ports (no link.CapPortFilter
		// behind its Config.Ports) hands over every port's frames.
		if h, err := wire.ParseFrame(f, d.cfg.EtherType); err == nil && h.TargetPort() == MapperPort {
			d.core.Input(now, w.rail, f)
		}
	}
}

// sleep waits for wait, a request, a port's event or Stop.
func (d *Driver) sleep(wait time.Duration) {
	d.timer.Reset(wait)
	select {
	case f := <-d.reqs:
		f()
	case <-d.nudge:
	case <-d.timer.C:
		return
	}
	if !d.timer.Stop() {
		<-d.timer.C
	}
}

// serveRequests runs the functions other goroutines queued (Status).
func (d *Driver) serveRequests() {
	for {
		select {
		case f := <-d.reqs:
			f()
		default:
			return
		}
	}
}

// do runs f on the Driver's goroutine and waits for it, at most timeout.
// It reports whether f ran.
func (d *Driver) do(f func(), timeout time.Duration) bool {
	done := make(chan struct{})
	req := func() { f(); close(done) }
	select {
	case d.reqs <- req:
	case <-d.stopped:
		return false
	case <-time.After(timeout):
		return false
	}
	d.wake()
	select {
	case <-done:
		return true
	case <-d.stopped:
		return false
	case <-time.After(timeout):
		return false
	}
}

// wake interrupts the Driver's Wait.
func (d *Driver) wake() {
	if p := d.wakeLinks.Load(); p != nil {
		for _, l := range *p {
			l.Wake()
		}
	}
}

// Stop makes Run return. Safe from any goroutine (a signal handler's).
func (d *Driver) Stop() {
	d.stop.Store(true)
	d.wake()
	// Run may sleep without links.
	select {
	case d.reqs <- func() {}:
	default:
	}
}

// Close releases the ctl names and closes every link. Call it after Run
// has returned (or instead of Run).
func (d *Driver) Close() error {
	for _, r := range d.rails {
		r.closeLinks()
	}
	if d.watch != nil {
		d.watch.Close()
	}
	if d.list != nil {
		d.list.Close()
	}
	if d.ifs != nil {
		d.ifs.close()
	}
	if d.srv != nil {
		return d.srv.Close()
	}
	return nil
}

// Status returns the status document. From another goroutine while Run
// runs, it asks Run's goroutine (at most 2 s); otherwise it returns the last
// document Run made.
func (d *Driver) Status() Status {
	var s Status
	if d.do(func() { s = d.status() }, 2*time.Second) {
		return s
	}
	if p := d.lastStatus.Load(); p != nil {
		return *p
	}
	return Status{PID: os.Getpid(), Unit: d.cfg.Unit, Start: d.start}
}

func (d *Driver) statusDoc() any { return d.Status() }

// status builds the document on Run's goroutine.
func (d *Driver) status() Status {
	s := Status{
		Status: d.core.Status(),
		PID:    os.Getpid(), Unit: d.cfg.Unit, Start: d.start,
		MapFile: d.cfg.MapFile, HostsFile: d.cfg.HostsFile,
		OpenPorts:          []int{},
		PortsClosedByEvent: d.ports.byEvent, PortsClosedByPoll: d.ports.byPoll,
		ClosedNacks: d.nack.sent.Load(), SendErrors: d.sendErrors + d.answerErrors.Load(),
	}
	for i, r := range d.rails {
		it := Interface{Rail: i, Name: r.name, MAC: nodemap.FormatMAC(r.mac), Up: r.up}
		if r.lk != nil {
			ls := r.lk.Stats()
			it.Mode = ls.Mode
			it.Link = LinkCounters{RxFrames: ls.RxFrames, TxFrames: ls.TxFrames, KernelDrops: ls.KernelDrops, CRCErrors: ls.CRCErrors, Malformed: ls.Malformed}
		}
		if r.closed != nil {
			it.ClosedPorts = uint32(r.mask)
		}
		s.Interfaces = append(s.Interfaces, it)
	}
	s.OpenPorts = append(s.OpenPorts, portList(d.ports.open())...)
	s.WatchedPorts = append([]int{}, portList(d.ports.conn)...)
	d.lastStatus.Store(&s)
	return s
}

func (d *Driver) now() mapper.Time { return time.Since(d.start) }

// logChanges logs what changed in the network since the last call: the
// mapper in charge, "fully configured", names and MACs claimed twice.
func (d *Driver) logChanges() {
	st := d.core.Summary()
	l := &d.logged
	if st.Elected != l.elected || st.Leader != l.leader {
		switch {
		case st.Leader:
			d.log.Info("this host is the mapper in charge", "level", st.Level)
		case st.Elected != "":
			d.log.Info("mapper in charge", "mapper", st.Elected)
		}
		l.elected, l.leader = st.Elected, st.Leader
	}
	// A new map can be installed and configured between two looks: its
	// version is news even if the flag did not change.
	if st.Configured != l.configured || (st.Configured && st.MapVersion != l.version) {
		if st.Configured {
			d.log.Info("network fully configured", "version", st.MapVersion, "hosts", st.Hosts, "mapper", st.Mapper)
			l.version = st.MapVersion
		} else if st.MapVersion != 0 {
			d.log.Info("network NOT fully configured", "version", st.MapVersion, "hosts", st.Hosts)
		}
		l.configured = st.Configured
	}
	var key strings.Builder
	for _, dup := range st.Duplicates {
		fmt.Fprintf(&key, "%s=%s:%v;", dup.Kind, dup.Value, dup.UniqueIDs)
	}
	if k := key.String(); k != l.dups {
		for _, dup := range st.Duplicates {
			d.log.Warn("claimed by more than one host; the later claimants are left out of the map",
				"kind", dup.Kind, "value", dup.Value, "hosts", strings.Join(dup.UniqueIDs, ","))
		}
		l.dups = k
	}
}

// output is the core's mapper.Output.
type output struct{ d *Driver }

func (o output) Send(rail int, frame []byte) {
	d := o.d
	if rail < 0 || rail >= len(d.rails) || d.rails[rail].lk == nil {
		return
	}
	if err := d.rails[rail].lk.Send(frame); err != nil {
		d.sendErrors++
		if d.sendErrors&(d.sendErrors-1) == 0 { // 1, 2, 4, 8...: not a flood
			d.log.Debug("send", "interface", d.rails[rail].name, "err", err, "errors", d.sendErrors)
		}
	}
}

func (o output) InstallMap(m *nodemap.Map) {
	d := o.d
	d.disk.saveMap(m)
	d.selfID = 0
	if e, ok := m.Self(d.cfg.Host, d.macs()...); ok {
		d.selfID = uint32(e.ID)
	}
	d.syncClosed() // a node id to answer for closed ports with
	d.log.Info("map installed", "version", m.Version, "mapper", nodemap.FormatMAC(m.Mapper),
		"hosts", m.Len(), "routes", len(m.Routes()), "node_id", d.selfID)
}

func (o output) SaveState(s mapper.State, sync bool) {
	o.d.disk.saveState(s.Marshal())
	if sync {
		o.d.disk.flushState()
	}
}

func (d *Driver) macs() []nodemap.MAC {
	m := make([]nodemap.MAC, len(d.rails))
	for i, r := range d.rails {
		m[i] = r.mac
	}
	return m
}

// loadState reads the hosts file; a missing file is a fresh start.
func loadState(path string) (mapper.State, error) {
	if path == "" {
		return mapper.State{}, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return mapper.State{}, nil
	}
	if err != nil {
		return mapper.State{}, fmt.Errorf("hosts file: %w", err)
	}
	s, err := mapper.ParseState(data)
	if err != nil {
		return mapper.State{}, fmt.Errorf("hosts file %s: %w", path, err)
	}
	return s, nil
}

// syncLinks rebuilds the wait set when the set of open links changed.
func (d *Driver) syncLinks() {
	var ls []link.Endpoint
	var wl []waitLink
	for i, r := range d.rails {
		if r.lk != nil {
			ls = append(ls, r.lk)
			wl = append(wl, waitLink{rail: i})
		}
	}
	if slices.Equal(ls, d.waitSet) && (d.waitAll != nil || d.cfg.RecvPoll > 0 || len(ls) == 0) {
		return
	}
	d.wl, d.waitSet = wl, ls
	d.wakeLinks.Store(&ls)
	d.waitAll = nil
	if len(ls) > 0 && d.cfg.RecvPoll < 0 {
		d.waitAll = waitFunc(ls)
	}
}

// waitFunc returns how the Driver sleeps on its links (link.NewWaiter).
// It consumes no frame (recvAll reads them).
func waitFunc(eps []link.Endpoint) func(time.Duration) error {
	return link.NewWaiter(eps...).Wait
}
