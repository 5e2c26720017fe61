package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ethergm/ethergm/bench/internal/result"
	"github.com/ethergm/ethergm/cmd/gm_allsize/report"
	"golang.org/x/sys/unix"
)

// Lengths of the table rows.
const (
	len8   = 8
	len1K  = 1024
	len64K = 64 << 10
	len1M  = 1 << 20
)

// Results is everything a run measured; results.json holds it.
type Results struct {
	Machine Machine   `json:"machine"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// LoadStart and LoadEnd are the 1-minute load averages when the run
	// started and ended: other work on the machine shows in LoadStart
	// (LoadEnd includes the run's own processes).
	LoadStart float64      `json:"load_avg_start"`
	LoadEnd   float64      `json:"load_avg_end"`
	Config    ConfigRecord `json:"config"`
	// Failures lists the measurements that failed (left out of the
	// medians).
	Failures []string      `json:"failures,omitempty"`
	Paths    []*PathResult `json:"paths"`
	Goals    []Goal        `json:"goals"`
}

// ConfigRecord is the run's configuration.
type ConfigRecord struct {
	Reps       int   `json:"reps"`
	MTUs       []int `json:"mtus"`
	ClientCPU  int   `json:"client_cpu"`
	ServerCPU  int   `json:"server_cpu"`
	MinSize    int   `json:"min_size"`
	MaxSize    int   `json:"max_size"`
	Iterations int   `json:"iterations"`
}

// Sample is one NetPIPE measurement.
type Sample struct {
	Length    float64 `json:"length"`
	HalfRTTus float64 `json:"half_rtt_us"`
	BWMBs     float64 `json:"bw_mbs"`
}

// PathResult holds the measurements of one MTU, one entry per repetition.
type PathResult struct {
	MTU           int              `json:"mtu"`
	UDPDatagram   int              `json:"udp_datagram"`
	EtherGM       [][]report.Point `json:"ethergm"`
	TCP           [][]Sample       `json:"tcp_netpipe"`
	UDPPingPong   [][]UDPPingPong  `json:"udp_sockperf_pp"`
	UDPThroughput []UDPThroughput  `json:"udp_sockperf_tp"`
	Rows          []Row            `json:"table"`
}

// Row is one line of the table: medians over the repetitions. Nil means
// not measured.
type Row struct {
	Measure  string   `json:"measure"`
	Unit     string   `json:"unit"`
	EtherGM  *float64 `json:"ethergm"`
	UDP      *float64 `json:"udp"`
	UDPNote  string   `json:"udp_note,omitempty"`
	TCP      *float64 `json:"tcp"`
	RatioUDP *float64 `json:"ethergm_over_udp"`
	RatioTCP *float64 `json:"ethergm_over_tcp"`
}

// Goal is one target of the benchmark and whether the run met it.
type Goal struct {
	Goal    string   `json:"goal"`
	MTU     int      `json:"mtu"`
	Ratio   *float64 `json:"ratio"`
	Target  string   `json:"target"`
	Met     bool     `json:"met"`
	Stretch bool     `json:"stretch,omitempty"`
}

// medianOf returns a pointer to the median of the finite values of xs
// (a NaN is a repetition without the value), or nil.
func medianOf(xs []float64) *float64 {
	m := result.Median(xs)
	if math.IsNaN(m) {
		return nil
	}
	return &m
}

func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *b == 0 {
		return nil
	}
	r := *a / *b
	return &r
}

// gmAt returns per repetition the value f of gm_allsize's point at length
// l (NaN where missing).
func (r *PathResult) gmAt(l int, f func(report.Point) float64) []float64 {
	var out []float64
	for _, pts := range r.EtherGM {
		v := math.NaN()
		for _, p := range pts {
			if p.Length == l && p.Priority == "low" {
				v = f(p)
				break
			}
		}
		out = append(out, v)
	}
	return out
}

// perRep returns per repetition (reps) the value f of the sample of
// length l (NaN where there is none).
func perRep[S any](reps [][]S, l int, length func(S) int, f func(S) float64) []float64 {
	var out []float64
	for _, ss := range reps {
		v := math.NaN()
		for _, s := range ss {
			if length(s) == l {
				v = f(s)
			}
		}
		out = append(out, v)
	}
	return out
}

func (r *PathResult) tcpAt(l int, f func(Sample) float64) []float64 {
	return perRep(r.TCP, l, func(s Sample) int { return int(s.Length) }, f)
}

func (r *PathResult) udpPPAt(size int, f func(UDPPingPong) float64) []float64 {
	return perRep(r.UDPPingPong, size, func(s UDPPingPong) int { return s.Size }, f)
}

func (r *PathResult) udpTP() []float64 {
	var out []float64
	for _, t := range r.UDPThroughput {
		out = append(out, t.MBs)
	}
	return out
}

// compute fills in the table rows and the goals.
func (res *Results) compute() {
	lat := func(p report.Point) float64 { return p.HalfRTTus }
	lat50 := func(p report.Point) float64 { return p.HalfRTTp50us }
	bw := func(p report.Point) float64 { return p.BWMBs }
	ppbw := func(p report.Point) float64 { return float64(p.Length) / p.HalfRTTus }
	tLat := func(s Sample) float64 { return s.HalfRTTus }
	tBW := func(s Sample) float64 { return s.BWMBs }
	uLat := func(s UDPPingPong) float64 { return s.HalfRTTus }
	uLat50 := func(s UDPPingPong) float64 { return s.P50us }
	res.Goals = nil
	for _, r := range res.Paths {
		row := func(measure, unit string, g, u, t []float64, note string) Row {
			x := Row{Measure: measure, Unit: unit, EtherGM: medianOf(g), UDP: medianOf(u), TCP: medianOf(t), UDPNote: note}
			x.RatioUDP, x.RatioTCP = ratio(x.EtherGM, x.UDP), ratio(x.EtherGM, x.TCP)
			return x
		}
		tp := fmt.Sprintf("stream of %d B datagrams", r.UDPDatagram)
		r.Rows = []Row{
			row("half round trip, 8 B", "µs", r.gmAt(len8, lat), r.udpPPAt(14, uLat), r.tcpAt(len8, tLat), "14 B, sockperf's minimum"),
			row("half round trip, 1 KiB", "µs", r.gmAt(len1K, lat), r.udpPPAt(len1K, uLat), r.tcpAt(len1K, tLat), ""),
			row("median half round trip, 8 B", "µs", r.gmAt(len8, lat50), r.udpPPAt(14, uLat50), nil, "14 B"),
			row("median half round trip, 1 KiB", "µs", r.gmAt(len1K, lat50), r.udpPPAt(len1K, uLat50), nil, ""),
			row("bandwidth, 64 KiB", "MB/s", r.gmAt(len64K, bw), r.udpTP(), r.tcpAt(len64K, tBW), tp),
			row("bandwidth, 1 MiB", "MB/s", r.gmAt(len1M, bw), r.udpTP(), r.tcpAt(len1M, tBW), tp),
			row("ping-pong bandwidth, 1 MiB", "MB/s", r.gmAt(len1M, ppbw), nil, r.tcpAt(len1M, tBW), ""),
		}
		at := func(m string) Row {
			for _, x := range r.Rows {
				if x.Measure == m {
					return x
				}
			}
			return Row{}
		}
		le := func(x *float64, v float64) bool { return x != nil && *x <= v }
		ge := func(x *float64, v float64) bool { return x != nil && *x >= v }
		// UDP: medians of the round trips (sockperf's mean is dominated by
		// rare scheduler stalls); TCP: means (NetPIPE gives no median).
		l8, l8m := at("half round trip, 8 B"), at("median half round trip, 8 B")
		res.Goals = append(res.Goals,
			Goal{Goal: "8 B half round trip vs UDP (median round trips)", MTU: r.MTU, Ratio: l8m.RatioUDP, Target: "≤ 0.1", Met: le(l8m.RatioUDP, 0.1)},
			Goal{Goal: "8 B half round trip vs TCP (mean round trips)", MTU: r.MTU, Ratio: l8.RatioTCP, Target: "≤ 0.1", Met: le(l8.RatioTCP, 0.1)})
		b1 := at("bandwidth, 1 MiB")
		switch r.MTU {
		case 1500:
			res.Goals = append(res.Goals, Goal{Goal: "1 MiB bandwidth vs UDP", MTU: r.MTU, Ratio: b1.RatioUDP, Target: "≥ 1.3", Met: ge(b1.RatioUDP, 1.3)})
		case 9000:
			res.Goals = append(res.Goals, Goal{Goal: "1 MiB bandwidth vs TCP (NetPIPE)", MTU: r.MTU, Ratio: b1.RatioTCP, Target: "≥ 1.0", Met: ge(b1.RatioTCP, 1.0), Stretch: true})
		}
	}
}

func fmtVal(x *float64) string {
	switch {
	case x == nil:
		return "—"
	case *x >= 100:
		return fmt.Sprintf("%.0f", *x)
	case *x >= 10:
		return fmt.Sprintf("%.1f", *x)
	}
	return fmt.Sprintf("%.2f", *x)
}

func fmtRatio(x *float64) string {
	if x == nil {
		return "—"
	}
	return fmt.Sprintf("%.2fx", *x)
}

// Markdown returns the table and the goals.
func (res *Results) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| MTU | measure | EtherGM (gm_allsize) | UDP (sockperf) | TCP (NetPIPE) | EtherGM/UDP | EtherGM/TCP |\n")
	fmt.Fprintf(&b, "|---:|---|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Paths {
		for _, x := range r.Rows {
			udp := fmtVal(x.UDP)
			if x.UDPNote != "" && x.UDP != nil {
				udp += " (" + x.UDPNote + ")"
			}
			fmt.Fprintf(&b, "| %d | %s (%s) | %s | %s | %s | %s | %s |\n", r.MTU, x.Measure, x.Unit,
				fmtVal(x.EtherGM), udp, fmtVal(x.TCP), fmtRatio(x.RatioUDP), fmtRatio(x.RatioTCP))
		}
	}
	fmt.Fprintf(&b, "\n| goal | MTU | EtherGM/baseline | target | result |\n|---|---:|---:|---:|---|\n")
	for _, g := range res.Goals {
		result := "MISS"
		if g.Met {
			result = "PASS"
		}
		if g.Stretch {
			result += " (stretch)"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", g.Goal, g.MTU, fmtRatio(g.Ratio), g.Target, result)
	}
	return b.String()
}

// series returns the plot series of the results: EtherGM per MTU, and the
// UDP and TCP baselines per MTU. With one MTU the names carry no MTU.
func (res *Results) series(only int) (gmS, base []report.Series) {
	for _, r := range res.Paths {
		if only != 0 && r.MTU != only {
			continue
		}
		suffix := fmt.Sprintf(", MTU %d", r.MTU)
		if only != 0 {
			suffix = ""
		}
		g := report.Series{Name: "EtherGM (gm_allsize)" + suffix}
		for _, pts := range r.EtherGM {
			for _, p := range pts {
				g.Samples = append(g.Samples, report.Sample{Length: float64(p.Length), HalfRTTus: p.HalfRTTus, BWMBs: p.BWMBs})
			}
		}
		t := report.Series{Name: "TCP (NetPIPE)" + suffix}
		for _, ss := range r.TCP {
			for _, s := range ss {
				t.Samples = append(t.Samples, report.Sample(s))
			}
		}
		u := report.Series{Name: "UDP (sockperf)" + suffix}
		for _, ss := range r.UDPPingPong {
			for _, s := range ss {
				u.Samples = append(u.Samples, report.Sample{Length: float64(s.Size), HalfRTTus: s.HalfRTTus, BWMBs: math.NaN()})
			}
		}
		for _, tp := range r.UDPThroughput {
			u.Samples = append(u.Samples, report.Sample{Length: float64(tp.Size), HalfRTTus: math.NaN(), BWMBs: tp.MBs})
		}
		gmS = append(gmS, g)
		base = append(base, u, t)
	}
	return gmS, base
}

// write writes results.json, table.md, the plots and the baseline CSVs
// into dir.
func (res *Results) write(dir string) error {
	if err := result.WriteJSON(filepath.Join(dir, "results.json"), res); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "table.md"), []byte(res.Snippet("allsize.svg")), 0o644); err != nil {
		return err
	}
	title := "EtherGM (gm_allsize) vs UDP (sockperf) and TCP (NetPIPE), two netns hosts on one veth pair"
	sub := res.Machine.Short()
	gmS, base := res.series(0)
	if err := writeSVG(filepath.Join(dir, "allsize.svg"), title, sub, gmS, base); err != nil {
		return err
	}
	for _, r := range res.Paths {
		gmS, base := res.series(r.MTU)
		if err := writeSVG(filepath.Join(dir, fmt.Sprintf("allsize-mtu%d.svg", r.MTU)), fmt.Sprintf("%s, MTU %d", title, r.MTU), sub, gmS, base); err != nil {
			return err
		}
		for i, name := range []string{"udp", "tcp"} {
			var buf bytes.Buffer
			if err := report.WriteSeries(&buf, base[i:i+1]); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-mtu%d.csv", name, r.MTU)), buf.Bytes(), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeSVG(path, title, sub string, series, base []report.Series) error {
	var buf bytes.Buffer
	if err := report.WriteSVG(&buf, title, sub, series, base); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Snippet returns the README-ready text: the machine paragraph, the table
// and the plot (image path plot).
func (res *Results) Snippet(plot string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Latest run: %s, %s. %d interleaved repetitions per MTU (medians), clients pinned to CPU %d and servers to CPU %d; run time %.0f s; load average %.1f at the start and %.1f at the end",
		res.Started.Format("2006-01-02 15:04 MST"), res.Machine.Paragraph(), res.Config.Reps, res.Config.ClientCPU, res.Config.ServerCPU, res.Seconds, res.LoadStart, res.LoadEnd)
	if res.LoadStart >= 1 { // the end value includes the run itself

		b.WriteString(" (the machine was running other work: figures are noisier than on an idle one)")
	}
	b.WriteString(".\n\n")
	b.WriteString(res.Markdown())
	for _, f := range res.Failures {
		fmt.Fprintf(&b, "\nFailed, left out: %s\n", f)
	}
	fmt.Fprintf(&b, "\n![latency and bandwidth against message length](%s)\n", plot)
	return b.String()
}

// Markers of the README section that -readme replaces.
const (
	beginMarker = "<!-- allsize-results:begin -->"
	endMarker   = "<!-- allsize-results:end -->"
)

// updateReadme replaces the results section of the README at path and
// copies the plot next to it.
func (res *Results) updateReadme(path, dir string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(data)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %s ... %s section", path, beginMarker, endMarker)
	}
	s = s[:i+len(beginMarker)] + "\n" + res.Snippet("allsize-latest.svg") + s[j:]
	svg, err := os.ReadFile(filepath.Join(dir, "allsize.svg"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "allsize-latest.svg"), svg, 0o644); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// loadAvg returns the 1-minute load average, or 0 if unknown.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscanf(string(data), "%f", &l)
	return l
}

// Machine describes the computer a run came from.
type Machine struct {
	CPUs      int     `json:"cpus"`
	CPUModel  string  `json:"cpu_model"`
	MemoryGiB float64 `json:"memory_gib"`
	Kernel    string  `json:"kernel"`
	Virt      string  `json:"virtualization,omitempty"`
	GoVersion string  `json:"go"`
	Sockperf  string  `json:"sockperf,omitempty"`
}

func describeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" && m.CPUModel == "" {
				m.CPUModel = strings.TrimSpace(v)
			}
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" && strings.Contains(v, " hypervisor") && m.Virt == "" {
				m.Virt = "virtual machine"
			}
		}
	}
	if out, err := exec.Command("systemd-detect-virt").Output(); err == nil {
		if v := strings.TrimSpace(string(out)); v != "" && v != "none" {
			m.Virt = strings.TrimPrefix(m.Virt+", "+v, ", ")
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %f kB", &kb); err == nil {
			m.MemoryGiB = math.Round(kb/(1<<20)*10) / 10
		}
	}
	if out, err := exec.Command("sockperf", "--version").CombinedOutput(); err == nil {
		for line := range strings.SplitSeq(string(out), "\n") {
			if strings.Contains(line, "version") {
				m.Sockperf = strings.TrimSpace(strings.TrimPrefix(line, "sockperf:"))
				break
			}
		}
	}
	return m
}

// Paragraph describes the machine in a sentence fragment.
func (m Machine) Paragraph() string {
	s := fmt.Sprintf("%d CPUs (%s), %.1f GiB, Linux %s", m.CPUs, m.CPUModel, m.MemoryGiB, m.Kernel)
	if m.Virt != "" {
		s += ", " + m.Virt
	}
	return s + ", " + m.GoVersion
}

// Short is the plot subtitle.
func (m Machine) Short() string {
	return fmt.Sprintf("%d × %s, Linux %s, %s", m.CPUs, m.CPUModel, m.Kernel, time.Now().Format("2006-01-02"))
}
