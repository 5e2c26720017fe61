//go:build linux

package mapper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/pcapgo"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
	"github.com/ethergm/ethergm/mapper/driver"
	"github.com/ethergm/ethergm/nodemap"
	"github.com/ethergm/ethergm/tests/cmdbin"
)

// tool returns the path of command name, built once for the test process.
func tool(t testing.TB, name string) string { return cmdbin.Path(t, name) }

func TestMain(m *testing.M) {
	code := m.Run()
	cmdbin.Cleanup()
	os.Exit(code)
}

func unitOf(h *netns.Host) string { return strings.Join(h.Ifaces, ",") }

// startMapper starts h's gm_mapper; the test stops it by pid at its end.
func startMapper(t *testing.T, h *netns.Host) *netns.Proc {
	t.Helper()
	p, err := h.Start(tool(t, "gm_mapper"), "--unit", unitOf(h), "--hostname", h.Name, "--state-dir", h.Dir,
		"--hosts-file", filepath.Join(h.Dir, "lib", "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s gm_mapper log:\n%s", h.Name, tail(p.Output(), 40))
		}
	})
	return p
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func status(h *netns.Host) (driver.Status, error) {
	var st driver.Status
	err := h.Do(func() error {
		_, err := ctl.Query(ctl.MapperName(h.Ifaces[0]), &st)
		return err
	})
	return st, err
}

// waitConfigured waits until the mappers of hosts report the same map
// version with n hosts, fully configured, and returns it.
func waitConfigured(t *testing.T, hosts []*netns.Host, n int, timeout time.Duration) uint32 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var v uint32
		ok := true
		for i, h := range hosts {
			st, err := status(h)
			if err != nil || !st.Configured || st.Hosts != n || (i > 0 && st.MapVersion != v) {
				ok = false
				break
			}
			v = st.MapVersion
		}
		if ok {
			return v
		}
		if time.Now().After(deadline) {
			for _, h := range hosts {
				st, err := status(h)
				t.Logf("%s: %+v %v", h.Name, st, err)
			}
			t.Fatalf("not fully configured with %d hosts after %v", n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIntegrationMapperVerifiedAcrossRemaps runs a verified multi-rail
// gm_allsize transfer between two hosts while a third host's and the
// server's second rails go down and up again: at least five new map
// versions are installed under the running ports, and no message is lost,
// duplicated or corrupted (gm_allsize --verify checks every byte of every
// message against its sequence number on both sides).
func TestIntegrationMapperVerifiedAcrossRemaps(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3, Rails: 2})
	for _, h := range c.Hosts {
		startMapper(t, h)
	}
	v0 := waitConfigured(t, c.Hosts, 3, 30*time.Second)
	a, b, x := c.Hosts[0], c.Hosts[1], c.Hosts[2]
	srv, done := verifiedTransfer(t, a, b)

	// Five changes, each waited for on every host: x's eth1 down, up; b's
	// eth1 down, up; x's eth1 down again.
	changes := []struct {
		h    *netns.Host
		down bool
	}{{x, true}, {x, false}, {b, true}, {b, false}, {x, true}}
	versions := map[uint32]bool{v0: true}
	last := v0
	for i, ch := range changes {
		time.Sleep(500 * time.Millisecond)
		var err error
		if ch.down {
			err = ch.h.LinkDown(1)
		} else {
			err = ch.h.LinkUp(1)
		}
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			m, err := gmmap.ReadHost(a)
			if err == nil && m.Version != last {
				last = m.Version
				versions[last] = true
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("change %d (%s eth1 down=%v): no new map on %s within 20 s", i, ch.h.Name, ch.down, a.Name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case r := <-done:
			t.Fatalf("the transfer ended before change %d: %v\n%s", i, r.err, r.out)
		default:
		}
	}
	if len(versions) < 6 {
		t.Fatalf("only %d map versions seen: %v", len(versions), versions)
	}
	r := <-done
	if r.err != nil || !strings.Contains(r.out, "result: PASS") || !strings.Contains(r.out, " 0 data errors") || !strings.Contains(r.out, " 0 failed sends") {
		t.Fatalf("the transfer across %d remaps failed: %v\n%s\nserver:\n%s", len(versions)-1, r.err, r.out, srv.Output())
	}
	t.Logf("%d map versions installed under the running transfer:\n%s", len(versions)-1, tail(r.out, 8))
}

// TestIntegrationMapperPortClosedAndGone: a host whose mapper runs but that
// has no port open answers at once (SendTargetPortClosed, not a timeout);
// once that host leaves the network (its mapper and links gone), the new
// map drops it and a send to it fails with SendTargetNodeUnreachable,
// within the send timeout, never hanging.
func TestIntegrationMapperPortClosedAndGone(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3})
	procs := make([]*netns.Proc, len(c.Hosts))
	for i, h := range c.Hosts {
		procs[i] = startMapper(t, h)
	}
	waitConfigured(t, c.Hosts, 3, 30*time.Second)
	// a sends to b; both are followers, so that b's leaving is noticed by
	// the mapper in charge (a leader leaving is TestIntegrationMapperLeaderLeaves).
	var a, b *netns.Host
	bi := -1
	for i, h := range c.Hosts {
		st, err := status(h)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case st.Leader:
		case a == nil:
			a = h
		default:
			b, bi = h, i
		}
	}
	if a == nil || b == nil {
		t.Fatal("no two followers")
	}
	eb := entryOf(t, a, b)
	p := openOn(t, a, "eth0", "closed-test", &gm.Config{Host: a.Name, StateDir: a.Dir, LivenessTimeout: 5 * time.Second})
	send := func() (gm.Status, time.Duration) {
		t.Helper()
		done := make(chan gm.Status, 1)
		msg := []byte("hello")
		start := time.Now()
		if err := p.SendWithCallback(msg, 7, len(msg), gm.LowPriority, eb.ID, 5, func(_ *gm.Port, _ any, s gm.Status) { done <- s }, nil); err != nil {
			if errors.Is(err, gm.ErrUnknownNode) {
				// No route to the node any more: refused at once.
				return gm.SendTargetNodeUnreachable, time.Since(start)
			}
			t.Fatal(err)
		}
		for {
			select {
			case s := <-done:
				return s, time.Since(start)
			default:
			}
			if e := p.Receive(); e.Type != gm.NoRecvEvent {
				p.Unknown(e)
			}
			if time.Since(start) > 60*time.Second {
				t.Fatal("send neither completed nor failed within 60 s")
			}
		}
	}
	st, took := send()
	if st != gm.SendTargetPortClosed || took > 2*time.Second {
		t.Fatalf("send to a host with no port open: %v after %v, want SendTargetPortClosed at once", st, took)
	}
	if err := p.ResumeSending(gm.LowPriority, eb.ID, 5, nil, nil); err != nil {
		t.Fatal(err)
	}
	// b leaves: its mapper stops and its link goes down. A send started
	// at once, on the old map, fails within the liveness timeout (5 s).
	procs[bi].Stop()
	if err := b.LinkDown(0); err != nil {
		t.Fatal(err)
	}
	st, took = send()
	if st != gm.SendTargetNodeUnreachable || took > 15*time.Second {
		t.Fatalf("send to a host that just left: %v after %v, want SendTargetNodeUnreachable within the send timeout", st, took)
	}
	t.Logf("in flight when the host left: unreachable after %v", took)
	if err := p.ResumeSending(gm.LowPriority, eb.ID, 5, nil, nil); err != nil {
		t.Fatal(err)
	}
	waitUnrouted(t, a, b.Name, 20*time.Second)
	time.Sleep(2 * gm.DefaultMapPoll) // the port takes the new map
	st, took = send()
	if st != gm.SendTargetNodeUnreachable || took > 15*time.Second {
		t.Fatalf("send to a host that left: %v after %v, want SendTargetNodeUnreachable", st, took)
	}
	t.Logf("PORT_CLOSED answered by the mapper; after the remap, unreachable %v after the send", took)
}

// TestIntegrationMapperPortKilled: a receiving process (gm_allsize
// --serve, port 2) is killed with SIGKILL while its host's gm_mapper runs;
// a send to that port fails with SendTargetPortClosed, and the mapper
// learned of the close from the end of the port's connection to it (its
// PortsClosedByEvent), not from its periodic look at the socket list
// (PortsClosedByPoll stays 0). The time from the kill to the failed send
// goes to the log.
func TestIntegrationMapperPortKilled(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	for _, h := range c.Hosts {
		startMapper(t, h)
	}
	waitConfigured(t, c.Hosts, 2, 30*time.Second)
	a, b := c.Hosts[0], c.Hosts[1]
	srv, err := b.Start(tool(t, "gm_allsize"), "--hostname", b.Name, "--state-dir", b.Dir, "--unit", unitOf(b), "--serve")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	watched := func() bool {
		st, err := status(b)
		return err == nil && len(st.WatchedPorts) == 1 && st.WatchedPorts[0] == 2
	}
	for deadline := time.Now().Add(30 * time.Second); !watched(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s's gm_mapper does not watch port 2 of the server:\n%s", b.Name, srv.Output())
		}
	}
	eb := entryOf(t, a, b)
	p := openOn(t, a, unitOf(a), "kill-test", &gm.Config{Host: a.Name, StateDir: a.Dir})

	killed := time.Now()
	if err := srv.Kill(); err != nil { // SIGKILL, and waits for the process
		t.Fatal(err)
	}
	reaped := time.Now()
	done := make(chan gm.Status, 1)
	msg := []byte("to a port that died")
	if err := p.SendWithCallback(msg, 7, len(msg), gm.LowPriority, eb.ID, 2, func(_ *gm.Port, _ any, s gm.Status) { done <- s }, nil); err != nil {
		t.Fatal(err)
	}
	var got gm.Status
	for waiting := true; waiting; {
		select {
		case got = <-done:
			waiting = false
		default:
			if e := p.Receive(); e.Type != gm.NoRecvEvent {
				p.Unknown(e)
			}
			if time.Since(killed) > 60*time.Second {
				t.Fatal("the send neither completed nor failed within 60 s")
			}
		}
	}
	took := time.Since(killed)
	st, err := status(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != gm.SendTargetPortClosed {
		t.Fatalf("send to the killed port: %v, want SendTargetPortClosed", got)
	}
	if st.PortsClosedByEvent != 1 || st.PortsClosedByPoll != 0 || st.ClosedNacks == 0 || len(st.OpenPorts) != 0 {
		t.Fatalf("%s's gm_mapper: %d ports closed by event, %d by poll, %d nacks, open %v; want 1, 0, some, none",
			b.Name, st.PortsClosedByEvent, st.PortsClosedByPoll, st.ClosedNacks, st.OpenPorts)
	}
	t.Logf("SendTargetPortClosed %v after the SIGKILL of the receiver, %v after its exit was reaped (%d PORT_CLOSED nacks from %s's gm_mapper)",
		took, took-reaped.Sub(killed), st.ClosedNacks, b.Name)
}

// waitUnrouted waits until h's map has no route to host name (a host that
// left keeps its node id reserved, and may stay listed, but unrouted).
func waitUnrouted(t *testing.T, h *netns.Host, name string, timeout time.Duration) *nodemap.Map {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m, err := gmmap.ReadHost(h)
		if err == nil {
			e, ok := m.ByHost(name)
			if !ok || len(m.RoutesTo(e.ID)) == 0 {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's map still routes to %s %v after it left", h.Name, name, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIntegrationMapperLeaderLeaves: the host of the mapper in charge
// leaves (its gm_mapper stops, its link goes down); another mapper takes
// over, the hosts keep their node ids, and the host that left is dropped
// from the map (its id stays reserved).
func TestIntegrationMapperLeaderLeaves(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3})
	procs := make([]*netns.Proc, len(c.Hosts))
	for i, h := range c.Hosts {
		procs[i] = startMapper(t, h)
	}
	waitConfigured(t, c.Hosts, 3, 30*time.Second)
	li := -1
	var rest []*netns.Host
	for i, h := range c.Hosts {
		st, err := status(h)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader {
			li = i
		} else {
			rest = append(rest, h)
		}
	}
	if li < 0 {
		t.Fatal("no leader")
	}
	before, err := gmmap.ReadHost(rest[0])
	if err != nil {
		t.Fatal(err)
	}
	procs[li].Stop()
	if err := c.Hosts[li].LinkDown(0); err != nil {
		t.Fatal(err)
	}
	gone := c.Hosts[li].Name
	waitUnrouted(t, rest[0], gone, 30*time.Second)
	waitUnrouted(t, rest[1], gone, 30*time.Second)
	// Another mapper takes over: its map (a new version) is on both hosts.
	deadline := time.Now().Add(30 * time.Second)
	for _, h := range rest {
		for {
			m, err := gmmap.ReadHost(h)
			if err == nil && m.Mapper != before.Mapper && m.Version > before.Version {
				if _, ok := m.ByHost(h.Name); ok {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no map from another mapper 30 s after %s left (%v):\n%s", h.Name, gone, err, m.Format())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	after, err := gmmap.ReadHost(rest[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range rest {
		eb, _ := before.ByHost(h.Name)
		ea, ok := after.ByHost(h.Name)
		if !ok || ea.ID != eb.ID {
			t.Errorf("%s: id %d before, %d (%v) after the leader left", h.Name, eb.ID, ea.ID, ok)
		}
	}
	if e, ok := after.ByHost(gone); ok {
		if eb, _ := before.ByHost(gone); e.ID != eb.ID {
			t.Errorf("the id of %s, which left, changed: %d, was %d", gone, e.ID, eb.ID)
		}
	}
}

// TestIntegrationMapperQuietWhenStable: once the network is configured and
// nothing changes, every host's gm_mapper sends at most one frame per rail
// per verification interval (its scout), counted in the pcapng capture
// each gm_mapper writes (--pcap): no broadcast storms.
func TestIntegrationMapperQuietWhenStable(t *testing.T) {
	const interval = 200 * time.Millisecond
	c := netns.New(t, netns.Options{Hosts: 4, Rails: 2, HostRails: [][]int{nil, nil, nil, {0}}})
	pcaps := make([]string, len(c.Hosts))
	procs := make([]*netns.Proc, len(c.Hosts))
	for i, h := range c.Hosts {
		pcaps[i] = filepath.Join(h.Dir, "mapper.pcapng")
		p, err := h.Start(tool(t, "gm_mapper"), "--unit", unitOf(h), "--hostname", h.Name, "--state-dir", h.Dir,
			"--hosts-file", filepath.Join(h.Dir, "lib", "hosts"), "--verify-interval", interval.String(), "--pcap", pcaps[i])
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = p
		t.Cleanup(func() { p.Stop() })
	}
	waitConfigured(t, c.Hosts, len(c.Hosts), 30*time.Second)
	time.Sleep(3 * interval) // acks and route refreshes settle
	from := time.Now()
	const intervals = 15
	time.Sleep(intervals * interval)
	to := time.Now()
	for _, p := range procs {
		if err := p.Stop(); err != nil { // flushes and closes the capture
			t.Fatal(err)
		}
	}
	for i, h := range c.Hosts {
		own := map[[6]byte]bool{}
		for _, m := range h.MACs {
			own[[6]byte(m)] = true
		}
		sent, err := countSent(pcaps[i], own, from, to)
		if err != nil {
			t.Fatal(err)
		}
		// One scout per rail per interval; one interval of slack for the
		// window's edges.
		limit := len(h.Ifaces) * (intervals + 1)
		if sent > limit || sent < len(h.Ifaces)*(intervals-2) {
			t.Errorf("%s sent %d mapper frames in %d intervals on %d rails, want about %d and at most %d",
				h.Name, sent, intervals, len(h.Ifaces), len(h.Ifaces)*intervals, limit)
		}
		t.Logf("%s: %d mapper frames in %d intervals on %d rail(s)", h.Name, sent, intervals, len(h.Ifaces))
	}
}

// countSent counts the frames of a pcapng capture sent from one of the MACs
// own between from and to.
func countSent(path string, own map[[6]byte]bool, from, to time.Time) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	n := 0
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if len(data) >= 12 && own[[6]byte(data[6:12])] && !ci.Timestamp.Before(from) && ci.Timestamp.Before(to) {
			n++
		}
	}
	return n, nil
}

// TestIntegrationMapperKilledUnderLoad: every gm_mapper is killed (SIGKILL)
// while a verified transfer runs on the map they made; the ports keep
// working on the installed map and the transfer completes intact.
func TestIntegrationMapperKilledUnderLoad(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2, Rails: 2})
	procs := make([]*netns.Proc, len(c.Hosts))
	for i, h := range c.Hosts {
		procs[i] = startMapper(t, h)
	}
	waitConfigured(t, c.Hosts, 2, 30*time.Second)
	a, b := c.Hosts[0], c.Hosts[1]
	srv, done := verifiedTransfer(t, a, b)
	time.Sleep(time.Second)
	for _, p := range procs {
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-done:
		t.Fatalf("the transfer ended before the mappers were killed: %v\n%s", r.err, r.out)
	default:
	}
	r := <-done
	if r.err != nil || !strings.Contains(r.out, "result: PASS") || !strings.Contains(r.out, " 0 data errors") || !strings.Contains(r.out, " 0 failed sends") {
		t.Fatalf("the transfer after the mappers were killed failed: %v\n%s\nserver:\n%s", r.err, r.out, srv.Output())
	}
	for _, h := range c.Hosts {
		if _, err := status(h); err == nil {
			t.Errorf("%s: a gm_mapper still answers after SIGKILL", h.Name)
		}
	}
	t.Logf("transfer intact on the installed map after every gm_mapper was killed:\n%s", tail(r.out, 4))
}

// transfer is the outcome of a gm_allsize client run.
type transfer struct {
	out string
	err error
}

// verifiedTransfer starts a gm_allsize server on b (stopped when the test
// ends) and, once it serves, a verified multi-rail client run on a (64 KiB
// and 1 MiB messages, both priorities, about 4 GB in all: several seconds
// even on a quiet machine); the run's outcome arrives on the channel.
func verifiedTransfer(t *testing.T, a, b *netns.Host) (*netns.Proc, <-chan transfer) {
	t.Helper()
	allsize := tool(t, "gm_allsize")
	args := func(h *netns.Host, more ...string) []string {
		return append([]string{"--hostname", h.Name, "--state-dir", h.Dir, "--unit", unitOf(h)}, more...)
	}
	srv, err := b.Start(allsize, args(b, "--serve", "--once")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	for !strings.Contains(srv.Output(), "serving on") {
		select {
		case <-srv.Done():
			t.Fatalf("server exited: %s", srv.Output())
		case <-time.After(10 * time.Millisecond):
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	done := make(chan transfer, 1)
	go func() {
		out, err := a.CommandContext(ctx, allsize, args(a, "--remote-host", b.Name, "--verify", "--priority", "both",
			"--lengths", "64k,1M", "--iterations", "8192", "--max-bytes", "512M", "--timeout", "60s")...).CombinedOutput()
		done <- transfer{string(out), err}
	}()
	return srv, done
}

// entryOf returns b's entry in a's node map.
func entryOf(t *testing.T, a, b *netns.Host) nodemap.Entry {
	t.Helper()
	m, err := gmmap.ReadHost(a)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m.ByHost(b.Name)
	if !ok {
		t.Fatalf("%s not in %s's map", b.Name, a.Name)
	}
	return e
}

// openOn opens port 2 of unit on host h, named name; the test closes it
// at its end.
func openOn(t *testing.T, h *netns.Host, unit, name string, cfg *gm.Config) *gm.Port {
	t.Helper()
	var p *gm.Port
	if err := h.Do(func() (err error) {
		p, err = gm.Open(unit, 2, name, cfg)
		return
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
