package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ethergm/ethergm/bench/internal/result"
)

// machine describes where the benchmark ran.
type machine struct {
	Date       string  `json:"date"`
	NProc      int     `json:"nproc"`
	Kernel     string  `json:"kernel"`
	CPU        string  `json:"cpu"`
	Go         string  `json:"go"`
	CPUIdle    string  `json:"cpuidle_driver"`
	LoadBefore string  `json:"loadavg_before"`
	LoadAfter  string  `json:"loadavg_after"`
	Seconds    float64 `json:"seconds"`
	// OtherCPU is the CPU time that processes other than the benchmark's
	// used during the run, in percent of the machine's capacity; -1 if
	// unknown. Above a few percent other work competed with the benchmark.
	OtherCPU float64 `json:"other_cpu_pct"`
	// Steal is the CPU time the hypervisor gave to other guests, in
	// percent of the machine's capacity.
	Steal float64 `json:"steal_pct"`
}

func describeMachine() machine {
	m := machine{
		Date:       time.Now().Format(time.RFC3339),
		NProc:      runtime.NumCPU(),
		Kernel:     strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		Go:         runtime.Version(),
		CPUIdle:    strings.TrimSpace(readFile("/sys/devices/system/cpu/cpuidle/current_driver")),
		LoadBefore: loadAvg(),
	}
	for line := range strings.SplitSeq(readFile("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			m.CPU = strings.TrimSpace(v)
			break
		}
	}
	return m
}

func loadAvg() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

// results collects per-repetition values of every metric.
type results struct {
	specs  []*spec
	reps   int
	values map[string][]float64 // metric key -> per-rep value (NaN: missing)
	errs   map[string][]string  // spec name -> per-rep error ("" if none)
	failed bool
}

func newResults(sel []*spec, reps int) *results {
	r := &results{specs: sel, reps: reps, values: map[string][]float64{}, errs: map[string][]string{}}
	for _, s := range sel {
		r.errs[s.name] = make([]string, reps)
		for _, m := range s.metrics {
			v := make([]float64, reps)
			for i := range v {
				v[i] = math.NaN()
			}
			r.values[m.key] = v
		}
	}
	return r
}

func (r *results) set(s *spec, rep int, v map[string]float64) {
	for _, m := range s.metrics {
		if x, ok := v[m.key]; ok {
			r.values[m.key][rep] = x
		}
	}
}

func (r *results) fail(s *spec, rep int, err error) {
	r.errs[s.name][rep] = err.Error()
	r.failed = true
}

// median is the median of a metric's valid values, NaN if none.
func (r *results) median(key string) float64 { return result.Median(r.values[key]) }

// ratioSpec is a ratio of two medians, optionally with a goal.
type ratioSpec struct {
	name     string
	num, den string
	goal     string  // "<=" or ">=", "" for information only
	bound    float64 // the goal's bound
}

var ratioSpecs = []ratioSpec{
	{"link polling RTT / UDP RTT (p50)", "link_poll.p50", "udp_pp.p50", "<=", 0.1},
	{"link polling RTT / floor RTT (p50)", "link_poll.p50", "floor_pp.p50", "<=", 1.1},
	{"link blocking RTT / UDP RTT (p50)", "link_wait.p50", "udp_pp.p50", "<=", 1.2},
	{"link stream / UDP stream goodput (Ethernet payload)", "link_stream.gbps", "udp_stream.gbps", ">=", 1.4},
	{"link stream / UDP stream goodput (application payload)", "link_stream.gbps_app", "udp_stream.gbps_app", "", 0},
	{"link polling RTT / TCP RTT", "link_poll.p50", "tcp_pp.rtt", "", 0},
	{"link blocking RTT / TCP RTT", "link_wait.p50", "tcp_pp.rtt", "", 0},
	{"link blocking RTT / floor RTT (p50)", "link_wait.p50", "floor_pp.p50", "", 0},
	{"link polling RTT / UDP RTT (p99)", "link_poll.p99", "udp_pp.p99", "", 0},
	{"floor RTT / UDP RTT (p50)", "floor_pp.p50", "udp_pp.p50", "", 0},
	{"link stream / floor stream goodput", "link_stream.gbps", "floor_stream.gbps", "", 0},
	{"floor stream / UDP stream goodput", "floor_stream.gbps", "udp_stream.gbps", "", 0},
	// Through GM ports (egm-gmperf): RTT of 8-byte messages, goodput of
	// 1 MiB messages counted as message payload, compared with the
	// application payload of the link (1456 bytes per frame, the same
	// bytes after the EtherGM header) and of UDP (1472 bytes per datagram).
	{"gm polling RTT / floor RTT (p50)", "gm_poll.p50", "floor_pp.p50", "<=", 1.35},
	{"gm polling RTT / UDP RTT (p50)", "gm_poll.p50", "udp_pp.p50", "<=", 0.1},
	{"gm stream / UDP stream goodput (message / datagram payload)", "gm_stream.gbps_app", "udp_stream.gbps_app", ">=", 1.3},
	{"gm stream / link stream goodput (message / application payload)", "gm_stream.gbps_app", "link_stream.gbps_app", ">=", 0.95},
	{"gm stream at 5 % loss / without loss (relay, message payload)", "gm_loss5.gbps_app", "gm_relay.gbps_app", ">=", 0.5},
	{"gm polling RTT with / without a cluster key (p50)", "gm_poll_key.p50", "gm_poll.p50", "<=", 1.1},
	{"gm stream goodput with / without a cluster key (message payload)", "gm_stream_key.gbps_app", "gm_stream.gbps_app", ">=", 0.9},
	{"gm stream at MTU 9000 with / without a cluster key (message payload)", "gm_stream9k_key.gbps_app", "gm_stream9k.gbps_app", "", 0},
	{"gm polling RTT / link polling RTT (p50)", "gm_poll.p50", "link_poll.p50", "<=", 1.15},
	// GM's C API (libgm, egm-cperf) against the Go API, same ping-pong.
	{"C (libgm) polling RTT / gm polling RTT (p50)", "c_poll.p50", "gm_poll.p50", "<=", 1.2},
	{"gm polling RTT / UDP RTT (p99)", "gm_poll.p99", "udp_pp.p99", "", 0},
	{"gm stream / link stream goodput (Ethernet payload)", "gm_stream.gbps", "link_stream.gbps", "", 0},
	{"gm stream / link stream goodput at MTU 9000 (message / application payload)", "gm_stream9k.gbps_app", "link_stream9k.gbps_app", ">=", 0.95},
	{"gm stream / floor stream goodput (Ethernet payload)", "gm_stream.gbps", "floor_stream.gbps", ">=", 0.85},
	{"gm stream / floor stream goodput at MTU 9000 (Ethernet payload)", "gm_stream9k.gbps", "floor_stream9k.gbps", ">=", 0.85},
	{"link stream / floor stream goodput at MTU 9000", "link_stream9k.gbps", "floor_stream9k.gbps", "", 0},
	{"gm stream at MTU 9000 / at MTU 1500 (message payload)", "gm_stream9k.gbps_app", "gm_stream.gbps_app", "", 0},
	{"gm stream through the relay / direct (message payload)", "gm_relay.gbps_app", "gm_stream.gbps_app", "", 0},
}

// report is the finished result, as printed and as written to JSON.
type report struct {
	Machine machine       `json:"machine"`
	Config  reportConfig  `json:"config"`
	Metrics []reportRow   `json:"metrics"`
	Ratios  []reportRatio `json:"ratios"`
	Errors  []string      `json:"errors,omitempty"`
}

type reportConfig struct {
	Reps          int     `json:"reps"`
	PPRuns        int     `json:"pp_runs"` // runs per repetition of the polled ring ping-pongs (floor, link, gm)
	RoundTrips    int     `json:"round_trips"`
	Warmup        int     `json:"warmup"`
	SockperfPPSec float64 `json:"sockperf_pp_seconds"`
	StreamSec     float64 `json:"stream_seconds"`
	NPtcpRepeats  int     `json:"nptcp_repeats"`
	ClientCPU     int     `json:"client_cpu"`
	ServerCPU     int     `json:"server_cpu"`
	UDPBuffer     int     `json:"udp_buffer_bytes"` // sockperf --buffer-size for UDP streaming (0: default)
	Nice          int     `json:"nice"`
}

type reportRow struct {
	Key    string     `json:"key"`
	Label  string     `json:"label"`
	Unit   string     `json:"unit"`
	Values []*float64 `json:"values"` // null: the repetition failed
	Median *float64   `json:"median"`
}

type reportRatio struct {
	Name   string   `json:"name"`
	Num    string   `json:"numerator"`
	Den    string   `json:"denominator"`
	Value  *float64 `json:"value"`
	Goal   string   `json:"goal,omitempty"` // e.g. "<= 0.1"
	Status string   `json:"status"`         // PASS, MISS, n/a, info
}

func ptr(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func (r *results) report(m machine, c *config) *report {
	rep := &report{Machine: m, Config: reportConfig{
		Reps: c.reps, PPRuns: c.ppRuns, RoundTrips: c.n, Warmup: c.warmup, SockperfPPSec: c.ppTime.Seconds(),
		StreamSec: c.streamTime.Seconds(), NPtcpRepeats: c.npRepeats, ClientCPU: c.clientCPU, ServerCPU: c.serverCPU,
		UDPBuffer: c.udpBuf, Nice: c.nice,
	}}
	for _, s := range r.specs {
		for _, mt := range s.metrics {
			row := reportRow{Key: mt.key, Label: mt.label, Unit: mt.unit, Median: ptr(r.median(mt.key))}
			for _, x := range r.values[mt.key] {
				row.Values = append(row.Values, ptr(x))
			}
			rep.Metrics = append(rep.Metrics, row)
		}
		for i, e := range r.errs[s.name] {
			if e != "" {
				rep.Errors = append(rep.Errors, fmt.Sprintf("rep %d %s: %s", i+1, s.name, e))
			}
		}
	}
	for _, rs := range ratioSpecs {
		if _, ok := r.values[rs.num]; !ok {
			continue
		}
		if _, ok := r.values[rs.den]; !ok {
			continue
		}
		v := r.median(rs.num) / r.median(rs.den)
		rr := reportRatio{Name: rs.name, Num: rs.num, Den: rs.den, Value: ptr(v), Status: "info"}
		if rs.goal != "" {
			rr.Goal = fmt.Sprintf("%s %g", rs.goal, rs.bound)
			switch {
			case rr.Value == nil:
				rr.Status = "n/a"
			case rs.goal == "<=" && v <= rs.bound, rs.goal == ">=" && v >= rs.bound:
				rr.Status = "PASS"
			default:
				rr.Status = "MISS"
			}
		}
		rep.Ratios = append(rep.Ratios, rr)
	}
	return rep
}

func fmtVal(x *float64) string {
	if x == nil {
		return "err"
	}
	switch v := *x; {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fmtRatio(x *float64) string {
	if x == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", *x)
}

// table returns the metrics and ratios as rows of cells, header first.
func (rep *report) tables() (metrics, ratios [][]string) {
	h := []string{"metric", "unit"}
	for i := range rep.Config.Reps {
		h = append(h, fmt.Sprintf("rep %d", i+1))
	}
	metrics = append(metrics, append(h, "median"))
	for _, row := range rep.Metrics {
		cells := []string{row.Label, row.Unit}
		for _, v := range row.Values {
			cells = append(cells, fmtVal(v))
		}
		metrics = append(metrics, append(cells, fmtVal(row.Median)))
	}
	ratios = append(ratios, []string{"ratio (medians)", "value", "goal", "status"})
	for _, r := range rep.Ratios {
		ratios = append(ratios, []string{r.Name, fmtRatio(r.Value), r.Goal, r.Status})
	}
	return metrics, ratios
}

func (rep *report) header() string {
	m := rep.Machine
	h := fmt.Sprintf("%s; %d CPUs (%s); kernel %s; cpuidle %q; %s; load avg %s before, %s after; %.0f s\n",
		m.Date, m.NProc, m.CPU, m.Kernel, m.CPUIdle, m.Go, m.LoadBefore, m.LoadAfter, m.Seconds)
	if m.OtherCPU >= 0 {
		h += fmt.Sprintf("Interference: other processes used %.1f%% and the hypervisor stole %.1f%% of the CPU capacity during the run.\n",
			m.OtherCPU, m.Steal)
	}
	if w := busyWarning(m.OtherCPU, m.Steal); w != "" {
		h += w + "\n"
	}
	return h
}

// busyThreshold is the share of the CPU capacity (percent) taken by other
// processes or by the hypervisor above which the report warns that the
// results are disturbed.
const busyThreshold = 3.0

// busyWarning returns a warning if other processes (others) or other guests
// (steal), in percent of the CPU capacity, took enough CPU time to disturb
// the benchmark, else "".
func busyWarning(others, steal float64) string {
	if others <= busyThreshold && steal <= busyThreshold {
		return ""
	}
	return fmt.Sprintf("WARNING: busy machine (other processes %.1f%%, steal %.1f%% of the CPU capacity): "+
		"they competed with the pinned benchmark processes, so tails and streaming results (receiver drops) "+
		"are unreliable; rerun on an idle machine.", max(others, 0), steal)
}

// text renders the report as aligned plain text.
func (rep *report) text() string {
	var sb strings.Builder
	sb.WriteString(rep.header())
	mt, rt := rep.tables()
	sb.WriteString("\n" + aligned(mt) + "\n" + aligned(rt))
	for _, e := range rep.Errors {
		sb.WriteString("error: " + e + "\n")
	}
	return sb.String()
}

func aligned(rows [][]string) string {
	var w []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(w) {
				w = append(w, 0)
			}
			w[i] = max(w[i], len(c))
		}
	}
	var sb strings.Builder
	for _, r := range rows {
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(&sb, "%-*s", w[i], c)
			} else {
				fmt.Fprintf(&sb, "  %*s", w[i], c)
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// markdown renders the report as Markdown tables.
func (rep *report) markdown() string {
	var sb strings.Builder
	sb.WriteString("# EtherGM benchmark (`make bench`)\n\n")
	sb.WriteString(rep.header() + "\n")
	c := rep.Config
	fmt.Fprintf(&sb, "Two network namespaces joined by one veth pair (MTU 1500; the mtu9000 measurements use a second pair at MTU 9000, "+
		"the relay ones a pair joined through the in-process impairment relay); client/sender pinned to CPU %d, server/receiver to CPU %d; "+
		"%d interleaved repetitions; ping-pong: 64-byte Ethernet payload (78-byte frames; UDP/TCP: 64-byte messages), %d measured + %d warm-up round trips "+
		"(polled floor, link and gm: each repetition's figure the median of %d runs; sockperf: %.0f s; NPtcp: best of its trials of %d); streaming: %.0f s of full frames (1500-byte Ethernet payload; UDP: 1472-byte datagrams), "+
		"goodput counted at the receiver; gm: 8-byte messages (ping-pong, high priority, both sides polling) and 1 MiB messages (streaming, every send token in flight), "+
		"gm goodput compared as message payload; UDP socket buffers %d bytes (sockperf --buffer-size, 0 = default); nice %d.\n\n",
		c.ClientCPU, c.ServerCPU, c.Reps, c.RoundTrips, c.Warmup, max(c.PPRuns, 1), c.SockperfPPSec, c.NPtcpRepeats, c.StreamSec, c.UDPBuffer, c.Nice)
	mt, rt := rep.tables()
	sb.WriteString(mdTable(mt) + "\n" + mdTable(rt))
	if len(rep.Errors) > 0 {
		sb.WriteString("\nErrors:\n\n")
		for _, e := range rep.Errors {
			sb.WriteString("- " + e + "\n")
		}
	}
	return sb.String()
}

func mdTable(rows [][]string) string {
	var sb strings.Builder
	for i, r := range rows {
		sb.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if i == 0 {
			seps := make([]string, len(r))
			for j := range seps {
				seps[j] = "---"
				if j > 0 {
					seps[j] = "---:"
				}
			}
			sb.WriteString("|" + strings.Join(seps, "|") + "|\n")
		}
	}
	return sb.String()
}

// write stores results.md and results.json in dir.
func (rep *report) write(dir string) error {
	if err := result.WriteJSON(filepath.Join(dir, "results.json"), rep); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(rep.markdown()), 0o644)
}
