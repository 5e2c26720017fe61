package gm_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/tests/netns"
	"github.com/ethergm/ethergm/tests/netns/relay"
)

func BenchmarkZZTune(b *testing.B) {
	c := netns.New(b, netns.Options{Hosts: 2, Direct: true, MTU: envInt("ZZ_MTU", 1500)})
	m := writeMap(b, c)
	ca, cb := testConfig(c.Hosts[0], m), testConfig(c.Hosts[1], m)
	for _, x := range []*gm.Config{ca, cb} {
		x.ProgressTimeout, x.LivenessTimeout = time.Minute, time.Minute
		x.Window = envInt("ZZ_WINDOW", 1024)
		x.UseQdisc = os.Getenv("ZZ_BYPASS") == "0"
	}
	pa, pb := openPort(b, c.Hosts[0], 2, ca), openPort(b, c.Hosts[1], 2, cb)
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	stream(b, pa, pb, 1<<20)
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/MiB")
	if os.Getenv("ZZ_LOG") != "" {
		b.Logf("A link %+v\nB link %+v\nA %+v\nB %+v", pa.LinkStats(), pb.LinkStats(), pa.Stats(), pb.Stats())
	}
}

func envInt(k string, d int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return d
}

// BenchmarkZZLinkFloor runs /tmp/bin/egm-linkperf (or egm-floor with
// ZZ_TOOL=egm-floor) stream in a fresh direct pair with ZZ_MTU.
func BenchmarkZZLinkFloor(b *testing.B) {
	c := netns.New(b, netns.Options{Hosts: 2, Direct: true, MTU: envInt("ZZ_MTU", 1500)})
	tool := os.Getenv("ZZ_TOOL")
	if tool == "" {
		tool = "egm-linkperf"
	}
	args := func(extra ...string) []string {
		a := []string{"-i", c.Hosts[0].Ifaces[0]}
		if tool == "egm-linkperf" {
			a = append(a, "-mode", "stream")
		} else {
			a = append(a, "-stream")
		}
		return append(a, extra...)
	}
	rcmd := c.Hosts[1].Command("taskset", append([]string{"-c", "1", "/tmp/bin/" + tool}, append(args("-server"), strings.Fields(os.Getenv("ZZ_RARGS"))...)...)...)
	var rout strings.Builder
	rcmd.Stdout = &rout
	rcmd.Stderr = &rout
	if err := rcmd.Start(); err != nil {
		b.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	sout, err := c.Hosts[0].Command("taskset", append([]string{"-c", "0", "/tmp/bin/" + tool}, append(args("-client", "-peer", c.Hosts[1].MACs[0].String(), "-d", "3s"), strings.Fields(os.Getenv("ZZ_SARGS"))...)...)...).CombinedOutput()
	if err != nil {
		b.Fatalf("%v: %s", err, sout)
	}
	rcmd.Wait()
	out := rout.String()
	i := strings.LastIndex(out, `"gbps_app":`)
	if i < 0 {
		b.Fatalf("no result: %s", out)
	}
	var g float64
	fmt.Sscanf(out[i+len(`"gbps_app":`):], "%g", &g)
	b.ReportMetric(g*1e9/8/1e6, "MB/s-app")
}

func BenchmarkZZLoss(b *testing.B) {
	imp := relay.Impairment{Drop: 0.05}
	if os.Getenv("ZZ_NOLOSS") == "1" {
		imp = relay.Impairment{}
	}
	c := netns.NewImpairedPair(b, relay.Config{Seed: 1, AtoB: imp, BtoA: imp, EtherType: 0x88B5})
	m := writeMap(b, c)
	ca, cb := testConfig(c.Hosts[0], m), testConfig(c.Hosts[1], m)
	for _, x := range []*gm.Config{ca, cb} {
		x.ProgressTimeout, x.LivenessTimeout = time.Minute, time.Minute
		x.Window = envInt("ZZ_WINDOW", 1024)
		x.UseQdisc = os.Getenv("ZZ_QDISC") == "1"
	}
	pa, pb := openPort(b, c.Hosts[0], 2, ca), openPort(b, c.Hosts[1], 2, cb)
	stream(b, pa, pb, 1<<20)
	if b.N > 1 {
		b.Logf("A %+v\nB %+v", pa.Stats(), pb.Stats())
	}
}
