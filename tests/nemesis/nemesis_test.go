//go:build linux

package nemesis

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
	"github.com/ethergm/ethergm/internal/netns/relay"
	"github.com/ethergm/ethergm/tests/cmdbin"
)

// Environment of a run (make nemesis sets them).
const (
	durationEnv = "ETHERGM_NEMESIS_DURATION" // the schedule's length ("10m"); default shortLength
	seedEnv     = "ETHERGM_NEMESIS_SEED"     // the schedule's seed; default the clock
	hostsEnv    = "ETHERGM_NEMESIS_HOSTS"    // dual-rail hosts, 8 by default
)

const (
	shortLength = 30 * time.Second
	sendPort    = 2
	recvPort    = 4
	// liveness is the peers' Config.LivenessTimeout: longer than most
	// partitions of the schedule (streams stall, then go on), shorter
	// than some (they fail), and long enough that a loaded machine does
	// not fail streams by starving their processes.
	liveness = 10 * time.Second
	progress = 30 * time.Second
	// convergeTimeout bounds the wait for one configured map after the
	// schedule, and resumeTimeout the wait for every stream to flow again.
	convergeTimeout = 120 * time.Second
	resumeTimeout   = 150 * time.Second
	// resumeMessages is how many messages every stream must deliver after
	// the heal.
	resumeMessages = 3
	// rate is each stream's messages per second: 560 a second for 8
	// hosts, each reported twice to the test process (which parses them
	// under -race beside everything else on the machine).
	rate = 5
)

func TestMain(m *testing.M) {
	code := m.Run()
	cmdbin.Cleanup()
	os.Exit(code)
}

func envConfig(t *testing.T) (seed int64, length time.Duration, hosts int) {
	seed, length, hosts = time.Now().UnixNano()%1_000_000_000, shortLength, 8
	if v := os.Getenv(seedEnv); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an integer", seedEnv, v)
		}
		seed = s
	}
	if v := os.Getenv(durationEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 5*time.Second {
			t.Fatalf("%s=%q: want a duration of at least 5s, such as 10m", durationEnv, v)
		}
		length = d
	}
	if v := os.Getenv(hostsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 3 || n > 32 {
			t.Fatalf("%s=%q: want 3..32", hostsEnv, v)
		}
		hosts = n
	}
	return seed, length, hosts
}

// nemesis is one run: the cluster, its processes and the checker.
type nemesis struct {
	t       *testing.T
	c       *netns.Cluster
	peer    string
	mapper  string
	relays  map[int]*relay.Relay // host -> relay of its rail 1
	relayed []int
	chk     *checker

	mu        sync.Mutex
	nextInc   uint32
	senders   map[int]*peerProc
	receivers map[int]*peerProc
	mappers   map[int]*netns.Proc
	mkilled   map[*netns.Proc]bool
	all       []*peerProc   // every incarnation started
	allMapper []*netns.Proc // every gm_mapper started
	locks     map[string]*sync.Mutex
}

// lock takes the lock of a resource (a host's receiver, sender or rail,
// the mappers, the partition, a relay) from a fault's start to its undo:
// a fault due while the one before on its resource is still being undone
// (a restart on a loaded machine) waits for it.
func (n *nemesis) lock(f fault) func() {
	var key string
	switch f.Kind {
	case killMapper, killLeader:
		key = "mappers"
	case partition:
		key = "partition"
	case cutRail:
		key = fmt.Sprintf("rail %d %d", f.Hosts[0], f.Rail)
	default:
		key = fmt.Sprintf("%v %d", f.Kind, f.Hosts[0])
	}
	n.mu.Lock()
	l := n.locks[key]
	if l == nil {
		l = new(sync.Mutex)
		n.locks[key] = l
	}
	n.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// TestIntegrationNemesis: 8 dual-rail hosts (the rail 1 of every third one
// through an impairment relay), a gm_mapper, a receiving and a sending
// process on each; every sender streams verified messages to every other
// host at both priorities while a schedule made from the seed kills -9 and
// restarts receivers, senders and mappers (the one in charge included),
// cuts and restores rails, partitions the hosts (their switch ports moved
// to other bridges) and heals them, and impairs the relayed rails. Then
// everything is healed and the checker asserts: every message delivered at
// most once, in order within one receiving incarnation, intact and to the
// right port from the right node; no gap but sends that completed with an
// error status a fault of the stream explains; every success delivered; no
// send of a finished sender without its completion; no panic, no
// unexpected exit, memory and goroutines flat; node ids never changed; one
// configured map on every host within convergeTimeout of the heal; every
// stream flowing again. ETHERGM_NEMESIS_SEED repeats a run's schedule,
// ETHERGM_NEMESIS_DURATION makes it longer (make nemesis).
func TestIntegrationNemesis(t *testing.T) {
	seed, length, nh := envConfig(t)
	var relayed []int
	for h := 1; h < nh; h += 3 {
		relayed = append(relayed, h)
	}
	plan := makePlan(seed, length, nh, relayed, 2)
	t.Logf("nemesis seed %d (repeat with %s=%d %s=%v), %d hosts, %d faults in %v:\n%s", seed, seedEnv, seed, durationEnv, length, nh, len(plan), length, formatPlan(plan))

	// Bridges 0 and 1 are the rails; 2 and 3 take the hosts cut off by a
	// partition.
	hostRails := make([][]int, nh)
	for i := range hostRails {
		hostRails[i] = []int{0, 1}
	}
	c := netns.New(t, netns.Options{Hosts: nh, Rails: 4, HostRails: hostRails})
	n := &nemesis{t: t, c: c, peer: buildPeer(t), mapper: cmdbin.Path(t, "gm_mapper"), relays: map[int]*relay.Relay{}, relayed: relayed,
		senders: map[int]*peerProc{}, receivers: map[int]*peerProc{}, mappers: map[int]*netns.Proc{}, mkilled: map[*netns.Proc]bool{}, locks: map[string]*sync.Mutex{}}
	n.chk = newChecker(sendPort, nil, map[gm.Status]time.Duration{
		gm.SendTargetPortClosed:      2*liveness + 5*time.Second,
		gm.SendTargetNodeUnreachable: 2*liveness + 5*time.Second,
		gm.SendTimedOut:              progress + liveness + 5*time.Second,
	})
	t.Cleanup(n.killAll)
	for _, h := range relayed {
		n.relays[h] = insertRelay(t, c, h, 1, seed+int64(h))
	}
	for i := range c.Hosts {
		n.startMapper(i)
	}
	t0 := time.Now()
	st, err := n.waitConverged(convergeTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("configured: map version %d of %d hosts, %v after the mappers started", st.MapVersion, st.Hosts, time.Since(t0).Round(time.Millisecond))
	m, err := gmmap.ReadHost(c.Hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int]int{}
	for i, h := range c.Hosts {
		e, ok := m.ByHost(h.Name)
		if !ok {
			t.Fatalf("%s not in the map", h.Name)
		}
		ids[i] = int(e.ID)
	}
	n.chk.mu.Lock()
	n.chk.ids = ids
	n.chk.mu.Unlock()
	for i := range c.Hosts {
		n.startReceiver(i)
	}
	// Every receiving port opens before the first send: one still closed
	// would rightly fail the first sends to it with PORT_CLOSED, which
	// no fault explains.
	n.waitReady()
	for i := range c.Hosts {
		n.startSender(i)
	}
	n.waitReady()

	stopWatch := n.watchIDs(ids)
	// A warm-up: every stream flows before the first fault.
	if err := n.waitFlowing("warm-up", resumeTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("warm-up: %d messages delivered", n.delivered())

	start := time.Now()
	n.chk.mu.Lock()
	n.chk.start = start
	n.chk.mu.Unlock()
	var wg sync.WaitGroup
	for _, f := range plan {
		wg.Go(func() { n.run(start, f) })
	}
	wg.Wait()
	t.Logf("schedule done after %v: %d messages delivered", time.Since(start).Round(time.Millisecond), n.delivered())

	// Healed: every fault was undone by its own step.
	healed := time.Now()
	st, err = n.waitConverged(convergeTimeout)
	conv := time.Since(healed)
	stopWatch()
	n.checkIDs(ids)
	if err == nil {
		t.Logf("reconverged %v after the heal: map version %d of %d hosts", conv.Round(time.Millisecond), st.MapVersion, st.Hosts)
		err = n.waitFlowing("after the heal", resumeTimeout)
	}
	n.mu.Lock()
	senders := slices.Collect(maps.Values(n.senders))
	n.mu.Unlock()
	if err != nil {
		// The checker still judges what happened; the senders are
		// killed (their last sends need not complete).
		n.chk.violate("%v", err)
		for _, s := range senders {
			s.kill()
		}
	} else {
		t.Logf("every stream flows %v after the heal", time.Since(healed).Round(time.Millisecond))
		// Stop the senders: each completes what it submitted and reports.
		for _, s := range senders {
			fmt.Fprintln(s.stdin, "stop")
		}
		for _, s := range senders {
			select {
			case <-s.done:
			case <-time.After(2*progress + 30*time.Second):
				n.chk.violate("%v did not finish its sends within %v of stop", s, 2*progress+30*time.Second)
				s.kill()
			}
		}
	}
	time.Sleep(time.Second) // the receivers report the last messages
	n.killAll()
	n.checkMappers()
	n.chk.check()

	c2 := n.chk
	c2.mu.Lock()
	defer c2.mu.Unlock()
	var kinds [numKinds]int
	for _, f := range plan {
		kinds[f.Kind]++
	}
	var rs relay.Stats
	for _, r := range n.relays {
		for _, d := range []relay.Direction{relay.AtoB, relay.BtoA} {
			s := r.Stats(d)
			rs.Dropped += s.Dropped
			rs.Duplicated += s.Duplicated
			rs.Reordered += s.Reordered
			rs.Corrupted += s.Corrupted
		}
	}
	var failed []string
	for st, k := range c2.failed {
		failed = append(failed, fmt.Sprintf("%s %d", st.String(), k))
	}
	slices.Sort(failed)
	t.Logf("nemesis seed %d: %d messages delivered; %d sender and %d receiver incarnations; faults %v; failed sends: %s; relays dropped %d, duplicated %d, reordered %d, corrupted %d frames; reconverged in %v",
		seed, c2.delivered, len(c2.senders), len(c2.all())-len(c2.senders), kindSummary(kinds), strings.Join(failed, ", "),
		rs.Dropped, rs.Duplicated, rs.Reordered, rs.Corrupted, conv.Round(time.Millisecond))
	if len(c2.openRetries) > 0 {
		t.Logf("%d ports opened only after retries:\n  %s", len(c2.openRetries), strings.Join(c2.openRetries, "\n  "))
	}
	if len(c2.violations) > 0 {
		shown := c2.violations[:min(len(c2.violations), 40)]
		t.Errorf("nemesis seed %d: %d contract violations (repeat with %s=%d):\n  %s", seed, len(c2.violations), seedEnv, seed, strings.Join(shown, "\n  "))
	}
}

func kindSummary(k [numKinds]int) string {
	var s []string
	for i, n := range k {
		s = append(s, fmt.Sprintf("%v %d", kind(i), n))
	}
	return strings.Join(s, ", ")
}

func (n *nemesis) delivered() int {
	n.chk.mu.Lock()
	defer n.chk.mu.Unlock()
	return n.chk.delivered
}

// run does fault f at its time and undoes it after its duration.
func (n *nemesis) run(start time.Time, f fault) {
	time.Sleep(time.Until(start.Add(f.At)))
	unlock := n.lock(f)
	defer unlock()
	span := &faultSpan{f: f, start: time.Now()}
	undo := n.apply(&span.f)
	n.t.Logf("%v: %v", time.Since(start).Round(time.Millisecond), span.f)
	n.chk.mu.Lock()
	n.chk.faults = append(n.chk.faults, span)
	n.chk.mu.Unlock()
	time.Sleep(time.Until(start.Add(f.At + f.Dur)))
	undo()
	n.chk.mu.Lock()
	span.end = time.Now()
	n.chk.mu.Unlock()
}

// apply does f and returns what undoes it. Errors are test errors.
func (n *nemesis) apply(f *fault) func() {
	t, c := n.t, n.c
	switch f.Kind {
	case killRecv:
		h := f.Hosts[0]
		n.mu.Lock()
		p := n.receivers[h]
		n.mu.Unlock()
		if p == nil {
			return func() {} // its start failed, a test error already
		}
		p.kill()
		n.chk.mu.Lock()
		p.ended = time.Now()
		n.chk.mu.Unlock()
		return func() { n.startReceiver(h) }
	case killSend:
		h := f.Hosts[0]
		n.mu.Lock()
		p := n.senders[h]
		n.mu.Unlock()
		if p == nil {
			return func() {}
		}
		p.kill()
		return func() { n.startSender(h) }
	case killMapper, killLeader:
		h := -1
		if f.Kind == killMapper {
			h = f.Hosts[0]
		} else {
			for i, hh := range c.Hosts {
				if st, err := queryMapper(hh); err == nil && st.Leader {
					h = i
					break
				}
			}
			if h < 0 {
				t.Logf("kill-leader: no mapper in charge now")
				return func() {}
			}
			f.Hosts = []int{h}
			t.Logf("kill-leader: the mapper of host%d is in charge", h)
		}
		n.mu.Lock()
		p := n.mappers[h]
		n.mkilled[p] = true
		n.mu.Unlock()
		if p == nil {
			return func() {}
		}
		p.Kill()
		return func() { n.startMapper(h) }
	case cutRail:
		h := c.Hosts[f.Hosts[0]]
		n.ip(h, "link set "+h.Ifaces[f.Rail]+" down")
		return func() { n.ip(h, "link set "+h.Ifaces[f.Rail]+" up") }
	case partition:
		move := func(to int) {
			var lines []string
			for _, i := range f.Hosts {
				for r := range 2 {
					port := hostPort(c, i, r)
					if r == 1 && n.relays[i] != nil {
						port = relayPeer(c, i, r)
					}
					lines = append(lines, fmt.Sprintf("link set %s master %s", port, bridge(c, r+to)))
				}
			}
			n.ip(c.Switch, lines...)
		}
		move(2)
		return func() { move(0) }
	case impair:
		r := n.relays[f.Hosts[0]]
		for _, d := range []relay.Direction{relay.AtoB, relay.BtoA} {
			if err := r.SetImpairment(d, f.Imp); err != nil {
				t.Error(err)
			}
		}
		return func() {
			for _, d := range []relay.Direction{relay.AtoB, relay.BtoA} {
				r.SetImpairment(d, relay.Impairment{})
			}
		}
	}
	panic("unknown fault")
}

// ip runs one ip command per line (a batch, one process) in h's namespace.
func (n *nemesis) ip(h *netns.Host, lines ...string) {
	cmd := exec.Command("ip", "-n", h.NS, "-batch", "-")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		n.t.Errorf("%s: ip %q: %v: %s", h.Name, lines, err, out)
	}
}

func (n *nemesis) startMapper(i int) {
	h := n.c.Hosts[i]
	p, err := h.Start(n.mapper, "--unit", unitOf(h), "--hostname", h.Name, "--state-dir", h.Dir,
		"--hosts-file", filepath.Join(h.Dir, "lib", "hosts"))
	if err != nil {
		n.t.Error(err)
		return
	}
	n.mu.Lock()
	n.mappers[i] = p
	n.allMapper = append(n.allMapper, p)
	n.mu.Unlock()
	go func() {
		<-p.Done()
		n.mu.Lock()
		killed := n.mkilled[p]
		n.mu.Unlock()
		if !killed {
			n.chk.violate("%v exited on its own: %v\n%s", p, p.Wait(), tail(p.Output(), 30))
		}
	}()
}

func (n *nemesis) peerArgs(h *netns.Host) []string {
	return []string{"--unit", unitOf(h), "--host", h.Name, "--index", strconv.Itoa(h.Index), "--state-dir", h.Dir,
		"--liveness", liveness.String(), "--progress", progress.String()}
}

func (n *nemesis) startReceiver(i int) {
	h := n.c.Hosts[i]
	inc := n.incarnation()
	p, err := startPeer(h, n.peer, "recv", inc, append(n.peerArgs(h), "--port", strconv.Itoa(recvPort)), n.chk.line)
	if err != nil {
		n.t.Error(err)
		return
	}
	n.chk.addReceiver(p)
	n.track(n.receivers, i, p)
}

func (n *nemesis) startSender(i int) {
	h := n.c.Hosts[i]
	var targets []string
	for j := range n.c.Hosts {
		if j != i {
			targets = append(targets, strconv.Itoa(j))
		}
	}
	inc := n.incarnation()
	// Each stream keeps at most window sends outstanding so that the
	// streams to a dead host cannot take all 61 send tokens.
	window := max(1, (gm.MaxSendTokens-8)/(2*len(targets)))
	args := append(n.peerArgs(h), "--port", strconv.Itoa(sendPort), "--inc", strconv.Itoa(int(inc)),
		"--targets", strings.Join(targets, ","), "--target-port", strconv.Itoa(recvPort), "--window", strconv.Itoa(window),
		"--rate", strconv.Itoa(rate))
	// The checker must know the incarnation before its first line.
	p := &peerProc{role: "send", host: i, inc: inc}
	n.chk.addSender(p)
	q, err := startPeer(h, n.peer, "send", inc, args, n.chk.line)
	if err != nil {
		n.t.Error(err)
		return
	}
	n.chk.addSender(q)
	n.track(n.senders, i, q)
}

// track makes p host i's process of its role (receivers or senders) and
// watches its exit.
func (n *nemesis) track(role map[int]*peerProc, i int, p *peerProc) {
	n.mu.Lock()
	role[i] = p
	n.all = append(n.all, p)
	n.mu.Unlock()
	go n.watchExit(p)
}

// incarnation numbers a new process of the cluster.
func (n *nemesis) incarnation() uint32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nextInc++
	return n.nextInc
}

// watchExit flags an incarnation that exits unless killed or finished.
func (n *nemesis) watchExit(p *peerProc) {
	<-p.done
	n.chk.mu.Lock()
	finished := p.finished
	n.chk.mu.Unlock()
	if !p.killed.Load() && !(finished && p.err == nil) {
		n.chk.violate("%v exited on its own: %v\n%s", p, p.err, tail(p.stderr.String(), 30))
	}
	if s := p.stderr.String(); strings.Contains(s, "panic:") || strings.Contains(s, "fatal error:") || strings.Contains(s, "DATA RACE") {
		n.chk.violate("%v: %s", p, tail(s, 30))
	}
}

func (n *nemesis) waitReady() {
	n.mu.Lock()
	all := append(slices.Collect(maps.Values(n.receivers)), slices.Collect(maps.Values(n.senders))...)
	n.mu.Unlock()
	for _, p := range all {
		if err := p.waitReady(time.Minute); err != nil {
			n.t.Fatal(err)
		}
	}
}

// waitConverged waits until every host's mapper answers with the same
// configured map of every host, and returns one host's status.
func (n *nemesis) waitConverged(timeout time.Duration) (mapperStatus, error) {
	deadline := time.Now().Add(timeout)
	for {
		var first mapperStatus
		ok := true
		for i, h := range n.c.Hosts {
			st, err := queryMapper(h)
			if err != nil || !st.Configured || st.Hosts != len(n.c.Hosts) || i > 0 && (st.MapVersion != first.MapVersion || st.Mapper != first.Mapper) {
				ok = false
				break
			}
			if i == 0 {
				first = st
			}
		}
		if ok {
			return first, nil
		}
		if time.Now().After(deadline) {
			for _, h := range n.c.Hosts {
				st, err := queryMapper(h)
				n.t.Logf("%s: %+v %v", h.Name, st, err)
			}
			n.mu.Lock()
			for i, p := range n.mappers {
				n.t.Logf("host%d gm_mapper log:\n%s", i, tail(p.Output(), 15))
			}
			n.mu.Unlock()
			return first, fmt.Errorf("no single configured map of %d hosts %v after the mappers started or the heal", len(n.c.Hosts), timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFlowing waits until every stream (sender host, receiver host,
// priority) delivered resumeMessages more messages.
func (n *nemesis) waitFlowing(what string, timeout time.Duration) error {
	n.chk.mu.Lock()
	base := maps.Clone(n.chk.counts)
	n.chk.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		var stuck []string
		stuckFrom := map[int]bool{}
		n.chk.mu.Lock()
		for s := range n.c.Hosts {
			for d := range n.c.Hosts {
				for pri := range 2 {
					k := [3]int{s, d, pri}
					if s != d && n.chk.counts[k]-base[k] < resumeMessages {
						stuck = append(stuck, fmt.Sprintf("host%d->host%d/%d: %d", s, d, pri, n.chk.counts[k]-base[k]))
						stuckFrom[s] = true
					}
				}
			}
		}
		n.chk.mu.Unlock()
		if len(stuck) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			n.dumpSenders(stuckFrom)
			return fmt.Errorf("%s: %d streams delivered fewer than %d messages in %v: %s", what, len(stuck), resumeMessages, timeout, strings.Join(stuck, ", "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// dumpSenders logs the stream and port state of the senders of hosts.
func (n *nemesis) dumpSenders(hosts map[int]bool) {
	n.mu.Lock()
	var ps []*peerProc
	for h := range hosts {
		if p := n.senders[h]; p != nil {
			ps = append(ps, p)
		}
	}
	n.mu.Unlock()
	for _, p := range ps {
		fmt.Fprintln(p.stdin, "debug")
	}
	time.Sleep(2 * time.Second)
	n.chk.mu.Lock()
	defer n.chk.mu.Unlock()
	for _, p := range ps {
		var st []string
		for k, m := range n.chk.comps {
			if k.inc != p.inc {
				continue
			}
			counts := map[gm.Status]int{}
			for _, c := range m {
				counts[c.st]++
			}
			st = append(st, fmt.Sprintf("host%d/%d %v", k.dst, k.pri, counts))
		}
		slices.Sort(st)
		n.t.Logf("%v: completions %s; state:\n  %s", p, strings.Join(st, "; "), strings.Join(p.debug, "\n  "))
	}
}

// watchIDs reads every host's map file while the schedule runs: a host's
// node id must never change. It returns a function that stops it.
func (n *nemesis) watchIDs(ids map[int]int) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			n.checkIDs(ids)
		}
	}()
	return func() { close(stop); <-done }
}

func (n *nemesis) checkIDs(ids map[int]int) {
	for _, h := range n.c.Hosts {
		m, err := gmmap.ReadHost(h)
		if err != nil {
			continue // being replaced
		}
		for j, hj := range n.c.Hosts {
			if e, ok := m.ByHost(hj.Name); ok && int(e.ID) != ids[j] {
				n.chk.violate("%s's map (version %d) gives %s node id %d, it was %d", h.Name, m.Version, hj.Name, e.ID, ids[j])
			}
		}
	}
}

// checkMappers flags mappers that panicked or exited unless killed.
func (n *nemesis) checkMappers() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.mappers {
		if out := p.Output(); strings.Contains(out, "panic:") || strings.Contains(out, "fatal error:") {
			n.chk.violate("%v: %s", p, tail(out, 30))
		}
	}
}

// killAll kills every peer process and gm_mapper still running (by pid).
func (n *nemesis) killAll() {
	n.mu.Lock()
	all := slices.Clone(n.all)
	mappers := slices.Clone(n.allMapper)
	n.mu.Unlock()
	for _, p := range all {
		p.kill()
	}
	n.mu.Lock()
	for _, p := range mappers {
		n.mkilled[p] = true
	}
	n.mu.Unlock()
	for _, p := range mappers {
		p.Kill()
	}
}
