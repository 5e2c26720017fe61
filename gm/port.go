package gm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethergm/ethergm/gm/internal/proto"
	"github.com/ethergm/ethergm/gm/internal/rail"
	"github.com/ethergm/ethergm/gm/link"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/token"
	"github.com/ethergm/ethergm/wire"
)

// Port and protocol constants of GM.
const (
	// NumPorts is GM_NUM_PORTS.
	NumPorts = wire.NumPorts
	// DaemonPortID is GM_DAEMON_PORT_ID (reserved, privileged).
	DaemonPortID = 0
	// MapperPortID is GM_MAPPER_PORT_ID (reserved, privileged).
	MapperPortID = 1
	// EthernetPortID is GM_ETHERNET_PORT_ID (reserved, privileged).
	EthernetPortID = 3
	// MTU is GM_MTU, what Port.MTU reports. Frames on the wire are cut to
	// the link's MTU instead; this constant is kept for GM clients.
	MTU = 4096
	// MinMessageSize is GM_MIN_MESSAGE_SIZE.
	MinMessageSize = token.MinMessageSize
	// NumSizes is GM_NUM_SIZES.
	NumSizes = token.NumSizes
	// TicksPerMicrosecond is GM_TICKS_PER_USEC: Ticks counts half
	// microseconds.
	TicksPerMicrosecond = 2
	// MaxPortNameLen is GM_MAX_PORT_NAME_LEN.
	MaxPortNameLen = 32
)

// Priority is a GM priority.
type Priority uint8

// The two GM priorities.
const (
	LowPriority  Priority = 0 // GM_LOW_PRIORITY
	HighPriority Priority = 1 // GM_HIGH_PRIORITY
	// NumPriorities is GM_NUM_PRIORITIES.
	NumPriorities = 2
)

// SendCallback is gm_send_completion_callback_t: it runs inside Unknown
// when a send (or ResumeSending/DropSends) completes, with the context given
// to the send and the completion status. The send token is free again when
// it runs. It may call any method of the port.
type SendCallback func(p *Port, ctx any, status Status)

// Errors returned for misuse. GM's calls return void and report misuse as
// fatal events; these are returned instead, and the call has no effect.
var (
	// ErrNoSendToken means every send token is in use. Handle events (pass
	// SentTokensEvent to Unknown) to get tokens back.
	ErrNoSendToken = proto.ErrNoSendToken
	// ErrNoReceiveToken means every receive token is in use (as many
	// buffers are provided as the port has receive tokens).
	ErrNoReceiveToken = token.ErrNoReceiveToken
	// ErrLength means a length above MaxLengthForSize(size) or len(msg).
	ErrLength = proto.ErrLength
	// ErrSize means a size class outside 3..31 for a send.
	ErrSize = proto.ErrSize
	// ErrPriority means a priority other than LowPriority or HighPriority.
	ErrPriority = proto.ErrPriority
	// ErrPortID means a port id outside 0..15.
	ErrPortID = proto.ErrPort
	// ErrUnknownNode means a node id that is not in the node map.
	ErrUnknownNode = proto.ErrNode
	// ErrClosed means the port is closed.
	ErrClosed = errors.New("gm: port is closed")
)

// MinSizeForLength is gm_min_size_for_length: ceil(log2(n+8)).
func MinSizeForLength(n int) uint8 { return token.MinSizeForLength(n) }

// MaxLengthForSize is gm_max_length_for_size: 2^size-8 (0 for size < 3).
func MaxLengthForSize(size uint8) int { return token.MaxLengthForSize(size) }

// Port is an open GM port (struct gm_port).
//
// # Concurrency
//
// A Port's state is guarded by one mutex. Every method may be called from
// any goroutine, but GM's contract still holds: events returned by Receive
// and its variants are valid only until the next receive or Unknown call,
// so one goroutine should run the receive loop. Callbacks (send completions
// and alarms) run only inside Unknown, on the caller's goroutine, without
// the mutex held, so they may call the port again.
//
// Receive polls the link itself, under the mutex, with no goroutine
// hand-off. A progress goroutine keeps the protocol alive when the
// application does not call Receive: about every millisecond, unless the
// application polled since its last tick (it then leaves the mutex
// untouched: the polls drain the link and run the timers) or a call of it
// holds the mutex (for up to four ticks in a row), it takes the mutex,
// drains the link, sends acks, retransmits, answers with nacks and queues
// the events for the next Receive. Its tick also refreshes the port's
// coarse clock: sends and polls that find no frame read no clock. While
// the application sleeps inside BlockingReceive, the mutex is released and
// the sleeper owns the link; the progress goroutine wakes it when a timer
// is due.
type Port struct {
	mu    sync.Mutex
	eng   *proto.Engine
	rails *rail.Set // the unit's interfaces, one rail each (rails.go)

	id         int
	name       string
	unit       *Unit
	cfgHost    string                 // the configured or kernel host name
	host       atomic.Pointer[string] // HostName: the map's name once the map lists this host
	nodeID     atomic.Uint32          // 0 until a map lists this host
	mac        [6]byte
	macs       []nodemap.MAC // every rail's MAC, for finding this host in a map
	cfg        Config
	start      time.Time
	owner      *portOwner
	mapW       nodemap.Watcher
	nodeMap    atomic.Pointer[NodeMap]
	mapChanges atomic.Uint64
	openMask   atomic.Uint32
	rxPorts    atomic.Uint32 // the target ports the links receive, a link.PortMask (rxPortsFor; set by Open, then the progress goroutine; read by Info)
	ready      atomic.Bool   // the port is built (Info may look at the engine)

	cur Event
	// waiting: the application is inside link.Wait (written with mu
	// held; the progress goroutine reads it without mu).
	waiting atomic.Bool
	// sentDefers: how many receive events in a row the queued
	// SENT_TOKENS event let pass (see nextEventLocked).
	sentDefers int

	alarms      []*Alarm
	alarmQueued bool

	tokAcct sendTokenAccounts // gm_alloc_send_token & co. (sendtoken.go; guarded by mu)

	// The coarse clock (see clockLocked): last is the latest time the
	// port gave the engine (guarded by mu); tickClock the progress
	// goroutine's reading at its last tick, and ticks the number of its
	// ticks (written by it alone, read without mu).
	last  time.Duration
	fresh int // sends and frame polls that may still take last without reading the clock (guarded by mu)
	// coarse: the engine takes the coarse clock for frames too and reads
	// the clock itself for round-trip samples (proto.Config.Clock); off
	// with congestion control, whose delay signal wants every sample.
	coarse    bool
	tickClock atomic.Int64
	ticks     atomic.Uint64
	// polled: the application polled since the progress goroutine's last
	// tick (set by the polls, cleared by the tick; see progress).
	polled atomic.Bool
	// quietPolls is how many more Receive calls may answer NoRecvEvent
	// from a few loads while the progress goroutine's tick count is
	// quietTick, and drainTick the tick count at the last drain of an idle
	// link (see Receive and pollLocked; guarded by mu).
	quietPolls int
	quietTick  uint64
	drainTick  uint64
	closed     atomic.Bool
	done       chan struct{}
	wg         sync.WaitGroup

	// pages: the port was opened with Config.VirtualAddresses; its
	// registered pages (pages.go; guarded by mu).
	pages *pageTable
}

// Open is gm_open: it opens port id of the unit named unit (see
// ResolveUnit; "" means the default unit) with a free-form name for
// diagnostics. cfg may be nil.
//
// A port is exclusive per (network namespace, unit name, port id): while
// it is open, its process holds the abstract Unix socket
// ctl.PortName(unit, id), which the kernel frees when the process dies,
// whatever state directory or user the process has. Open creates and
// writes nothing in the file system. Tools find the holder, and read its
// PortInfo, on that socket (ListPorts).
//
// The node map need not list this host yet, nor exist: the port then opens
// with NodeID 0 (GM's "node id not yet set"), sends fail at once with
// NodeIDNotYetSet, and the port takes its node id and works as soon as a
// map that lists the host appears (it is checked every Config.MapPoll).
//
// Errors wrap a Status and their cause (errors.Is works on both, e.g.
// os.ErrPermission): Busy if another process holds the port (the message
// names its pid), PermissionDenied for a reserved port (0, 1, 3) without
// cfg.Privileged, for a missing capability (CAP_NET_RAW) or an unreadable
// map file, InvalidPortNumber, NoSuchDevice for a missing interface,
// UnsupportedDevice for an interface that cannot carry EtherGM, Failure
// for a down interface (every interface of a unit of several: see Unit),
// InvalidParameter for a malformed map file (the message names the file
// and line) or a token count out of bounds (Config.SendTokens,
// Config.ReceiveTokens), UntranslatedSystemError and Failure otherwise.
func Open(unit string, id int, name string, cfg *Config) (*Port, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	u, err := ResolveUnit(unit, cfg)
	if err != nil {
		return nil, err
	}
	return OpenUnit(u, id, name, cfg)
}

// OpenUnit is Open with an already resolved unit.
func OpenUnit(u *Unit, id int, name string, cfg *Config) (*Port, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if id < 0 || id >= NumPorts {
		return nil, fmt.Errorf("%w: there is no port %d (ports are 0..%d)", InvalidPortNumber, id, NumPorts-1)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if (id == DaemonPortID || id == MapperPortID || id == EthernetPortID) && !c.Privileged {
		return nil, fmt.Errorf("%w: port %d is reserved for GM's daemons (ports 0, 1 and 3)", PermissionDenied, id)
	}
	if len(name) > MaxPortNameLen {
		name = name[:MaxPortNameLen]
	}
	if len(u.Interfaces) == 0 {
		return nil, fmt.Errorf("%w: unit %q has no interface", NoSuchDevice, u.Name)
	}
	host, err := c.host()
	if err != nil {
		return nil, fmt.Errorf("%w: host name: %w", UntranslatedSystemError, err)
	}
	p := &Port{id: id, name: name, unit: u, cfgHost: host, cfg: c, start: time.Now(), done: make(chan struct{})}
	p.host.Store(&host)
	p.mapW.Path = c.mapFile()
	m, err := p.mapW.Load()
	if err != nil {
		if err = mapError(p.mapW.Path, err); err != nil {
			return nil, err
		}
	}
	p.nodeMap.Store(m)

	p.owner, err = claimPort(u.Name, id, func() any { return p.Info() })
	if err != nil {
		return nil, err
	}
	lc := c.Link
	p.openMask.Store(p.owner.openMask(0))
	lc.Ports = rxPortsFor(id, p.openMask.Load())
	p.rxPorts.Store(uint32(lc.Ports))
	lc.SpinTime = -1
	lc.QdiscBypass = !c.UseQdisc
	if err := c.linkAuth(&lc); err != nil {
		p.owner.release()
		return nil, err
	}
	lks, err := openLinks(u, &lc, c.openLink, c.WrapLink)
	if err != nil {
		p.owner.release()
		return nil, linkError(err)
	}
	p.rails = rail.New(lks)
	p.macs = p.rails.MACs()
	p.mac = p.macs[0]
	var self NodeID
	if e, ok := m.Self(host, p.macs...); ok {
		self = e.ID
		p.host.Store(&e.Host)
	}
	p.nodeID.Store(uint32(self))
	p.rails.SetMap(m, uint32(self))
	geo := p.rails.Geometry()
	noCC := !c.CongestionControl && os.Getenv(EnvCongestionControl) != "1"
	var clock func() time.Duration
	if p.coarse = noCC; p.coarse {
		// Called by the engine with the mutex held.
		clock = p.readClockLocked
	}
	p.eng = proto.New(proto.Config{
		NodeID: uint32(self), Port: uint8(id), MAC: p.mac,
		SegLen:     p.linkMTU() - wire.HeaderLen,
		SendTokens: c.SendTokens, RecvTokens: c.ReceiveTokens,
		Window: c.Window, RecvWindow: recvWindow(geo), ZeroCopyMin: geo.ZeroCopyMin,
		ProgressTimeout:     c.ProgressTimeout, // 0: the defaults (DefaultProgressTimeout...)
		LivenessTimeout:     c.LivenessTimeout,
		Resolve:             p.rails.Resolve,
		Sources:             p.sources,
		AnswerClosed:        p.answerClosed,
		NoCongestionControl: noCC,
		Clock:               clock,
	}, p.rails)
	// A later incarnation of the port starts its datagram counter above
	// everything this one sends (receivers drop counters they have seen;
	// see proto's datagram notes), unless the clock steps back.
	p.eng.SetDatagramCounter(uint64(time.Now().UnixNano()))
	if c.VirtualAddresses {
		p.pages = newPageTable()
		p.eng.SetMemory(p.pages)
	}
	p.rails.Attach(p.eng, p.now)
	p.ready.Store(true)
	p.wg.Add(1)
	go p.progress()
	return p, nil
}

// mapError turns an error loading the node map at path into Open's error,
// or nil: a missing map is not an error (the port waits for one).
func mapError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, nodemap.ErrFormat):
		// The watcher's error names the file and the line.
		return fmt.Errorf("%w: %w", InvalidParameter, err)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%w: node map %s cannot be read: %w", PermissionDenied, path, err)
	}
	return fmt.Errorf("%w: node map %s: %w", UntranslatedSystemError, path, err)
}

// linkError turns an error opening the unit's links into Open's error.
func linkError(err error) error {
	var oe *link.OpError
	errors.As(err, &oe)
	switch {
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%w: %w", PermissionDenied, err)
	case errors.Is(err, link.ErrNoInterface) && oe != nil:
		return noInterface(oe.Interface, err)
	case errors.Is(err, link.ErrNotEthernet), errors.Is(err, link.ErrMTU):
		return fmt.Errorf("%w: %w", UnsupportedDevice, err)
	case errors.Is(err, link.ErrInterfaceDown):
		return fmt.Errorf("%w: %w", Failure, err)
	case oe != nil:
		return fmt.Errorf("%w: %w", UntranslatedSystemError, err)
	}
	// openLinks' own checks of the unit (too many rails, a repeated
	// interface).
	return fmt.Errorf("%w: %w", InvalidParameter, err)
}

// DefaultWindow is the number of frames a stream keeps in flight when
// Config.Window is 0 (fewer if the peer's receive ring is smaller: see
// Config.Window), and MaxWindow the largest Config.Window.
const (
	DefaultWindow = proto.DefaultWindow
	MaxWindow     = proto.MaxWindow
)

// recvWindow returns the window the port advertises to the senders of its
// peers (in its OPEN_ACKs): half the full-size frames its receive ring
// holds, so that one stream cannot overflow the ring while the port is
// busy elsewhere; 0 if the link knows no bound. With link.Link's default
// ring (64 x 128 KiB) that is about 2600 frames at MTU 1500 (the engine
// caps it at MaxWindow) and 448 at MTU 9000.
func recvWindow(g link.Geometry) int {
	if g.RxFrames <= 0 {
		return 0
	}
	return max(g.RxFrames/2, 1)
}

func defDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// sources is the engine's Config.Sources: the rail set's.
func (p *Port) sources(node uint32, dst *[proto.MaxSources][6]byte) int {
	return p.rails.Sources(node, dst[:])
}

// linkMTU is the MTU frames are cut to: the smallest of the rails'.
func (p *Port) linkMTU() int { return p.rails.MTU() }

// answerClosed reports whether this port answers frames for local port tp
// with NackPortClosed: tp is not open on this unit and this is the
// lowest-numbered open port.
func (p *Port) answerClosed(tp uint8) bool {
	if tp >= NumPorts {
		return false
	}
	m := p.openMask.Load()
	if m&(1<<tp) != 0 {
		return false
	}
	if m&(1<<p.id-1) != 0 {
		return false // a lower port answers
	}
	// The mask is refreshed every MapPoll: the port may have opened
	// since. Look again (at most every maskRecheck) before calling it
	// closed.
	m = p.owner.openMask(maskRecheck)
	p.openMask.Store(m)
	return m&(1<<tp) == 0 && m&(1<<p.id-1) == 0
}

// rxPortsFor returns the target ports the links of port id receive when
// the unit's open ports are open (a mask, bit p for port p): its own, and
// every closed port if it is the lowest-numbered open port, which answers
// for them (answerClosed). The other ports' frames never enter its ring:
// with 16 ports open, a port would otherwise read 16 times the frames it
// needs, and one port's burst could fill every other port's ring.
func rxPortsFor(id int, open uint32) link.PortMask {
	own := link.PortMask(1) << id
	if open&(1<<id-1) != 0 {
		return own // a lower port answers for the closed ones
	}
	return own | link.PortMask(maskUnknown&^open)
}

// maskRecheck is how old a list of the open ports answerClosed may reuse.
// A port that opened after the list was read can have been sent to only
// after its Open returned, which takes longer (it opens the links' rings).
const maskRecheck = 100 * time.Microsecond

// now reads the clock: the time since the port opened. The fast path
// does not call it per message or per poll; it takes the coarse clock
// (clockLocked), read again once per batch of sends and polls that find
// frames (batchClockLocked), and the engine reads it for its round-trip
// samples (proto.Config.Clock).
func (p *Port) now() time.Duration {
	if p.cfg.clock != nil {
		return p.cfg.clock()
	}
	return time.Since(p.start)
}

// clockLocked returns the port's coarse clock without reading the clock:
// the latest of the port's last reading and the progress goroutine's
// reading at its last tick. It never goes back, and lags the clock by at
// most the time since the last poll that found frames or the last tick
// (about progressTick; more on a loaded machine). The engine takes it for
// what tolerates that lag: queued events and timers that are not due
// (they run late, never early). Sends take it only shortly after a
// reading (sendClockLocked).
func (p *Port) clockLocked() time.Duration {
	if t := time.Duration(p.tickClock.Load()); t > p.last {
		p.last = t
	}
	return p.last
}

// readClockLocked reads the clock into the coarse clock and returns it.
func (p *Port) readClockLocked() time.Duration {
	p.last = max(p.last, p.now())
	p.fresh = freshUses
	return p.last
}

// batchClockLocked is the time of a send, or of a poll that finds frames
// (with p.coarse): the clock read last for up to freshUses of them in a
// row, then the clock read again. A batch of messages thus reads the
// clock once, however it is split between sends and receives. The time
// arms timers (a retransmission timer is early by the time's lag, which
// MaxAckDelay covers while the lag is a few messages' worth, or a tick
// of the progress goroutine) and stamps frames (their peer's liveness:
// late by the lag); the engine reads the clock itself for round-trip
// samples (proto.Config.Clock). The progress goroutine's reading alone
// can be far behind on a loaded machine: hence the count.
func (p *Port) batchClockLocked() time.Duration {
	if p.fresh > 0 {
		p.fresh--
		return p.clockLocked()
	}
	return p.readClockLocked()
}

// freshUses is how many sends and polls that find frames take the clock's
// last reading (see batchClockLocked).
const freshUses = 16

// pollClockLocked is the time of a poll: the clock, read once, if an
// alarm may fall due before the next tick (alarms are rare, and run at
// their time); if frames wait in the rails, or a timer of the engine may
// fall due before the next tick, the batch's clock (batchClockLocked;
// without p.coarse the clock, read once: the frames' arrival times make
// round-trip samples); otherwise the coarse clock. An engine timer thus
// runs late by at most a batch's worth of polls, or a tick. Any of these
// times is taken before the drain, as drainLocked requires (the coarse
// clock is never ahead of the clock). idle is what the poll found in the
// rails (rail.Set.Idle).
func (p *Port) pollClockLocked(idle bool) time.Duration {
	now := p.clockLocked()
	if a := p.nextAlarmLocked(); a != 0 && a-now <= progressTick {
		return p.readClockLocked()
	}
	if d := p.eng.NextDeadline(); !idle || d != 0 && d-now <= progressTick {
		if p.coarse {
			return p.batchClockLocked()
		}
		return p.readClockLocked()
	}
	return now
}

// markPolled records, for the progress goroutine, that the application
// polls: one load per poll, one store per tick.
func (p *Port) markPolled() {
	if !p.polled.Load() {
		p.polled.Store(true)
	}
}

// Close is gm_close. Peers with frames in flight to this port are told it
// closed (their sends fail with SendTargetPortClosed); later sends to it
// fail the same way if another port of this host is open, and with
// SendTargetNodeUnreachable otherwise. Sends of this port still in progress
// are abandoned without callbacks. A capture the program attached
// (Config.WrapLink) is the program's to flush and close, after the port.
// Close is idempotent.
func (p *Port) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	close(p.done)
	p.wg.Wait()
	p.mu.Lock()
	p.eng.Close(p.readClockLocked())
	err := p.rails.Close()
	p.mu.Unlock()
	// Last, without the mutex (a query being answered may wait for it):
	// the port is free for others once its links are closed.
	p.owner.release()
	return err
}

// ---- identity ----

// ID is gm_get_port_id.
func (p *Port) ID() int { return p.id }

// Name returns the name given to Open.
func (p *Port) Name() string { return p.name }

// Unit returns the port's unit.
func (p *Port) Unit() *Unit { return p.unit }

// NumPorts is gm_num_ports.
func (p *Port) NumPorts() int { return NumPorts }

// MTU is gm_mtu: GM_MTU (4096), whatever the link MTU.
func (p *Port) MTU() int { return MTU }

// MinMessageSize is gm_min_message_size.
func (p *Port) MinMessageSize() int { return MinMessageSize }

// NodeID is gm_get_node_id: this host's node id from the node map (GM-1
// semantics: stable and network-wide, not GM-2's constant 1). It follows
// changes of the map file. It is NoSuchNodeID (0, GM's "node id not yet
// set") until a node map lists this host.
func (p *Port) NodeID() NodeID { return NodeID(p.nodeID.Load()) }

// HostName is gm_get_host_name: this host's name in the node map (which
// differs from the configured or kernel name when the map lists the host
// under another name and the port found it by MAC address); before a map
// lists the host, Config.Host, ETHERGM_HOST or the kernel host name.
func (p *Port) HostName() string { return *p.host.Load() }

// UniqueID is gm_unique_id / gm_get_unique_board_id: the MAC address of the
// unit's first interface.
func (p *Port) UniqueID() [6]byte { return p.mac }

// NodeMap returns the node map the port currently follows.
func (p *Port) NodeMap() *NodeMap { return p.nodeMap.Load() }

// HostNameToNodeID is gm_host_name_to_node_id_ex (and the deprecated
// gm_host_name_to_node_id): the node id of host name. A ":N" board suffix
// is accepted and ignored. An unknown name is NoMatch, at once (the
// lookup is local, the timeout of GM's _ex form is not needed).
func (p *Port) HostNameToNodeID(name string) (NodeID, error) {
	e, ok := p.nodeMap.Load().ByHost(name)
	if !ok {
		if i := lastColon(name); i > 0 {
			e, ok = p.nodeMap.Load().ByHost(name[:i])
		}
	}
	if !ok {
		return NoSuchNodeID, fmt.Errorf("%w: host %q is not in the node map", NoMatch, name)
	}
	return e.ID, nil
}

func lastColon(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			return i
		}
	}
	return -1
}

// NodeIDToHostName is gm_node_id_to_host_name_ex.
func (p *Port) NodeIDToHostName(id NodeID) (string, error) {
	e, ok := p.nodeMap.Load().ByID(id)
	if !ok {
		return "", fmt.Errorf("%w: node id %d is not in the node map", NoMatch, id)
	}
	return e.Host, nil
}

// UniqueIDToNodeID is gm_unique_id_to_node_id: the node whose unit has the
// MAC address mac (any rail).
func (p *Port) UniqueIDToNodeID(mac [6]byte) (NodeID, error) {
	e, ok := p.nodeMap.Load().ByMAC(mac)
	if !ok {
		return NoSuchNodeID, fmt.Errorf("%w: unique id %x is not in the node map", NoMatch, mac)
	}
	return e.ID, nil
}

// NodeIDToUniqueID is gm_node_id_to_unique_id: the first MAC address of
// node id.
func (p *Port) NodeIDToUniqueID(id NodeID) ([6]byte, error) {
	e, ok := p.nodeMap.Load().ByID(id)
	if !ok || len(e.MACs) == 0 {
		return [6]byte{}, fmt.Errorf("%w: node id %d is not in the node map", NoMatch, id)
	}
	return e.MACs[0], nil
}

// NodeIDToGlobalID is gm_node_id_to_global_id. Global ids are the low 32
// bits of a node's first MAC address.
func (p *Port) NodeIDToGlobalID(id NodeID) (uint32, error) {
	e, ok := p.nodeMap.Load().ByID(id)
	if !ok {
		return 0, fmt.Errorf("%w: node id %d is not in the node map", NoMatch, id)
	}
	return e.GlobalID(), nil
}

// GlobalIDToNodeID is gm_global_id_to_node_id.
func (p *Port) GlobalIDToNodeID(g uint32) (NodeID, error) {
	for _, e := range p.nodeMap.Load().Entries() {
		if e.GlobalID() == g {
			return e.ID, nil
		}
	}
	return NoSuchNodeID, fmt.Errorf("%w: global id %#x is not in the node map", NoMatch, g)
}

// MaxNodeIDInUse is gm_max_node_id_in_use: the largest id in the node map.
func (p *Port) MaxNodeIDInUse() NodeID {
	var m NodeID
	for _, e := range p.nodeMap.Load().Entries() {
		m = max(m, e.ID)
	}
	return m
}

// MaxNodeID is gm_max_node_id: the largest node id a map may hold.
func (p *Port) MaxNodeID() NodeID { return MaxNodeID }

// ---- tokens and buffers ----

// NumSendTokens is gm_num_send_tokens (61 unless Config.SendTokens).
func (p *Port) NumSendTokens() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.eng.SendTokens().Total()
}

// NumReceiveTokens is gm_num_receive_tokens (253 unless
// Config.ReceiveTokens).
func (p *Port) NumReceiveTokens() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.eng.Pools().Tokens().Total()
}

// FreeSendTokens returns how many send tokens are free now.
func (p *Port) FreeSendTokens() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.eng.SendTokens().Free()
}

// FreeReceiveTokens returns how many receive tokens are free now.
func (p *Port) FreeReceiveTokens() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.eng.Pools().Tokens().Free()
}

// ProvideReceiveBuffer is gm_provide_receive_buffer_with_tag (and, with
// tag 0, gm_provide_receive_buffer): it hands buf to the port for one
// message of exactly (size, pri). It takes a receive token; without one it
// returns ErrNoReceiveToken. buf may be shorter than MaxLengthForSize(size):
// a longer message sent to it is rejected (SendRejected at the sender). The
// port keeps buf until it comes back in a receive event.
func (p *Port) ProvideReceiveBuffer(buf []byte, size uint8, pri Priority, tag uint8) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return ErrClosed
	}
	return p.eng.Provide(buf, size, uint8(pri), tag)
}

// SetAcceptableSizes is gm_set_acceptable_sizes: bit s of mask set means
// size class s is accepted at priority pri; a message of another size is
// refused at once and its send fails with SendRejected. The default
// accepts every size.
func (p *Port) SetAcceptableSizes(pri Priority, mask uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.eng.Pools().SetAcceptable(uint8(pri), mask)
}

// ---- sending ----

// SendWithCallback is gm_send_with_callback: it sends msg[:length] as a
// message of size class size and priority pri to port port of node node,
// reliably and in order with the other sends of this (priority, node,
// port) stream. msg must stay untouched until cb runs (inside Unknown)
// with the completion status; cb may be nil. It takes one send token.
//
// GM's call returns void; this one returns an error (and does nothing) for
// misuse: ErrNoSendToken, ErrLength, ErrSize, ErrPriority, ErrPortID,
// ErrUnknownNode, ErrClosed, and an error wrapping NodeIDNotYetSet while
// no node map lists this host (see Open). Delivery failures are never
// returned here: they arrive as the callback's status.
func (p *Port) SendWithCallback(msg []byte, size uint8, length int, pri Priority, node NodeID, port int, cb SendCallback, ctx any) error {
	return p.submit(port, cb, func(now time.Duration, cbv any) error {
		return p.eng.Send(now, msg, size, length, uint8(pri), uint32(node), uint8(port), cbv, ctx)
	})
}

// submit runs op, one of the engine's send-like calls (it takes a send
// token and completes through the callback), under the port mutex with the
// current time and cb as the engine stores it (nil stays an untyped nil),
// then wakes a BlockingReceive sleeper if events became pending. op does
// not escape, so the closure costs no allocation.
func (p *Port) submit(port int, cb SendCallback, op func(now time.Duration, cb any) error) error {
	if port < 0 || port >= NumPorts {
		return ErrPortID
	}
	if p.nodeID.Load() == 0 {
		return p.notMapped()
	}
	p.mu.Lock()
	if p.closed.Load() {
		p.mu.Unlock()
		return ErrClosed
	}
	var cbv any
	if cb != nil {
		cbv = cb
	}
	err := op(p.batchClockLocked(), cbv)
	p.wakeLocked()
	p.mu.Unlock()
	return err
}

// notMapped is the error of a send before a node map lists this host.
func (p *Port) notMapped() error {
	return fmt.Errorf("%w: host %q is not in the node map %s yet", NodeIDNotYetSet, p.cfgHost, p.mapW.Path)
}

// SendToPeerWithCallback is gm_send_to_peer_with_callback: SendWithCallback
// to the port of node with this port's id. The receiver sees PEER events.
func (p *Port) SendToPeerWithCallback(msg []byte, size uint8, length int, pri Priority, node NodeID, cb SendCallback, ctx any) error {
	return p.SendWithCallback(msg, size, length, pri, node, p.id, cb, ctx)
}

// ResumeSending is gm_resume_sending: it re-enables the stream (pri,
// node, port) that an error disabled; the held sends go ahead (the failed
// one is not resent). It takes a send token; cb gets Success. On a stream
// that is not disabled it only completes.
func (p *Port) ResumeSending(pri Priority, node NodeID, port int, cb SendCallback, ctx any) error {
	return p.recover(pri, node, port, cb, ctx, false)
}

// DropSends is gm_drop_sends: every send held on the disabled stream (pri,
// node, port) completes with SendDropped, in order, then the stream is
// re-enabled and cb gets Success. It takes a send token. On a stream that
// is not disabled it only completes.
func (p *Port) DropSends(pri Priority, node NodeID, port int, cb SendCallback, ctx any) error {
	return p.recover(pri, node, port, cb, ctx, true)
}

func (p *Port) recover(pri Priority, node NodeID, port int, cb SendCallback, ctx any, drop bool) error {
	return p.submit(port, cb, func(now time.Duration, cbv any) error {
		if drop {
			return p.eng.Drop(now, uint8(pri), uint32(node), uint8(port), cbv, ctx)
		}
		return p.eng.Resume(now, uint8(pri), uint32(node), uint8(port), cbv, ctx)
	})
}

// wakeLocked wakes a BlockingReceive sleeper if events are pending.
func (p *Port) wakeLocked() {
	if p.waiting.Load() && (p.eng.Pending() > 0 || p.alarmDueLocked(p.now())) {
		p.rails.Wake()
	}
}

// ---- receiving ----

// pollLocked drains the link (unless a sleeper owns it), runs due timers
// and returns the next event, or nil. A link that holds no frame
// (rail.Set.Idle) is drained only once per progress tick (the rails'
// maintenance runs in the drain); the timers run either way. idle is
// what the poll found in the rails (a frame that came since is read by the
// next poll).
func (p *Port) pollLocked(now time.Duration, idle bool) *Event {
	if !p.waiting.Load() {
		if t := p.ticks.Load(); t != p.drainTick || !idle {
			p.drainTick = t
			p.drainLocked(now)
		} else {
			p.settleLocked(now, 0)
		}
	}
	return p.nextEventLocked(now)
}

// drainLocked feeds the engine every frame waiting in the rails (see
// rail.Set.Drain), then settles the engine (settleLocked). It returns the
// number of frames read. now must have been taken before the first frame
// is read: the engine's timers judge the peer at now, so every frame that
// arrived before now must have been read (see proto.Engine.Tick).
// If rail.MaxDrain frames were read and more may be waiting, the timers
// wait for the next drain.
func (p *Port) drainLocked(now time.Duration) int {
	got, all := p.rails.Drain(now)
	if all {
		p.settleLocked(now, got)
	}
	return got
}

// settleLocked follows a drain that emptied the link: if a deadline has
// passed, it runs the engine's timers; otherwise, if got frames arrived,
// it only sends what they made due (acks, frames the window now allows):
// the timers' state (retransmission, liveness, stall) is not touched
// before one of them is due (the engine's deadline is the earliest).
func (p *Port) settleLocked(now time.Duration, got int) {
	if d := p.eng.NextDeadline(); d != 0 && now >= d {
		p.eng.Tick(now)
	} else if got > 0 {
		p.eng.Pump(now)
	}
}

func (p *Port) nextEventLocked(now time.Duration) *Event {
	// A SENT_TOKENS event queued ahead of a receive event lets it pass:
	// the receive is what the application waits for (a reply, whose frame
	// acknowledged the request), and the completions then run in a later
	// poll, usually one that finds nothing else. It does so while the port
	// has a free send token (an application out of tokens waits for these
	// completions) and at most maxSentDefers times in a row.
	if ev := p.eng.PeekEvent(); ev != nil && ev.Type == proto.EventSentTokens && p.sentDefers < maxSentDefers &&
		p.eng.SendTokens().Free() > 0 && p.eng.SwapFirstEvents() {
		p.sentDefers++
	}
	if ev := p.eng.TakeEvent(); ev != nil {
		if ev.Type == proto.EventSentTokens {
			p.sentDefers = 0
		}
		// The engine's event stays valid until the next TakeEvent, which
		// only the next receive call makes: a FAST message is not copied
		// again, Message points at the engine's copy of it.
		e := &p.cur
		e.Type = EventType(ev.Type)
		e.Priority = Priority(ev.Priority)
		e.Size, e.Tag = ev.Size, ev.Tag
		e.SenderPort, e.SenderNode = int(ev.SenderPort), NodeID(ev.SenderNode)
		e.Length, e.Buffer = int(ev.Length), ev.Buffer
		switch {
		case e.Type.IsFast():
			e.Message = ev.Fast[:ev.FastLen:ev.FastLen]
		case e.Type.IsRecv():
			e.Message = e.Buffer[:e.Length]
		default:
			e.Message = nil
		}
		return e
	}
	if !p.alarmQueued && p.alarmDueLocked(now) {
		p.alarmQueued = true
		p.cur = Event{Type: AlarmEvent}
		return &p.cur
	}
	return nil
}

// maxSentDefers bounds how many receive events in a row a SENT_TOKENS event
// lets pass (see nextEventLocked): the completions' callbacks run at most
// that many receive events late.
const maxSentDefers = 8

func (p *Port) noEvent() *Event {
	p.cur = Event{Type: NoRecvEvent}
	return &p.cur
}

// closedEvent returns the event of a closed port (the mutex is not held).
func (p *Port) closedEvent() *Event {
	p.mu.Lock()
	p.cur = Event{Type: PortClosedEvent}
	p.mu.Unlock()
	return &p.cur
}

// Receive is gm_receive: it polls once and returns the next event, or an
// event of type NoRecvEvent. It never blocks (beyond the port mutex). The
// event is valid until the next receive or Unknown call. On a closed port
// it returns an event of type PortClosedEvent.
//
// A Receive that finds nothing usually costs a few loads: after a poll
// that found nothing, up to quietEvery-1 following calls answer
// NoRecvEvent without reading the clock, the link or the timers as long
// as no event is queued and the link's rings hold no frame
// (rail.Set.Idle). Every quietEvery-th call, and every call after one that
// found a frame or an event, polls in full: the engine's timers and the
// alarms run there, late by at most quietEvery-1 polls and at most about
// the progress goroutine's period (each of its ticks ends the quiet
// polls).
//
// A full poll reads the clock only if frames wait or a timer may fall due
// before the next tick (pollClockLocked); taking a queued event reads
// neither the clock nor the link.
func (p *Port) Receive() *Event {
	p.mu.Lock()
	if p.closed.Load() {
		p.cur = Event{Type: PortClosedEvent}
		p.mu.Unlock()
		return &p.cur
	}
	p.markPolled()
	// One look at the rings serves the quiet answer, the clock and the
	// drain.
	idle := p.rails.Idle()
	if idle && p.quietPolls > 0 && p.quietTick == p.ticks.Load() && !p.waiting.Load() && p.eng.Pending() == 0 {
		// Nothing arrived since the last poll, which found nothing: no
		// timer has to judge a peer's frame, and the timers may wait for
		// a later poll. p.cur usually holds this answer already; it is
		// rewritten if another receive call (or the application) gave it
		// another type.
		p.quietPolls--
		if p.cur.Type != NoRecvEvent {
			p.noEvent()
		}
		p.mu.Unlock()
		return &p.cur
	}
	// The clock is read with the mutex held: a time taken before waiting
	// for it would stamp what the drain reads as older than it is, and the
	// engine's timers would judge the peer silent for longer than it was.
	now := p.pollClockLocked(idle)
	e := p.pollLocked(now, idle)
	p.quietPolls = 0
	if e == nil {
		e = p.noEvent()
		p.quietPolls, p.quietTick = quietEvery-1, p.ticks.Load()
	}
	p.mu.Unlock()
	return e
}

// quietEvery is one more than the number of Receive calls in a row that may
// answer from a few loads (see Receive).
const quietEvery = 16

// ReceivePending is gm_receive_pending: it reports whether the next
// Receive returns an event other than NoRecvEvent: an event is queued, an
// alarm is due, frames waiting in the link's receive rings make one, or
// the port is closed (PortClosedEvent). When the rings hold frames (a few
// loads tell, as in Receive's quiet path) it reads them into the protocol
// engine, as Receive would, and answers from the events they queued (an
// acknowledgement's SENT_TOKENS event counts); it takes no event. While
// another goroutine sleeps in BlockingReceive it does not read the link
// (the sleeper does) and answers from the queued events.
//
// It takes the port's mutex: the queued events and the rings' read side
// belong to its holder (an uncontended lock costs about as much as the
// loads themselves).
func (p *Port) ReceivePending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return true
	}
	p.markPolled()
	if p.eng.Pending() == 0 && !p.waiting.Load() && !p.rails.Idle() {
		p.drainLocked(p.readClockLocked())
	}
	return p.eng.Pending() > 0 || (!p.alarmQueued && p.alarmDueLocked(p.pollClockLocked(p.rails.Idle())))
}

// SpinTime is how long BlockingReceive polls before it sleeps in the
// kernel when nothing arrives.
const SpinTime = time.Millisecond

// StreamSpinTime is how long BlockingReceive keeps polling after the last
// frame once frames are arriving: while a message streams in, frames follow
// each other within microseconds, and polling the ring costs no system call
// or wake-up per frame; a longer gap puts the receiver to sleep, leaving the
// CPU to others.
const StreamSpinTime = 50 * time.Microsecond

// BlockingReceive is gm_blocking_receive: it polls for up to SpinTime, and
// then sleeps in the kernel until a frame, an alarm or a protocol event.
// While frames keep arriving (a message streaming in) it keeps polling the
// link's ring, until StreamSpinTime passes without a frame. On a closed
// port, or when the port is closed while it waits, it returns an event of
// type PortClosedEvent.
func (p *Port) BlockingReceive() *Event { return p.blockingReceive(SpinTime) }

// BlockingReceiveNoSpin is gm_blocking_receive_no_spin: like
// BlockingReceive, but it sleeps as soon as nothing is pending (it still
// polls while frames stream in). Unlike GM it never returns
// _GM_SLEEP_EVENT: it blocks itself.
func (p *Port) BlockingReceiveNoSpin() *Event { return p.blockingReceive(0) }

// maxSleep bounds one sleep in the kernel.
const maxSleep = 100 * time.Millisecond

// yieldEvery is how many polls that read frames BlockingReceive makes
// between two yields of its goroutine (runtime.Gosched).
const yieldEvery = 16

// blockingReceive polls the link until an event is pending, for spin at
// first and then as long as frames arrive within StreamSpinTime of each
// other; otherwise it sleeps in link.Wait, then polls again.
func (p *Port) blockingReceive(spin time.Duration) *Event {
	pollUntil := p.now() + spin
	spins := 0
	for {
		if p.closed.Load() {
			return p.closedEvent()
		}
		p.mu.Lock()
		now := p.readClockLocked() // with the mutex held (see Receive)
		p.markPolled()
		if p.waiting.Load() {
			// Another goroutine already sleeps on the link; poll politely.
			e := p.nextEventLocked(now)
			p.mu.Unlock()
			if e != nil {
				return e
			}
			time.Sleep(50 * time.Microsecond)
			continue
		}
		got := p.drainLocked(now)
		if got > 0 {
			pollUntil = max(pollUntil, now+StreamSpinTime)
		}
		if e := p.nextEventLocked(now); e != nil {
			p.mu.Unlock()
			return e
		}
		if now < pollUntil {
			p.mu.Unlock()
			// Let other goroutines run between polls that found nothing,
			// rather than keep them off this P until preemption. While
			// frames stream in (a message arrives in hundreds of frames,
			// a few per poll), yield only every yieldEvery polls: a yield
			// costs about as much as a poll.
			if spins++; got == 0 || spins%yieldEvery == 0 {
				runtime.Gosched()
			}
			continue
		}
		timeout := maxSleep
		if d := p.eng.NextDeadline(); d != 0 && d-now < timeout {
			timeout = d - now
		}
		if a := p.nextAlarmLocked(); a != 0 && a-now < timeout {
			timeout = a - now
		}
		if timeout <= 0 {
			timeout = time.Microsecond
		}
		p.waiting.Store(true)
		p.mu.Unlock()
		err := p.rails.Wait(timeout)
		p.mu.Lock()
		now = p.readClockLocked()
		p.waiting.Store(false)
		// The frames that woke the sleeper are read by the next
		// drainLocked, which runs the timers after the rails are emptied.
		p.markPolled()
		p.mu.Unlock()
		if err != nil {
			if p.closed.Load() {
				return p.closedEvent()
			}
			return p.noEvent()
		}
		pollUntil = now + StreamSpinTime // poll again before the next sleep
	}
}

// Unknown is gm_unknown: pass it every event the client does not handle.
// For SentTokensEvent it runs the completed sends' callbacks (in
// completion order, returning their send tokens first); for AlarmEvent it
// runs the expired alarms' callbacks; for a receive event it provides the
// event's buffer again with its size, priority and tag (GM gives the
// receive token back); other events are ignored. Callbacks run on the
// caller's goroutine without the port mutex held.
func (p *Port) Unknown(e *Event) {
	switch {
	case e.Type == SentTokensEvent:
		// One mutex round trip per completion: the last pop also tells
		// that none is left. A send that completes later queues a
		// SentTokensEvent of its own.
		for more := true; more; {
			p.mu.Lock()
			cb, ctx, st, ok := p.eng.PopCompletion()
			more = p.eng.Completions() > 0
			p.mu.Unlock()
			if !ok {
				return
			}
			if f, _ := cb.(SendCallback); f != nil {
				f(p, ctx, Status(st))
			}
		}
	case e.Type == AlarmEvent:
		p.mu.Lock()
		p.alarmQueued = false
		p.mu.Unlock()
		p.runAlarms()
	case e.Type.IsRecv():
		if e.Buffer != nil {
			_ = p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
		}
	}
}

// ---- progress ----

// progressTick is the progress goroutine's period.
const progressTick = time.Millisecond

// maxBusyTicks is how many ticks in a row the progress goroutine skips
// while the port's mutex is held before it waits for the mutex.
const maxBusyTicks = 4

func (p *Port) progress() {
	defer p.wg.Done()
	ticks := p.cfg.progressTicks
	if ticks == nil {
		t := time.NewTicker(progressTick)
		defer t.Stop()
		ticks = t.C
	}
	poll := defDur(p.cfg.MapPoll, DefaultMapPoll)
	nextMap := p.now() + poll
	busy := 0 // ticks skipped in a row because the mutex was held
	for {
		select {
		case <-p.done:
			return
		case <-ticks:
		}
		// The tick's reading of the clock is the coarse clock of the
		// application's calls (clockLocked); the new count ends the
		// quiet polls and makes the next poll drain (see Receive).
		now := p.now()
		p.tickClock.Store(int64(now))
		p.ticks.Add(1)
		if now >= nextMap || p.owner.takeChanged() {
			nextMap = now + poll
			p.refresh()
		}
		// An application that polled since the last tick drains the link
		// and runs the timers itself: leave the mutex to it, untouched (a
		// lock, even a try, would move the mutex's cache line to this
		// thread's core and back). A sleeper in BlockingReceive polls
		// nothing: it needs the tick (below).
		if p.polled.Swap(false) && !p.waiting.Load() {
			busy = 0
			continue
		}
		// A held mutex means a call of the application is running (a
		// Receive whose drain sends a window of frames can take longer
		// than a tick): the application is active, skip the tick rather
		// than queue on the mutex, which would hand the port back and
		// forth between the two goroutines' threads (on a busy CPU, each
		// hand-off waits for the scheduler). After maxBusyTicks such
		// ticks in a row, wait for it (TestProgressSkipsBusyTicks).
		if !p.mu.TryLock() {
			if busy++; busy <= maxBusyTicks {
				continue
			}
			p.mu.Lock()
		}
		busy = 0
		now = p.readClockLocked() // with the mutex held (see Receive)
		switch {
		case p.waiting.Load():
			// A BlockingReceive sleeps in link.Wait and owns the link's
			// reader side. Timers may only run right after the link was
			// drained, so if one is due, wake the sleeper: it drains the
			// link and runs them.
			if d := p.eng.NextDeadline(); d != 0 && now >= d {
				p.rails.Wake()
			}
		default:
			p.drainLocked(now)
		}
		p.wakeLocked()
		p.mu.Unlock()
	}
}

// refresh reloads the node map if its file changed and the set of open
// ports of this unit (and connects the port to the unit's gm_mapper if it
// is not: see portOwner). The progress goroutine calls it every MapPoll,
// and at once when the mapper says a port closed. A map that lists this host sets (or changes) the
// port's node id and host name; one that does not leaves them as they
// were.
func (p *Port) refresh() {
	p.owner.keepWatch()
	open := p.owner.openMask(0)
	p.openMask.Store(open)
	if want := rxPortsFor(p.id, open); uint32(want) != p.rxPorts.Load() {
		// Every set holds the port's own: a link whose filter could
		// not change at worst leaves a closed port unanswered, or lets
		// other ports' frames in, until the next refresh tries again.
		if p.rails.SetPorts(want) == nil {
			p.rxPorts.Store(uint32(want))
		}
	}
	m, err := p.mapW.Load()
	if err != nil || m == nil {
		return
	}
	p.mapChanges.Add(1)
	// The map and the node id change together under the mutex; the peers'
	// addresses (the rails' numbers, the engine's cached MACs) follow
	// both at the end (adoptMapLocked).
	p.mu.Lock()
	old := p.nodeMap.Load()
	p.nodeMap.Store(m)
	selfChanged := false
	if e, ok := m.Self(p.cfgHost, p.macs...); ok {
		if e.Host != *p.host.Load() {
			name := e.Host
			p.host.Store(&name)
		}
		if uint32(e.ID) != p.nodeID.Load() {
			p.eng.SetNodeID(uint32(e.ID))
			p.nodeID.Store(uint32(e.ID))
			selfChanged = true
		}
	}
	// A node id that now names another identity (host name, MACs), or
	// none, must not carry what was in flight with the old one: those
	// sends fail, and nothing of the old identity's sessions is
	// delivered (see Engine.ResetPeer). If this host's own id changed,
	// every peer's sessions name the wrong node.
	now := p.readClockLocked()
	if selfChanged {
		p.eng.ResetAll(now, proto.StatusTargetNodeUnreached)
	} else {
		self := p.nodeID.Load()
		p.eng.ResetChanged(now, proto.StatusTargetNodeUnreached, func(node uint32) bool {
			return node != self && identityChanged(old, m, NodeID(node))
		})
	}
	p.adoptMapLocked(m)
	p.mu.Unlock()
}

// identityChanged reports whether node names another host in map m than in
// map old: it left or joined the map, or its host name or MACs differ.
func identityChanged(old, m *NodeMap, node NodeID) bool {
	a, okA := old.ByID(node)
	b, okB := m.ByID(node)
	if okA != okB {
		return true
	}
	return okA && (a.Host != b.Host || !slices.Equal(a.MACs, b.MACs))
}

// Ticks is gm_ticks: the time since the port opened, in units of half a
// microsecond (GM_TICKS_PER_USEC = 2).
func (p *Port) Ticks() uint64 { return uint64(p.now() / (time.Microsecond / TicksPerMicrosecond)) }

// Stats are protocol counters of a port, for diagnostics and tests.
type Stats = proto.Stats

// Stats returns the port's protocol counters.
func (p *Port) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.eng.Stats()
}

// LinkStats returns the counters of the port's link; with several rails,
// the sums of their counters (RailStats gives each rail's).
func (p *Port) LinkStats() link.Stats { return p.rails.LinkStats() }

// DebugState describes the port's internal state for diagnostics: the
// protocol engine's streams (sequence numbers, frames in flight,
// retransmission, probe and back-off state, timers), the port's polling
// state and the link's counters. The format is for people and may change.
func (p *Port) DebugState() string {
	ls := p.LinkStats()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.readClockLocked()
	return fmt.Sprintf("port %d (%s) node %d on %s: closed %v waiting %v polled %v, alarms %d (queued %v)\n  link %+v\n%s%s",
		p.id, p.name, p.nodeID.Load(), p.unit.Name, p.closed.Load(), p.waiting.Load(), p.polled.Load(),
		len(p.alarms), p.alarmQueued, ls, p.rails.Debug(), p.eng.Dump(now))
}
