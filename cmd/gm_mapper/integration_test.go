//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/mapper/driver"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/tests/netns"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binary builds gm_mapper once per test process and returns its path.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "gm_mapper-test-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, "gm_mapper"), ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "gm_mapper")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// mapperHost is a host of a test cluster with its gm_mapper.
type mapperHost struct {
	*netns.Host
	proc *netns.Proc
}

func (h *mapperHost) unit() string      { return h.Ifaces[0] } // gm.ResolveUnit's name of "eth0,eth1"
func (h *mapperHost) mapFile() string   { return filepath.Join(h.Dir, "map") }
func (h *mapperHost) pidFile() string   { return filepath.Join(h.Dir, "gm_mapper.pid") }
func (h *mapperHost) hostsFile() string { return filepath.Join(h.Dir, "lib", h.unit()+".hosts") }

// mapperArgs are the arguments of h's gm_mapper.
func (h *mapperHost) mapperArgs(extra ...string) []string {
	return append([]string{
		"--unit", strings.Join(h.Ifaces, ","), "--hostname", h.Name,
		"--state-dir", h.Dir, "--map-file", h.mapFile(), "--hosts-file", h.hostsFile(),
		"--daemon-pid-file", h.pidFile(), "--verbose",
	}, extra...)
}

// start starts h's gm_mapper; it is stopped (SIGTERM, by pid) when the test
// ends, and its log is printed if the test failed.
func (h *mapperHost) start(t testing.TB, extra ...string) {
	t.Helper()
	p, err := h.Start(binary(t), h.mapperArgs(extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.proc = p
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("%s: %v", h.Name, err)
		}
		if t.Failed() {
			t.Logf("%s gm_mapper log:\n%s", h.Name, tail(p.Output(), 60))
		}
	})
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// status queries h's gm_mapper.
func (h *mapperHost) status() (driver.Status, error) {
	var st driver.Status
	err := h.Do(func() error {
		_, err := ctl.Query(ctl.MapperName(h.unit()), &st)
		return err
	})
	return st, err
}

// readMap reads h's map file.
func (h *mapperHost) readMap() (*nodemap.Map, error) {
	b, err := os.ReadFile(h.mapFile())
	if err != nil {
		return nil, err
	}
	return nodemap.Parse(b)
}

// newCluster builds a cluster and wraps its hosts.
func newCluster(t testing.TB, o netns.Options) []*mapperHost {
	t.Helper()
	c := netns.New(t, o)
	hs := make([]*mapperHost, len(c.Hosts))
	for i, h := range c.Hosts {
		hs[i] = &mapperHost{Host: h}
	}
	return hs
}

// configured reports whether every host of hs has installed the same map
// version, made by the same mapper, listing exactly hs, and reports
// itself fully configured; it returns that map version, or why not.
func configured(hs []*mapperHost) (uint32, string) {
	var version uint32
	var mapperID string
	for _, h := range hs {
		st, err := h.status()
		if err != nil {
			return 0, fmt.Sprintf("%s: %v", h.Name, err)
		}
		switch {
		case !st.Configured:
			return 0, fmt.Sprintf("%s: not configured (version %d, %d hosts)", h.Name, st.MapVersion, st.Hosts)
		case st.Hosts != len(hs):
			return 0, fmt.Sprintf("%s: %d hosts, want %d", h.Name, st.Hosts, len(hs))
		case version != 0 && (st.MapVersion != version || st.Mapper != mapperID):
			return 0, fmt.Sprintf("%s: version %d by %s, others %d by %s", h.Name, st.MapVersion, st.Mapper, version, mapperID)
		}
		version, mapperID = st.MapVersion, st.Mapper
		m, err := h.readMap()
		if err != nil {
			return 0, fmt.Sprintf("%s: map file: %v", h.Name, err)
		}
		if m.Version != version || m.Len() != len(hs) {
			return 0, fmt.Sprintf("%s: map file version %d with %d hosts, status %d", h.Name, m.Version, m.Len(), version)
		}
		for _, o := range hs {
			e, ok := m.ByHost(o.Name)
			if !ok {
				return 0, fmt.Sprintf("%s: map file lacks %s", h.Name, o.Name)
			}
			if o != h && len(m.RoutesTo(e.ID)) == 0 {
				return 0, fmt.Sprintf("%s: map file has no route to %s", h.Name, o.Name)
			}
		}
	}
	return version, ""
}

// waitConfigured waits until configured(hs) holds and returns the map
// version.
func waitConfigured(t testing.TB, hs []*mapperHost, timeout time.Duration) uint32 {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		v, why := configured(hs)
		if why == "" {
			return v
		}
		if time.Now().After(end) {
			t.Fatalf("not fully configured after %v: %s", timeout, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ids returns the node id of every host in h's map file, by name.
func ids(t testing.TB, h *mapperHost) map[string]nodemap.NodeID {
	t.Helper()
	m, err := h.readMap()
	if err != nil {
		t.Fatal(err)
	}
	r := map[string]nodemap.NodeID{}
	for _, e := range m.Entries() {
		r[e.Host] = e.ID
	}
	return r
}

func startAll(t testing.TB, hs []*mapperHost, extra ...string) {
	t.Helper()
	for _, h := range hs {
		h.start(t, extra...)
	}
}

func testCluster(t *testing.T, o netns.Options) {
	hs := newCluster(t, o)
	binary(t)
	start := time.Now()
	startAll(t, hs)
	last := time.Now()
	v := waitConfigured(t, hs, 20*time.Second)
	t.Logf("%d hosts, %d rails: fully configured (map version %d) %v after the first gm_mapper started, %v after the last",
		len(hs), len(hs[0].Ifaces), v, time.Since(start).Round(time.Millisecond), time.Since(last).Round(time.Millisecond))
	// Every host has the same ids.
	want := ids(t, hs[0])
	for _, h := range hs[1:] {
		if got := ids(t, h); !mapsEqual(got, want) {
			t.Fatalf("%s has ids %v, %s has %v", h.Name, got, hs[0].Name, want)
		}
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestIntegrationMapperCluster2 is the smallest network: two hosts on one
// switch.
func TestIntegrationMapperCluster2(t *testing.T) {
	testCluster(t, netns.Options{Hosts: 2})
}

// TestIntegrationMapperCluster8 is eight dual-rail hosts on two switches.
func TestIntegrationMapperCluster8(t *testing.T) {
	testCluster(t, netns.Options{Hosts: 8, Rails: 2})
}

// routes returns h's routes to node name as "local>peer" MAC pairs.
func routes(t testing.TB, h *mapperHost, name string) []string {
	t.Helper()
	m, err := h.readMap()
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m.ByHost(name)
	if !ok {
		t.Fatalf("%s: no %s in the map", h.Name, name)
	}
	var r []string
	for _, rt := range m.RoutesTo(e.ID) {
		r = append(r, nodemap.FormatMAC(rt.Local)+">"+nodemap.FormatMAC(rt.Peer))
	}
	slices.Sort(r)
	return r
}

func route(a *mapperHost, ar int, b *mapperHost, br int) string {
	return a.MACs[ar].String() + ">" + b.MACs[br].String()
}

func sorted(s ...string) []string { slices.Sort(s); return s }

// TestIntegrationMapperTopologies maps the topologies of issue 10 item 3
// and checks every host's routes.
func TestIntegrationMapperTopologies(t *testing.T) {
	t.Run("SingleRailAmongDualRail", func(t *testing.T) {
		hs := newCluster(t, netns.Options{Hosts: 3, Rails: 2, HostRails: [][]int{nil, nil, {0}}})
		startAll(t, hs)
		waitConfigured(t, hs, 20*time.Second)
		a, b, s := hs[0], hs[1], hs[2]
		if got, want := routes(t, a, b.Name), sorted(route(a, 0, b, 0), route(a, 1, b, 1)); !slices.Equal(got, want) {
			t.Errorf("%s to %s: %v, want %v", a.Name, b.Name, got, want)
		}
		if got, want := routes(t, a, s.Name), sorted(route(a, 0, s, 0)); !slices.Equal(got, want) {
			t.Errorf("%s to single-rail %s: %v, want %v", a.Name, s.Name, got, want)
		}
		if got, want := routes(t, s, a.Name), sorted(route(s, 0, a, 0)); !slices.Equal(got, want) {
			t.Errorf("single-rail %s to %s: %v, want %v", s.Name, a.Name, got, want)
		}
	})
	t.Run("CrossedRails", func(t *testing.T) {
		// host1's eth0 is on the switch of host0's eth1 and vice versa.
		hs := newCluster(t, netns.Options{Hosts: 3, Rails: 2, HostRails: [][]int{nil, {1, 0}}})
		startAll(t, hs)
		waitConfigured(t, hs, 20*time.Second)
		a, x, c := hs[0], hs[1], hs[2]
		if got, want := routes(t, a, x.Name), sorted(route(a, 0, x, 1), route(a, 1, x, 0)); !slices.Equal(got, want) {
			t.Errorf("%s to crossed %s: %v, want %v", a.Name, x.Name, got, want)
		}
		if got, want := routes(t, x, c.Name), sorted(route(x, 0, c, 1), route(x, 1, c, 0)); !slices.Equal(got, want) {
			t.Errorf("crossed %s to %s: %v, want %v", x.Name, c.Name, got, want)
		}
	})
	t.Run("SomeRailsOnly", func(t *testing.T) {
		// host2's eth1 is alone on a third switch: its peers reach it
		// on rail 0 only.
		hs := newCluster(t, netns.Options{Hosts: 3, Rails: 3, HostRails: [][]int{{0, 1}, {0, 1}, {0, 2}}})
		startAll(t, hs)
		waitConfigured(t, hs, 20*time.Second)
		a, b, p := hs[0], hs[1], hs[2]
		if got, want := routes(t, a, b.Name), sorted(route(a, 0, b, 0), route(a, 1, b, 1)); !slices.Equal(got, want) {
			t.Errorf("%s to %s: %v, want %v", a.Name, b.Name, got, want)
		}
		if got, want := routes(t, a, p.Name), sorted(route(a, 0, p, 0)); !slices.Equal(got, want) {
			t.Errorf("%s to partly reachable %s: %v, want %v", a.Name, p.Name, got, want)
		}
		if got, want := routes(t, p, b.Name), sorted(route(p, 0, b, 0)); !slices.Equal(got, want) {
			t.Errorf("partly reachable %s to %s: %v, want %v", p.Name, b.Name, got, want)
		}
	})
}

// leader returns the host whose gm_mapper is the mapper in charge.
func leader(t testing.TB, hs []*mapperHost) *mapperHost {
	t.Helper()
	for _, h := range hs {
		if st, err := h.status(); err == nil && st.Leader {
			return h
		}
	}
	t.Fatal("no leader")
	return nil
}

// TestIntegrationMapperTakeover kills the mapper in charge: another takes
// over, and the node ids of the remaining hosts do not change.
func TestIntegrationMapperTakeover(t *testing.T) {
	hs := newCluster(t, netns.Options{Hosts: 4, Rails: 2})
	startAll(t, hs)
	v0 := waitConfigured(t, hs, 20*time.Second)
	before := ids(t, hs[0])
	l := leader(t, hs)
	var rest []*mapperHost
	for _, h := range hs {
		if h != l {
			rest = append(rest, h)
		}
	}
	killed := time.Now()
	if err := l.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(20 * time.Second)
	for {
		nl := leader(t, rest)
		st, _ := nl.status()
		if st.MapVersion > v0 && st.Mapper != l.MACs[0].String() {
			if _, why := configuredExcept(rest, l); why == "" {
				break
			}
		}
		if time.Now().After(end) {
			t.Fatalf("no new map by a new mapper 20 s after the leader %s was killed", l.Name)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("leader %s killed; %s took over, new map on every host after %v", l.Name, leader(t, rest).Name, time.Since(killed).Round(time.Millisecond))
	for _, h := range rest {
		after := ids(t, h)
		for name, id := range before {
			if name == l.Name {
				continue
			}
			if after[name] != id {
				t.Errorf("%s: %s has node id %d, had %d", h.Name, name, after[name], id)
			}
		}
	}
}

// configuredExcept is configured for hs, where gone may still be listed
// (a host that left keeps its id) but need not be configured.
func configuredExcept(hs []*mapperHost, gone *mapperHost) (uint32, string) {
	var version uint32
	for _, h := range hs {
		st, err := h.status()
		if err != nil {
			return 0, err.Error()
		}
		if !st.Configured {
			return 0, h.Name + " not configured"
		}
		if version != 0 && st.MapVersion != version {
			return 0, "versions differ"
		}
		version = st.MapVersion
		m, err := h.readMap()
		if err != nil || m.Version != version {
			return 0, h.Name + ": map file behind"
		}
	}
	return version, ""
}

// TestIntegrationMapperRestartKeepsID restarts a host's gm_mapper: the
// host keeps its node id, and so does everyone else.
func TestIntegrationMapperRestartKeepsID(t *testing.T) {
	hs := newCluster(t, netns.Options{Hosts: 3})
	startAll(t, hs)
	waitConfigured(t, hs, 20*time.Second)
	before := ids(t, hs[0])
	// Restart a host that is not the leader, then the leader.
	l := leader(t, hs)
	for _, h := range []*mapperHost{hs[slices.IndexFunc(hs, func(h *mapperHost) bool { return h != l })], l} {
		if err := h.proc.Stop(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(h.pidFile()); !os.IsNotExist(err) {
			t.Fatalf("%s: pid file left after SIGTERM: %v", h.Name, err)
		}
		h.start(t)
		waitConfigured(t, hs, 20*time.Second)
		for _, o := range hs {
			if got := ids(t, o); !mapsEqual(got, before) {
				t.Fatalf("after restarting %s's gm_mapper, %s has ids %v, want %v", h.Name, o.Name, got, before)
			}
		}
	}
}

// TestIntegrationMapperLateJoin starts a host's gm_mapper after the others
// mapped the network: it gets a new id, the others keep theirs.
func TestIntegrationMapperLateJoin(t *testing.T) {
	hs := newCluster(t, netns.Options{Hosts: 4, Rails: 2})
	startAll(t, hs[:3])
	v0 := waitConfigured(t, hs[:3], 20*time.Second)
	before := ids(t, hs[0])
	joined := time.Now()
	hs[3].start(t)
	v1 := waitConfigured(t, hs, 20*time.Second)
	t.Logf("late host configured %v after its gm_mapper started (version %d -> %d)", time.Since(joined).Round(time.Millisecond), v0, v1)
	after := ids(t, hs[3])
	for name, id := range before {
		if after[name] != id {
			t.Errorf("%s: id %d, had %d", name, after[name], id)
		}
	}
	if after[hs[3].Name] == 0 || v1 <= v0 {
		t.Errorf("late host id %d, versions %d -> %d", after[hs[3].Name], v0, v1)
	}
}

// TestIntegrationMapperRailCut cuts one rail of one host: every host
// installs a new map version within 2 s, and its routes to that host no
// longer use the cut rail.
func TestIntegrationMapperRailCut(t *testing.T) {
	hs := newCluster(t, netns.Options{Hosts: 4, Rails: 2})
	startAll(t, hs)
	v0 := waitConfigured(t, hs, 20*time.Second)
	victim := hs[2]
	cut := time.Now()
	if err := victim.LinkDown(1); err != nil {
		t.Fatal(err)
	}
	seen := map[string]time.Duration{}
	for len(seen) < len(hs) {
		for _, h := range hs {
			if _, ok := seen[h.Name]; ok {
				continue
			}
			if m, err := h.readMap(); err == nil && m.Version > v0 {
				seen[h.Name] = time.Since(cut)
			}
		}
		if time.Since(cut) > 10*time.Second {
			t.Fatalf("new map versions after the cut: %v (of %d hosts)", seen, len(hs))
		}
		time.Sleep(5 * time.Millisecond)
	}
	var worst time.Duration
	for _, d := range seen {
		worst = max(worst, d)
	}
	t.Logf("rail cut: a new map version on every host after %v (per host: %v)", worst.Round(time.Millisecond), seen)
	if worst > 2*time.Second {
		t.Errorf("new map on every host %v after the rail cut, want at most 2 s", worst)
	}
	waitConfigured(t, hs, 10*time.Second)
	for _, h := range hs {
		if h == victim {
			continue
		}
		for _, r := range routes(t, h, victim.Name) {
			if strings.HasSuffix(r, ">"+victim.MACs[1].String()) {
				t.Errorf("%s still routes to %s's cut rail: %v", h.Name, victim.Name, r)
			}
		}
	}
}

// TestIntegrationMapperBusyAndPidFile: a second gm_mapper of the unit
// fails at once naming the first one's pid; the pid file holds the pid and
// goes away with SIGTERM.
func TestIntegrationMapperBusyAndPidFile(t *testing.T) {
	hs := newCluster(t, netns.Options{Hosts: 1})
	h := hs[0]
	h.start(t, "--level", "0")
	var st driver.Status
	end := time.Now().Add(10 * time.Second)
	for {
		var err error
		if st, err = h.status(); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b, err := os.ReadFile(h.pidFile())
	if err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(st.PID) {
		t.Fatalf("pid file %q (%v), status pid %d", b, err, st.PID)
	}
	start := time.Now()
	out, err := h.Command(binary(t), h.mapperArgs("--daemon-pid-file", filepath.Join(h.Dir, "second.pid"))...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("second gm_mapper: %v, want exit status 1:\n%s", err, out)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("second gm_mapper took %v to fail", el)
	}
	if !bytes.Contains(out, []byte(fmt.Sprintf("pid %d", st.PID))) || !bytes.Contains(out, []byte("busy")) {
		t.Fatalf("second gm_mapper's message does not name the first one's pid %d:\n%s", st.PID, out)
	}
	if err := h.proc.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := h.proc.Wait(); err != nil {
		t.Errorf("gm_mapper after SIGTERM: %v, want exit status 0", err)
	}
	if _, err := os.Stat(h.pidFile()); !os.IsNotExist(err) {
		t.Errorf("pid file after SIGTERM: %v", err)
	}
}

// TestIntegrationMapperPortClosed: a host where only gm_mapper runs
// answers a message for a closed port at once.
func TestIntegrationMapperPortClosed(t *testing.T) {
	hs := newCluster(t, netns.Options{Hosts: 2, Rails: 2})
	startAll(t, hs)
	waitConfigured(t, hs, 20*time.Second)
	a, b := hs[0], hs[1]
	// b answers once it looked at its ports (every 100 ms).
	end := time.Now().Add(5 * time.Second)
	for {
		st, err := b.status()
		if err == nil && len(st.Interfaces) == 2 && st.Interfaces[0].ClosedPorts&(1<<5) != 0 && st.Interfaces[1].ClosedPorts&(1<<5) != 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%s does not answer for closed ports: %+v, %v", b.Name, st.Interfaces, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p := openPort(t, a, 2)
	bid, err := p.HostNameToNodeID(b.Name)
	if err != nil {
		t.Fatal(err)
	}
	c := newCompletions()
	start := time.Now()
	if err := p.SendWithCallback(make([]byte, 64), 7, 64, gm.LowPriority, bid, 5, c.cb, 1); err != nil {
		t.Fatal(err)
	}
	got := c.wait(t, p, 1, 10*time.Second)
	el := time.Since(start)
	if got[0].st != gm.SendTargetPortClosed {
		t.Fatalf("send to a closed port: %v after %v, want SendTargetPortClosed", got[0].st, el)
	}
	t.Logf("SendTargetPortClosed %v after the send", el.Round(time.Microsecond))
	if el > 500*time.Millisecond {
		t.Errorf("SendTargetPortClosed after %v, want well under 1 s", el)
	}
}

// openPort opens port id of h's unit (all its interfaces) with the map
// its gm_mapper writes.
func openPort(t testing.TB, h *mapperHost, id int) *gm.Port {
	t.Helper()
	cfg := &gm.Config{Host: h.Name, StateDir: filepath.Join(h.Dir, "ports"), MapFile: h.mapFile(), MapPoll: 50 * time.Millisecond}
	var p *gm.Port
	err := h.Do(func() (err error) {
		p, err = gm.Open(strings.Join(h.Ifaces, ","), id, "test", cfg)
		return err
	})
	if err != nil {
		t.Fatalf("%s: open port %d: %v", h.Name, id, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

type completion struct {
	ctx int
	st  gm.Status
}

type completions struct {
	mu  sync.Mutex
	got []completion
}

func newCompletions() *completions { return &completions{} }

func (c *completions) cb(_ *gm.Port, ctx any, st gm.Status) {
	c.mu.Lock()
	c.got = append(c.got, completion{ctx.(int), st})
	c.mu.Unlock()
}

// wait drives p (its callbacks run in Unknown) until n sends completed.
func (c *completions) wait(t testing.TB, p *gm.Port, n int, timeout time.Duration) []completion {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		got := slices.Clone(c.got)
		c.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(end) {
			t.Fatalf("%d of %d sends completed after %v: %v", len(got), n, timeout, got)
		}
		if e := p.Receive(); e.Type != gm.NoRecvEvent {
			p.Unknown(e)
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}
