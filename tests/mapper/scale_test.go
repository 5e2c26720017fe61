//go:build linux

package mapper

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/mapper"
	"github.com/ethergm/ethergm/mapper/driver"
)

// EnvScaleHosts sets the number of hosts of TestIntegrationMapperScale
// (`make scale-netns N=...`); make test runs defaultScaleHosts.
const EnvScaleHosts = "ETHERGM_SCALE_HOSTS"

// defaultScaleHosts is what the CI machine (2 cores, shared with the other
// tests) holds with room to spare.
const defaultScaleHosts = 24

// TestIntegrationMapperScale starts N single-rail hosts, one gm_mapper each,
// as fast as it can start the processes, and measures what a cluster
// operator sees: the time from the last start until every host has logged
// "network fully configured" with all N hosts for the last time, the map
// versions made, and, once nothing changes, the mapper frames each host sends
// and receives (its gm_mapper's counters) over a window of the mapper in
// charge's scout rounds: at most 2 per follower per rail per round each way
// (a follower sends its SCOUT to the mapper in charge and hears the mapper's),
// about N for the mapper in charge, and no new map version.
func TestIntegrationMapperScale(t *testing.T) {
	n := defaultScaleHosts
	if s := os.Getenv(EnvScaleHosts); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 2 || v > netns.MaxHosts {
			t.Fatalf("%s=%q: want a number of hosts, 2..%d", EnvScaleHosts, s, netns.MaxHosts)
		}
		n = v
	}
	built := time.Now()
	c := netns.New(t, netns.Options{Hosts: n})
	t.Logf("%d hosts built in %v", n, time.Since(built).Round(time.Millisecond))
	bin := tool(t, "gm_mapper") // built before the clock starts
	procs := make([]*netns.Proc, n)
	first := time.Now()
	for i, h := range c.Hosts {
		p, err := h.Start(bin, "--unit", unitOf(h), "--hostname", h.Name, "--state-dir", h.Dir,
			"--hosts-file", filepath.Join(h.Dir, "lib", "hosts"), "--log-format", "json")
		if err != nil {
			t.Fatal(err)
		}
		procs[i] = p
		t.Cleanup(func() {
			p.Stop()
			if t.Failed() && i < 4 {
				t.Logf("%s gm_mapper log:\n%s", h.Name, tail(p.Output(), 30))
			}
		})
	}
	last := time.Now()
	// Generous: the time that matters is read from the logs below.
	waitConfigured(t, c.Hosts, n, time.Duration(n)*time.Second+30*time.Second)
	time.Sleep(4 * mapper.DefaultVerifyInterval) // acks and route refreshes settle

	// The steady state, counted over the mapper in charge's scout rounds.
	before := statusAll(t, c.Hosts)
	time.Sleep(20 * mapper.DefaultVerifyInterval)
	after := statusAll(t, c.Hosts)
	leader := -1
	for i := range after {
		if after[i].Leader {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no mapper in charge")
	}
	rounds := int(after[leader].Counters.FramesOut["SCOUT"] - before[leader].Counters.FramesOut["SCOUT"])
	if rounds < 5 {
		t.Fatalf("the mapper in charge made %d scout rounds in 20 intervals", rounds)
	}
	window := after[leader].now.Sub(before[leader].now)
	var maxOut, maxIn uint64
	for i := range after {
		out, in := total(after[i].Counters.FramesOut)-total(before[i].Counters.FramesOut),
			total(after[i].Counters.FramesIn)-total(before[i].Counters.FramesIn)
		if after[i].MapVersion != before[i].MapVersion || after[i].Counters.Remaps != before[i].Counters.Remaps {
			t.Errorf("%s: map version %d -> %d in the steady state (nothing changed)", c.Hosts[i].Name, before[i].MapVersion, after[i].MapVersion)
		}
		if i == leader {
			t.Logf("mapper in charge %s: %d rounds in %v, %d frames sent, %d received (%.1f/s)",
				c.Hosts[i].Name, rounds, window.Round(time.Millisecond), out, in, float64(in)/window.Seconds())
			if in < uint64((n-1)*(rounds-2)) {
				t.Errorf("the mapper in charge heard %d frames in %d rounds from %d hosts", in, rounds, n-1)
			}
			continue
		}
		// Each host's window has the length of the mapper's, give or
		// take the status queries: two rounds of slack.
		if limit := uint64(2 * (rounds + 2)); out > limit || in > limit {
			t.Errorf("%s sent %d and received %d mapper frames in %d rounds of the mapper in charge, want at most %d each",
				c.Hosts[i].Name, out, in, rounds, limit)
		}
		maxOut, maxIn = max(maxOut, out), max(maxIn, in)
	}
	t.Logf("followers: at most %d frames sent and %d received in %d rounds (%.1f and %.1f per second)",
		maxOut, maxIn, rounds, float64(maxOut)/window.Seconds(), float64(maxIn)/window.Seconds())

	// What the logs say: when each host was fully configured with all the
	// hosts for the last time, and the versions made.
	// The start of a process is when its gm_mapper logs it: on a loaded
	// machine `ip netns exec` takes a while to run it.
	var configured, started time.Time
	var versions, drops, leaderDrops, lossWindows, stalls uint64
	dropping := 0
	for i, h := range c.Hosts {
		versions += after[i].Counters.Remaps
		lossWindows += after[i].Counters.LossWindows
		stalls += after[i].Counters.Stalls
		var d uint64
		for _, in := range after[i].Interfaces {
			d += in.Link.KernelDrops
		}
		drops += d
		if d > 0 {
			dropping++
		}
		if i == leader {
			leaderDrops = d
		}
		st, at, err := lastConfigured(procs[i].Output(), n)
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		if at.After(configured) {
			configured = at
		}
		if st.After(started) {
			started = st
		}
	}
	if os.Getenv("ETHERGM_SCALE_LOGS") != "" {
		for i, h := range c.Hosts {
			t.Logf("%s:\n%s", h.Name, procs[i].Output())
		}
	}
	t.Logf("scale: %d hosts started in %v (the last gm_mapper ran %v after the first start); fully configured everywhere %v after the last gm_mapper started (%v after the first start); %d map versions, %d CONFIG retries by the mapper in charge, %d mapper frames dropped by the kernel (full rings) on %d hosts, %d of them by the mapper in charge; %d loss windows, %d stalls",
		n, last.Sub(first).Round(time.Millisecond), started.Sub(first).Round(time.Millisecond),
		configured.Sub(started).Round(time.Millisecond), configured.Sub(first).Round(time.Millisecond), versions,
		after[leader].Counters.ConfigRetries, drops, dropping, leaderDrops, lossWindows, stalls)
	// At most one version per interval, and a few mappers in charge one
	// after the other while hosts of higher addresses start.
	if most := uint64(configured.Sub(first)/mapper.DefaultVerifyInterval) + 10; versions > most {
		t.Errorf("%d map versions made in %v (at most %d)", versions, configured.Sub(first), most)
	}
}

// hostStatus is a host's status and when it was read.
type hostStatus struct {
	driver.Status
	now time.Time
}

func statusAll(t *testing.T, hosts []*netns.Host) []hostStatus {
	t.Helper()
	out := make([]hostStatus, len(hosts))
	for i, h := range hosts {
		// A query may fail on a machine so loaded that the gm_mapper does
		// not answer in time: ask again.
		st, err := status(h)
		for try := 0; err != nil && try < 5; try++ {
			time.Sleep(100 * time.Millisecond)
			st, err = status(h)
		}
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		out[i] = hostStatus{st, time.Now()}
	}
	return out
}

func total(c map[string]uint64) uint64 {
	var n uint64
	for _, v := range c {
		n += v
	}
	return n
}

// lastConfigured returns the time a gm_mapper's JSON log says it started,
// and that of its last "network fully configured" line with hosts hosts,
// after which the log never says "network NOT fully configured".
func lastConfigured(log string, hosts int) (start, at time.Time, err error) {
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Time  time.Time `json:"time"`
			Msg   string    `json:"msg"`
			Hosts int       `json:"hosts"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch l.Msg {
		case "gm_mapper starting":
			start = l.Time
		case "network fully configured":
			if l.Hosts == hosts {
				at = l.Time
			} else {
				at = time.Time{}
			}
		case "network NOT fully configured":
			at = time.Time{}
		}
	}
	if at.IsZero() || start.IsZero() {
		return start, at, fmt.Errorf("never logged its start and \"network fully configured\" with %d hosts for good:\n%s", hosts, tail(log, 20))
	}
	return start, at, nil
}
