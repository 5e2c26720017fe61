package mapper

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/wire"
)

// simnet is a simulated Ethernet of learning bridges in virtual time:
// hosts with one mapper each, whose interfaces (rails) plug into bridges.
// Frames take 20..120µs, and may be lost, duplicated or cut by a
// partition. It is deterministic for a seed.
type simnet struct {
	t     testing.TB
	now   Time
	rng   *rand.Rand
	hosts []*simHost

	loss, dup float64
	// blocked, if set, drops frames between two hosts (a partition).
	blocked func(a, b *simHost) bool
	// drop, if set, drops the frames it returns true for.
	drop func(from, to *simHost, frame []byte) bool

	frames frameHeap
	timers timerHeap
	fifo   map[[2]nodemap.MAC]Time // last delivery between two interfaces
	seq    uint64

	// sent counts frames sent, by type, per host (index); recv counts the
	// frames handed to each host's mapper.
	sent, recv map[wire.Type][]int
	// tap, if set, sees every delivered frame.
	tap func(to *simHost, rail int, frame []byte)
}

// simHost is a host: a mapper, its rails and what it persisted.
type simHost struct {
	n       *simnet
	i       int
	name    string
	level   uint8
	macs    []nodemap.MAC
	bridge  []int  // per rail: the bridge it plugs into
	plug    []bool // per rail: cable plugged (frames pass)
	m       *Mapper
	alive   bool
	state   State
	saved   int
	synced  uint32         // the newest version a SaveState with sync recorded
	maps    []*nodemap.Map // installed, in order
	mod     func(*Config)
	gen     int  // timer generation
	queued  bool // a timer of generation gen is in the heap
	schedAt Time // its time
	deadAt  Time
	// frozenUntil: the host's mapper does not run before it (a slow
	// host: its timers run late, frames wait in its rings and are read
	// after the late Tick, as the driver does).
	frozenUntil Time
	// ring, if positive, is the capacity of each of the host's receive
	// rings in frames: a frame that arrives while the host is frozen and
	// ring frames wait on that rail is dropped (the kernel's drop from a
	// full ring). When the host runs again the loss is reported
	// (Mapper.FramesLost, before the waiting frames and the late Tick, as
	// the driver does) unless hideLoss is set.
	ring     int
	hideLoss bool
	waiting  []int // per rail: frames waiting in the ring
	dropped  []int // per rail: frames dropped since the host froze
	frozenAt Time
}

type simFrame struct {
	at    Time
	seq   uint64
	to    *simHost
	rail  int
	frame []byte // nil: the end of a freeze, when lost frames are reported
	// waiting: in the receive ring of a frozen host.
	waiting bool
}

type frameHeap []simFrame

func (h frameHeap) Len() int { return len(h) }
func (h frameHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h frameHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *frameHeap) Push(x any)   { *h = append(*h, x.(simFrame)) }
func (h *frameHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type simTimer struct {
	at  Time
	h   *simHost
	gen int
}

type timerHeap []simTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].h.i < h[j].h.i
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(simTimer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newSim(t testing.TB, seed uint64) *simnet {
	return &simnet{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), sent: map[wire.Type][]int{}, recv: map[wire.Type][]int{}, fifo: map[[2]nodemap.MAC]Time{}}
}

// simMAC is the MAC of host i's rail r.
func simMAC(i, r int) nodemap.MAC {
	return nodemap.MAC{2, byte(r), 0, byte(i >> 16), byte(i >> 8), byte(i)}
}

// add adds a host (not started) with one rail per bridge given.
func (n *simnet) add(name string, level uint8, bridges ...int) *simHost {
	h := &simHost{n: n, i: len(n.hosts), name: name, level: level, bridge: bridges}
	for r := range bridges {
		h.macs = append(h.macs, simMAC(h.i, r))
		h.plug = append(h.plug, true)
	}
	n.hosts = append(n.hosts, h)
	return h
}

// Send implements Output.
func (h *simHost) Send(rail int, frame []byte) {
	n := h.n
	if !h.alive {
		n.t.Fatalf("%s: Send while dead", h.name)
	}
	if rail < 0 || rail >= len(h.macs) {
		n.t.Fatalf("%s: Send on rail %d", h.name, rail)
	}
	fh, err := wire.ParseFrameCRC(frame, wire.EtherType)
	if err != nil {
		n.t.Fatalf("%s: sent a bad frame: %v", h.name, err)
	}
	if fh.Type() == wire.TypeConfig {
		// A map version this host made goes on the wire only once the
		// state that records it was saved with sync (SaveState); a
		// table handed to a new leader (ConfigTable) makes none.
		c, err := wire.ParseConfig(fh.Payload())
		if err != nil {
			n.t.Fatalf("%s: sent a bad CONFIG: %v", h.name, err)
		}
		if c.Flags&wire.ConfigTable == 0 && c.MapperID == h.macs[0] && c.MapVersion > h.synced {
			n.t.Fatalf("%s: sent the CONFIG of its version %d before a SaveState with sync recorded it (last synced %d)", h.name, c.MapVersion, h.synced)
		}
	}
	if [6]byte(frame[6:12]) != h.macs[rail] {
		n.t.Fatalf("%s: rail %d frame from %x", h.name, rail, frame[6:12])
	}
	n.count(n.sent, h, frame)
	if !h.plug[rail] {
		return
	}
	f := slices.Clone(frame)
	dst := nodemap.MAC(frame[0:6])
	for _, o := range n.hosts {
		if o == h || !o.alive || (n.blocked != nil && n.blocked(h, o)) || (n.drop != nil && n.drop(h, o, frame)) {
			continue
		}
		for r, b := range o.bridge {
			if b != h.bridge[rail] || !o.plug[r] || (dst != wire.Broadcast && dst != o.macs[r]) {
				continue
			}
			copies := 1
			if n.rng.Float64() < n.loss {
				copies = 0
			} else if n.rng.Float64() < n.dup {
				copies = 2
			}
			for range copies {
				n.seq++
				at := n.now + 20*time.Microsecond + time.Duration(n.rng.IntN(100))*time.Microsecond
				// Frames between two interfaces keep their order.
				k := [2]nodemap.MAC{h.macs[rail], o.macs[r]}
				at = max(at, n.fifo[k]+1)
				n.fifo[k] = at
				heap.Push(&n.frames, simFrame{at: at, seq: n.seq, to: o, rail: r, frame: f})
			}
		}
	}
}

// count adds frame to h's count in c.
func (n *simnet) count(c map[wire.Type][]int, h *simHost, frame []byte) {
	if len(frame) < 16 {
		return
	}
	t := wire.Type(frame[15]) // the type byte of the EtherGM header
	v := c[t]
	if v == nil {
		v = make([]int, 4096)
		c[t] = v
	}
	v[h.i]++
}

// frameCount is the number of mapper frames each host (by index) sent
// and received so far.
type frameCount struct{ sent, recv []int }

// snapshot returns the frames counted so far.
func (n *simnet) snapshot() frameCount {
	c := frameCount{sent: make([]int, len(n.hosts)), recv: make([]int, len(n.hosts))}
	for _, v := range n.sent {
		for i := range c.sent {
			c.sent[i] += v[i]
		}
	}
	for _, v := range n.recv {
		for i := range c.recv {
			c.recv[i] += v[i]
		}
	}
	return c
}

// InstallMap implements Output.
func (h *simHost) InstallMap(m *nodemap.Map) {
	if m == nil {
		h.n.t.Fatalf("%s: InstallMap(nil)", h.name)
	}
	if len(h.maps) > 0 && m.Version < h.maps[len(h.maps)-1].Version {
		h.n.t.Fatalf("%s: map version went back from %d to %d", h.name, h.maps[len(h.maps)-1].Version, m.Version)
	}
	h.maps = append(h.maps, m)
}

// SaveState implements Output.
func (h *simHost) SaveState(s State, sync bool) {
	if sync {
		h.synced = max(h.synced, s.LastVersion)
	}
	if len(h.n.hosts) > 300 {
		// The round trip costs O(hosts) per map on every host: the
		// smaller simulations check it.
		h.state = s
		h.saved++
		return
	}
	// Round trip through the file format, as the daemon does.
	p, err := ParseState(s.Marshal())
	if err != nil {
		h.n.t.Fatalf("%s: state does not parse: %v", h.name, err)
	}
	h.state = p
	h.saved++
}

// start starts (or restarts) the host's mapper with its saved state.
func (h *simHost) start() {
	cfg := Config{Host: h.name, Level: h.level, MACs: h.macs, State: h.state}
	if h.mod != nil {
		h.mod(&cfg)
	}
	m, err := New(cfg, h)
	if err != nil {
		h.n.t.Fatal(err)
	}
	h.m, h.alive = m, true
	h.waiting, h.dropped = make([]int, len(h.macs)), make([]int, len(h.macs))
	for r := range h.macs {
		if !h.plug[r] {
			m.SetRailUp(r, false, h.n.now)
		}
	}
	h.schedule()
}

// kill stops the host: its mapper is gone, frames to it are lost.
func (h *simHost) kill() {
	h.alive = false
	h.gen++
	h.queued = false
	h.deadAt = h.n.now
}

// setLink plugs or unplugs the cable of a rail; the mapper sees the link
// state when tell is true (carrier loss), or must notice by itself.
func (h *simHost) setLink(rail int, up, tell bool) {
	h.plug[rail] = up
	// A driver that saw the carrier go also sees it come back.
	if h.alive && (tell || (up && !h.m.self.railUp[rail])) {
		h.m.SetRailUp(rail, up, h.n.now)
		h.schedule()
	}
}

func (h *simHost) schedule() {
	if !h.alive {
		return
	}
	d := max(h.m.NextDeadline(), h.n.now, h.frozenUntil)
	if h.queued && d == h.schedAt {
		return
	}
	h.gen++
	h.queued, h.schedAt = true, d
	heap.Push(&h.n.timers, simTimer{at: d, h: h, gen: h.gen})
}

// step runs the next event; it returns false if there is none before
// limit.
func (n *simnet) step(limit Time) bool {
	for n.timers.Len() > 0 && n.timers[0].gen != n.timers[0].h.gen {
		heap.Pop(&n.timers)
	}
	var tt, ft Time = limit + 1, limit + 1
	if n.timers.Len() > 0 {
		tt = n.timers[0].at
	}
	if n.frames.Len() > 0 {
		ft = n.frames[0].at
	}
	if tt > limit && ft > limit {
		n.now = limit
		return false
	}
	if ft <= tt {
		f := heap.Pop(&n.frames).(simFrame)
		n.now = f.at
		h := f.to
		if f.frame == nil {
			if h.alive && h.dropped[f.rail] > 0 && n.now >= h.frozenUntil {
				if !h.hideLoss {
					h.m.FramesLost(f.rail, h.frozenAt, n.now)
				}
				h.dropped[f.rail] = 0
				h.schedule()
			}
			return true
		}
		if f.waiting {
			h.waiting[f.rail] = max(h.waiting[f.rail]-1, 0)
			f.waiting = false
		}
		if !h.alive || !h.plug[f.rail] {
			return true
		}
		if f.at <= h.frozenUntil {
			if h.ring > 0 && h.waiting[f.rail] >= h.ring {
				h.dropped[f.rail]++
				return true
			}
			// Waits in the ring, read just after the late Tick.
			f.at = h.frozenUntil + time.Microsecond
			f.waiting = true
			h.waiting[f.rail]++
			heap.Push(&n.frames, f)
			return true
		}
		if n.tap != nil {
			n.tap(f.to, f.rail, f.frame)
		}
		n.count(n.recv, f.to, f.frame)
		f.to.m.Input(n.now, f.rail, f.frame)
		f.to.schedule()
		return true
	}
	t := heap.Pop(&n.timers).(simTimer)
	n.now = t.at
	t.h.queued = false
	t.h.m.Tick(n.now)
	if d := t.h.m.NextDeadline(); d <= n.now {
		n.t.Fatalf("%s: deadline %v still due after Tick at %v", t.h.name, d, n.now)
	}
	t.h.schedule()
	return true
}

// run runs until limit.
func (n *simnet) run(limit Time) {
	for n.step(limit) {
	}
}

// runUntil runs until cond holds (checked every 10ms of virtual time) or
// limit; it reports whether cond held.
func (n *simnet) runUntil(limit Time, cond func() bool) bool {
	for n.now < limit {
		n.run(min(limit, n.now+10*time.Millisecond))
		if cond() {
			return true
		}
	}
	return false
}

func (n *simnet) live() []*simHost {
	var hs []*simHost
	for _, h := range n.hosts {
		if h.alive {
			hs = append(hs, h)
		}
	}
	return hs
}

// converged reports whether the live hosts of hs agree: one leader, the
// same map everywhere, every host of hs in it, every host configured.
func converged(hs []*simHost) bool {
	leaders := 0
	var v uint32
	var mapper nodemap.MAC
	for i, h := range hs {
		s := h.m
		if s.leading() {
			leaders++
		}
		if s.cur.m == nil || !s.configured() {
			return false
		}
		if i == 0 {
			v, mapper = s.cur.version, s.cur.mapper
		} else if s.cur.version != v || s.cur.mapper != mapper {
			return false
		}
	}
	if leaders != 1 {
		return false
	}
	m := hs[0].m.cur.m
	for _, h := range hs {
		if _, ok := m.ByMAC(h.macs[0]); !ok {
			return false
		}
	}
	return true
}

// why describes the state of hs, for failure messages.
func why(hs []*simHost) string {
	var b strings.Builder
	count := map[string]int{}
	for _, h := range hs {
		s := h.m.Status()
		k := fmt.Sprintf("leader=%v map=%d by %s hosts=%d configured=%v elected=%s starting=%v", s.Leader, s.MapVersion, s.Mapper, s.Hosts, s.Configured, s.Elected, s.Starting)
		if count[k] == 0 && len(count) < 8 {
			fmt.Fprintf(&b, "  e.g. %s: %s\n", h.name, k)
		}
		count[k]++
	}
	for k, c := range count {
		fmt.Fprintf(&b, "  %d× %s\n", c, k)
	}
	return b.String()
}

// ids returns the node id of every host of hs in the map of hs[0].
func ids(hs []*simHost) map[string]nodemap.NodeID {
	out := map[string]nodemap.NodeID{}
	m := hs[0].m.cur.m
	for _, h := range hs {
		if e, ok := m.ByMAC(h.macs[0]); ok {
			out[h.name] = e.ID
		}
	}
	return out
}

func (n *simnet) leader() *simHost {
	for _, h := range n.live() {
		if h.m.leading() {
			return h
		}
	}
	return nil
}
