package main

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/bench/internal/baseline"
)

func TestUDPMetrics(t *testing.T) {
	v := udpPPMetrics(baseline.PingPong{AvgRTT: 24.6, P50: 23.726, P99: 42.968, N: 100})
	if v["udp_pp.p50"] != 23.726 || v["udp_pp.p99"] != 42.968 {
		t.Errorf("ping-pong: got %v", v)
	}
	// 1e6 full datagrams in 3 s, half of them received: 2 Gbit/s of
	// 1500-byte frames.
	v = udpStreamMetrics(baseline.Throughput{Sent: 1e6, Received: 5e5, Seconds: 3})
	if math.Abs(v["udp_stream.gbps"]-2) > 1e-9 || math.Abs(v["udp_stream.loss"]-50) > 1e-9 || math.Abs(v["udp_stream.sent_gbps"]-4) > 1e-9 {
		t.Errorf("stream: got %v", v)
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
		r.set(sel[1], rep, map[string]float64{"link_poll.p50": v * 1.05, "link_poll.p99": 20})
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

func TestParseGMPingPong(t *testing.T) {
	out := "some progress line\n" +
		`{"tool":"egm-gmperf","mode":"pingpong-poll","p50_us":6.5,"p99_us":20.25,"mean_us":7.125,"p999_us":40,"min_us":5,"max_us":90,"n":50000,"retries":0,"payload_bytes":8}` + "\n"
	v, err := parseGMPingPong("gm_poll", out)
	if err != nil {
		t.Fatal(err)
	}
	if v["gm_poll.p50"] != 6.5 || v["gm_poll.p99"] != 20.25 || v["gm_poll.mean"] != 7.125 {
		t.Errorf("got %v", v)
	}
	for _, bad := range []string{"", "egm-gmperf: no reply\n", `{"tool":"egm-gmperf","n":0}` + "\n"} {
		if _, err := parseGMPingPong("gm_poll", bad); err == nil {
			t.Errorf("parseGMPingPong(%q) succeeded", bad)
		}
	}
}

func TestParseGMStream(t *testing.T) {
	send := `{"tool":"egm-gmperf","mode":"stream-send","frames":1000,"frame_bytes":0,"eth_payload_bytes":1080300,"app_payload_bytes":1048576,` +
		`"seconds":3,"gbps_eth":2.9,"gbps_app":2.8,"mpps":0,"gaps":0,"out_of_order":0,"sent":1000,"data_frames":721000,"resends":7210}` + "\n"
	recv := "ready\n" + `{"tool":"egm-gmperf","mode":"stream-recv","frames":999,"frame_bytes":0,"eth_payload_bytes":1080300,"app_payload_bytes":1048576,` +
		`"seconds":2.5,"gbps_eth":3.4535,"gbps_app":3.352,"mpps":0.0004,"gaps":0,"out_of_order":0,"sent":1000}` + "\n"
	v, err := parseGMStream("gm_stream", send, recv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"gm_stream.gbps_app": 3.352, "gm_stream.gbps": 3.4535, "gm_stream.rtx": 1}
	for k, w := range want {
		if math.Abs(v[k]-w) > 1e-9 {
			t.Errorf("%s = %v, want %v (all: %v)", k, v[k], w, v)
		}
	}
	tests := []struct{ name, send, recv string }{
		{"no sender record", "egm-gmperf: 3 sends failed\n", recv},
		{"no receiver record", send, "ready\n"},
		{"records swapped", recv, send},
		{"nothing received", send, `{"tool":"egm-gmperf","mode":"stream-recv","frames":0,"seconds":0}` + "\n"},
	}
	for _, tt := range tests {
		if _, err := parseGMStream("gm_stream", tt.send, tt.recv); err == nil {
			t.Errorf("%s: parseGMStream succeeded", tt.name)
		}
	}
}

func TestSelectGMSpecs(t *testing.T) {
	all := "gm-poll,gm-stream,gm-stream-relay,gm-stream-loss5,link-stream-mtu9000,gm-stream-mtu9000"
	sel, err := selectSpecs(all)
	if err != nil || len(sel) != 6 {
		t.Fatalf("selectSpecs(%s) = %d specs, %v", all, len(sel), err)
	}
	nets := map[string]string{}
	for _, s := range sel {
		nets[s.name] = s.net
	}
	if nets["gm-poll"] != netDirect || nets["gm-stream-mtu9000"] != netMTU9000 || nets["gm-stream-loss5"] != netRelay {
		t.Errorf("networks: %v", nets)
	}
}

// TestRatioKeys checks that every ratio refers to metrics that exist, and
// that spec and metric names are unique.
func TestRatioKeys(t *testing.T) {
	keys := map[string]bool{}
	names := map[string]bool{}
	for _, s := range specs {
		if names[s.name] {
			t.Errorf("spec %s twice", s.name)
		}
		names[s.name] = true
		for _, m := range s.metrics {
			if keys[m.key] {
				t.Errorf("metric %s twice", m.key)
			}
			if !strings.HasPrefix(m.key, s.prefix()) {
				t.Errorf("metric %s of spec %s has another prefix than %s", m.key, s.name, s.prefix())
			}
			keys[m.key] = true
		}
	}
	for _, r := range ratioSpecs {
		if !keys[r.num] || !keys[r.den] {
			t.Errorf("ratio %q: unknown metric %s or %s", r.name, r.num, r.den)
		}
	}
}

func TestReportGMGoals(t *testing.T) {
	sel, _ := selectSpecs("floor-pp,floor-stream,link-stream,udp-pp,gm-poll,gm-stream,udp-stream,gm-stream-relay,gm-stream-loss5")
	r := newResults(sel, 1)
	vals := map[string]float64{
		"floor_pp.p50": 3, "udp_pp.p50": 22, "gm_poll.p50": 4.2,
		"link_stream.gbps_app": 4, "udp_stream.gbps_app": 3.1, "gm_stream.gbps_app": 3.85,
		"gm_stream.gbps": 3.95, "floor_stream.gbps": 4.5,
		"gm_relay.gbps_app": 1, "gm_loss5.gbps_app": 0.4,
	}
	for _, s := range sel {
		r.set(s, 0, vals)
	}
	got := map[string]string{}
	for _, x := range r.report(machine{}, &config{reps: 1}).Ratios {
		got[x.Name] = x.Status
	}
	want := map[string]string{
		"gm polling RTT / floor RTT (p50)":                                "MISS", // 1.4 (goal <= 1.35)
		"gm polling RTT / UDP RTT (p50)":                                  "MISS", // 0.19
		"gm stream / UDP stream goodput (message / datagram payload)":     "MISS", // 1.24
		"gm stream / link stream goodput (message / application payload)": "PASS", // 0.9625 (goal >= 0.95)
		"gm stream / floor stream goodput (Ethernet payload)":             "PASS", // 0.878 (goal >= 0.85)
		"gm stream at 5 % loss / without loss (relay, message payload)":   "MISS", // 0.4
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s, want %s", k, got[k], w)
		}
	}
	if _, ok := got["gm stream / link stream goodput at MTU 9000 (message / application payload)"]; ok {
		t.Error("MTU 9000 ratio reported without its measurements")
	}
}

// TestMeasureRuns checks that a short measurement runs -pp-runs times and
// reports each metric's median over the runs, that a long one runs once,
// and that a failed run ends it with its error.
func TestMeasureRuns(t *testing.T) {
	var calls int
	p50 := []float64{4.4, 3.2, 3.8}
	s := &spec{name: "x", short: true, run: func(*bench, int) (map[string]float64, error) {
		v := map[string]float64{"x.p50": p50[calls%len(p50)], "x.p99": 10 * float64(calls+1)}
		calls++
		return v, nil
	}}
	v, err := s.measure(nil, 0, 3)
	if err != nil || calls != 3 {
		t.Fatalf("short measurement: %d runs, err %v; want 3, nil", calls, err)
	}
	if v["x.p50"] != 3.8 || v["x.p99"] != 20 {
		t.Errorf("medians %v, want x.p50 3.8 and x.p99 20", v)
	}

	calls = 0
	s.short = false
	if v, _ := s.measure(nil, 0, 3); calls != 1 || v["x.p50"] != 4.4 {
		t.Errorf("long measurement: %d runs, %v; want one run, its values", calls, v)
	}

	calls = 0
	s.short = true
	boom := errors.New("boom")
	s.run = func(*bench, int) (map[string]float64, error) {
		if calls++; calls == 2 {
			return nil, boom
		}
		return map[string]float64{"x.p50": 1}, nil
	}
	if _, err := s.measure(nil, 0, 3); !errors.Is(err, boom) || calls != 2 {
		t.Errorf("failing run: err %v after %d runs; want boom after 2", err, calls)
	}
}
