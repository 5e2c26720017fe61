package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethergm/ethergm/cmd/gm_allsize/report"
)

// fakeResults builds results of two repetitions per MTU.
func fakeResults() *Results {
	res := &Results{Machine: Machine{CPUs: 2, CPUModel: "Test CPU", Kernel: "6.0", GoVersion: "go1.26"}, Config: ConfigRecord{Reps: 2}}
	for _, mtu := range []int{1500, 9000} {
		r := &PathResult{MTU: mtu, UDPDatagram: mtu - 28}
		for rep := range 2 {
			f := float64(rep + 1)
			r.EtherGM = append(r.EtherGM, []report.Point{
				{Series: "EtherGM low", Priority: "low", Length: 8, HalfRTTus: 2 * f, HalfRTTp50us: 1.5, BWMBs: 1},
				{Series: "EtherGM low", Priority: "low", Length: 1024, HalfRTTus: 5, HalfRTTp50us: 4, BWMBs: 100},
				{Series: "EtherGM low", Priority: "low", Length: 65536, HalfRTTus: 100, BWMBs: 500},
				{Series: "EtherGM low", Priority: "low", Length: 1 << 20, HalfRTTus: 2000, BWMBs: 600 * f},
			})
			r.TCP = append(r.TCP, []Sample{{8, 20, 0.4}, {1024, 25, 40}, {65536, 60, 1000}, {1 << 20, 700, 1500}})
			r.UDPPingPong = append(r.UDPPingPong, []UDPPingPong{{Size: 14, HalfRTTus: 25, P50us: 12}, {Size: 1024, HalfRTTus: 26, P50us: 13}})
			r.UDPThroughput = append(r.UDPThroughput, UDPThroughput{Size: mtu - 28, MBs: 400})
		}
		res.Paths = append(res.Paths, r)
	}
	res.compute()
	return res
}

func TestCompute(t *testing.T) {
	res := fakeResults()
	r := res.Paths[0]
	if len(r.Rows) != 7 {
		t.Fatalf("%d rows", len(r.Rows))
	}
	l8 := r.Rows[0]
	if *l8.EtherGM != 3 || *l8.UDP != 25 || *l8.TCP != 20 || math.Abs(*l8.RatioUDP-0.12) > 1e-9 || math.Abs(*l8.RatioTCP-0.15) > 1e-9 {
		t.Fatalf("8 B row %+v", l8)
	}
	if m := r.Rows[2]; m.TCP != nil || m.RatioTCP != nil || *m.EtherGM != 1.5 {
		t.Fatalf("median row %+v", m)
	}
	b1 := r.Rows[5]
	if *b1.EtherGM != 900 || *b1.UDP != 400 || *b1.RatioUDP != 2.25 || *b1.RatioTCP != 0.6 {
		t.Fatalf("1 MiB row %+v", b1)
	}
	if pp := r.Rows[6]; math.Abs(*pp.EtherGM-(1<<20)/2000.0) > 1e-9 || pp.UDP != nil {
		t.Fatalf("ping-pong row %+v", pp)
	}
	// Goals: 2 latency goals per MTU, the UDP bandwidth goal at 1500 and
	// the TCP one at 9000.
	if len(res.Goals) != 6 {
		t.Fatalf("goals %+v", res.Goals)
	}
	want := map[string]bool{"8 B half round trip vs UDP (median round trips)": false, "8 B half round trip vs TCP (mean round trips)": false, "1 MiB bandwidth vs UDP": true, "1 MiB bandwidth vs TCP (NetPIPE)": false}
	for _, g := range res.Goals {
		if w, ok := want[g.Goal]; ok && g.Met != w {
			t.Errorf("goal %+v: met %v, want %v", g, g.Met, w)
		}
	}
	md := res.Markdown()
	for _, s := range []string{"| 1500 | half round trip, 8 B (µs) | 3.00 | 25.0 (14 B, sockperf's minimum) | 20.0 | 0.12x | 0.15x |",
		"| 1 MiB bandwidth vs UDP | 1500 | 2.25x | ≥ 1.3 | PASS |", "MISS (stretch)", "| — |"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
}

func TestWriteAndReadme(t *testing.T) {
	res := fakeResults()
	dir := t.TempDir()
	if err := res.write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.json", "table.md", "allsize.svg", "allsize-mtu1500.svg", "allsize-mtu9000.svg", "udp-mtu1500.csv", "tcp-mtu9000.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	var back Results
	if err := json.Unmarshal(data, &back); err != nil || len(back.Paths) != 2 || len(back.Goals) != 6 {
		t.Fatalf("results.json: %v", err)
	}
	f, _ := os.Open(filepath.Join(dir, "udp-mtu1500.csv"))
	s, err := report.ReadSeries(f)
	f.Close()
	if err != nil || len(s) != 1 || s[0].Name != "UDP (sockperf)" {
		t.Fatalf("udp baseline: %+v %v", s, err)
	}
	readme := filepath.Join(t.TempDir(), "README.md")
	os.WriteFile(readme, []byte("# x\n\n"+beginMarker+"\nold\n"+endMarker+"\ntail\n"), 0o644)
	if err := res.updateReadme(readme, dir); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(readme)
	if strings.Contains(string(got), "old") || !strings.Contains(string(got), "allsize-latest.svg") || !strings.HasSuffix(string(got), endMarker+"\ntail\n") {
		t.Fatalf("README:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(readme), "allsize-latest.svg")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(readme, []byte("no markers"), 0o644)
	if err := res.updateReadme(readme, dir); err == nil {
		t.Fatal("README without markers accepted")
	}
}

func TestParseConfig(t *testing.T) {
	c, err := parseConfig([]string{"-mtus", "1500, 9000", "-reps", "2"})
	if err != nil || len(c.mtus) != 2 || c.mtus[1] != 9000 || c.reps != 2 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, args := range [][]string{{"-mtus", "x"}, {"-mtus", "100"}, {"-reps", "0"}} {
		if _, err := parseConfig(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
