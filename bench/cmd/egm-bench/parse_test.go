package main

import (
	"math"
	"testing"
	"time"
)

const sockperfPPOut = `sockperf: == version #3.7-no.git ==
sockperf: [Valid Duration] RunTime=2.550 sec; SentMessages=103137; ReceivedMessages=103137
sockperf: ====> avg-rtt=24.635 (std-dev=20.170)
sockperf: Summary: Round trip is 24.635 usec
sockperf: Total 103137 observations; each percentile contains 1031.37 observations
sockperf: ---> <MAX> observation = 3031.497
sockperf: ---> percentile 99.999 = 2837.104
sockperf: ---> percentile 99.000 =   42.968
sockperf: ---> percentile 90.000 =   27.076
sockperf: ---> percentile 50.000 =   23.726
sockperf: ---> <MIN> observation =   15.105
`

func TestParseSockperfPP(t *testing.T) {
	v, err := parseSockperfPP(sockperfPPOut)
	if err != nil {
		t.Fatal(err)
	}
	if v["udp_pp.p50"] != 23.726 || v["udp_pp.p99"] != 42.968 {
		t.Errorf("got %v", v)
	}
	for _, bad := range []string{"", "sockperf: Summary: Latency is 12 usec\n", "avg-rtt=1\nTotal 0 observations\n"} {
		if _, err := parseSockperfPP(bad); err == nil {
			t.Errorf("parseSockperfPP(%q) succeeded", bad)
		}
	}
}

func TestParseSockperfTP(t *testing.T) {
	client := "sockperf: Total of 1000000 messages sent in 3.000 sec\n"
	tests := []struct {
		name     string
		server   string
		wantGbps float64
		wantLoss float64
		wantErr  bool
	}{
		{"no loss", "sockperf: Total 1000000 messages received and handled\n", 4, 0, false},
		{"half lost", "sockperf: Total 500000 messages received and handled\n", 2, 50, false},
		{"more than sent is clamped", "sockperf: Total 1000010 messages received and handled\n", 4, 0, false},
		{"server without summary", "sockperf: cleanupAfterLoop() exit\n", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := parseSockperfTP(client, tt.server)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if math.Abs(v["udp_stream.gbps"]-tt.wantGbps) > 1e-9 || math.Abs(v["udp_stream.loss"]-tt.wantLoss) > 1e-9 {
				t.Errorf("got %v", v)
			}
		})
	}
}

func TestParseNPtcp(t *testing.T) {
	half, err := parseNPtcp("      64 28.584190   0.00001708\n", 64)
	if err != nil || half != 0.00001708 {
		t.Errorf("parseNPtcp = %v, %v", half, err)
	}
	if _, err := parseNPtcp("     128 28.5   0.00002\n", 64); err == nil {
		t.Error("parseNPtcp without a 64-byte line succeeded")
	}
}

func TestSelectSpecs(t *testing.T) {
	sel, err := selectSpecs("udp-pp,floor-pp")
	if err != nil || len(sel) != 2 || sel[0].name != "floor-pp" || sel[1].name != "udp-pp" {
		t.Errorf("selectSpecs = %v, %v", sel, err)
	}
	if _, err := selectSpecs("nope"); err == nil {
		t.Error("selectSpecs(nope) succeeded")
	}
	if all, _ := selectSpecs(""); len(all) != len(specs) {
		t.Error("selectSpecs(\"\") is not every spec")
	}
}

func TestReportRatios(t *testing.T) {
	sel, _ := selectSpecs("floor-pp,link-poll,udp-pp")
	r := newResults(sel, 3)
	for rep, v := range []float64{2, 3, 4} {
		r.set(sel[0], rep, map[string]float64{"floor_pp.p50": v, "floor_pp.p99": 10})
		r.set(sel[1], rep, map[string]float64{"link_poll.p50": v * 1.2, "link_poll.p99": 20})
		r.set(sel[2], rep, map[string]float64{"udp_pp.p50": 20, "udp_pp.p99": 40})
	}
	rep := r.report(machine{}, &config{reps: 3})
	got := map[string]string{}
	for _, x := range rep.Ratios {
		got[x.Name] = x.Status
	}
	if got["link polling RTT / floor RTT (p50)"] != "PASS" || got["link polling RTT / UDP RTT (p50)"] != "MISS" {
		t.Errorf("ratios: %v", got)
	}
	if _, ok := got["link blocking RTT / UDP RTT (p50)"]; ok {
		t.Error("ratio of a metric that was not measured is reported")
	}
}

func TestBusyWarning(t *testing.T) {
	tests := []struct {
		others, steal float64
		want          bool
	}{
		{0.5, 0, false},
		{-1, 0, false},
		{30, 0, true},
		{0, 10, true},
	}
	for _, tt := range tests {
		if got := busyWarning(tt.others, tt.steal) != ""; got != tt.want {
			t.Errorf("busyWarning(%v, %v) warns %v, want %v", tt.others, tt.steal, got, tt.want)
		}
	}
}

func TestInterference(t *testing.T) {
	t0 := time.Unix(0, 0)
	a := cpuSample{at: t0, busy: 100, steal: 5, ours: 10}
	b := cpuSample{at: t0.Add(10 * time.Second), busy: 118, steal: 6, ours: 26}
	others, steal := interference(a, b, 2)
	if math.Abs(others-10) > 1e-9 || math.Abs(steal-5) > 1e-9 {
		t.Errorf("interference = %v, %v; want 10, 5", others, steal)
	}
}
