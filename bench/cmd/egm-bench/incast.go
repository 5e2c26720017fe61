package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/bench/internal/ctl"
	"github.com/ethergm/ethergm/bench/internal/result"
	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
)

// The incast network (netIncast): incastHosts hosts on one bridge; hosts
// 0..7 send, host 8 runs the TCP flow, the last host receives. The bridge
// port toward the receiver is shaped to 1 Gbit/s by tbf with 2 ms of queue
// (incastQdisc), as in gm's TestIntegrationIncast: the output queue of a
// switch port that many senders fill.
const (
	incastHosts   = 10
	incastTCPHost = 8
	// incastRate is the bottleneck's rate, bits per second: tbf's rate
	// counts whole frames (Ethernet header included), so message payload
	// can reach 1456/1514 of it at MTU 1500.
	incastRate = 1e9
	incastPort = 5201 // the TCP sink's
)

// incastQdisc is the tc qdisc of the bottleneck, set afresh (and so with
// fresh counters) before every run.
var incastQdisc = []string{"root", "tbf", "rate", "1gbit", "burst", "64kb", "latency", "2ms"}

// incastMetrics are the rows of an incast measurement of n senders; tcp
// adds the TCP flow's.
func incastMetrics(key, what string, tcp bool) []metric {
	m := []metric{
		{key + ".gbps", what + ": aggregate goodput, message payload", "Gbit/s"},
		{key + ".ratio", what + ": aggregate goodput / bottleneck (1 Gbit/s)", "x"},
		{key + ".rtx", what + ": data frames resent (of first transmissions)", "%"},
		{key + ".drops", what + ": frames the bottleneck (tbf) dropped, of those that reached it", "%"},
	}
	if !tcp {
		return append(m, metric{key + ".jain", what + ": Jain's fairness of the senders' goodputs", "x"})
	}
	return append(m,
		metric{key + ".tcp_gbps", what + ": the TCP flow's goodput", "Gbit/s"},
		metric{key + ".tcp_share", what + ": the TCP flow's goodput / its fair share (1/5 of the bottleneck)", "x"})
}

// incastSpec is the measurement name (metrics key, described by what) of
// an incast of n senders, with congestion control or without, and with a
// TCP flow beside it if tcp.
func incastSpec(name, key, what string, n int, cc, tcp bool) *spec {
	return &spec{
		name: name, net: netIncast, tools: []string{"tc"}, metrics: incastMetrics(key, what, tcp),
		run: func(b *bench, _ int) (map[string]float64, error) { return b.incast(key, n, cc, tcp) },
	}
}

var tbfStats = regexp.MustCompile(`Sent \d+ bytes (\d+) pkt \(dropped (\d+),`)

// incast runs n egm-gmperf incast senders (hosts 0..n-1, client CPU) into
// one sink (the last host, server CPU) through the shaped bridge port,
// ETHERGM_CONGESTION_CONTROL set by cc, and with tcp a TCP flow from host
// incastTCPHost to the sink's host. The sink measures streamTime after a
// warm-up; the senders send until the sink printed its record (and the TCP
// sink its own), so that every sender is busy all through the measured
// interval however late the loaded machine started it.
func (b *bench) incast(key string, n int, cc, tcp bool) (map[string]float64, error) {
	hosts := b.cl.Hosts
	if len(hosts) != incastHosts || b.cl.Switch == nil {
		return nil, errors.New("not the incast network")
	}
	sink := hosts[len(hosts)-1]
	shape := fmt.Sprintf("%s%sh%dr0", netns.Prefix, b.cl.ID, sink.Index)
	if out, err := b.cl.Switch.Run("tc", append([]string{"qdisc", "replace", "dev", shape}, incastQdisc...)...); err != nil {
		return nil, fmt.Errorf("tc qdisc replace (iproute2): %v: %s", err, out)
	}
	warm := min(time.Second, b.cfg.streamTime/3)
	limit := warm + b.cfg.streamTime + time.Minute // the senders' own deadline, should the driver die
	ccEnv := map[bool]string{true: gm.EnvCongestionControl + "=1", false: gm.EnvCongestionControl + "=0"}[cc]
	r := b.runner()
	var procs []*netns.Proc
	defer func() {
		for _, p := range procs {
			select {
			case <-p.Done():
			default: // left running by an error
				r.StopServer(p, syscall.SIGKILL)
			}
		}
	}()
	gmArgs := func(h *netns.Host, args ...string) []string {
		return append([]string{ccEnv}, b.gmEnv(h, append([]string{"-i", h.Ifaces[0], "-mode", "incast"}, args...)...)...)
	}
	dur := func(d time.Duration) string { return d.String() }
	snk, err := r.StartServer(sink, b.cfg.serverCPU, ctl.ReadyLine, "env", gmArgs(sink, "-server", "-senders", strconv.Itoa(n),
		"-buffers", strconv.Itoa(4*n+8), "-warm", dur(warm), "-d", dur(b.cfg.streamTime))...)
	if err != nil {
		return nil, err
	}
	procs = append(procs, snk)
	bin := b.bins["egm-gmperf"]
	var tsnk, tsnd *netns.Proc
	if tcp {
		addr := fmt.Sprintf("%s:%d", sink.Addrs[0], incastPort)
		if tsnk, err = r.StartServer(sink, b.cfg.serverCPU, ctl.ReadyLine, bin, "-mode", "tcp", "-server", "-tcp", addr,
			"-warm", dur(warm), "-d", dur(b.cfg.streamTime)); err != nil {
			return nil, err
		}
		procs = append(procs, tsnk)
		if tsnd, err = r.StartServer(hosts[incastTCPHost], b.cfg.clientCPU, "", bin, "-mode", "tcp", "-client", "-peer", addr, "-d", dur(limit)); err != nil {
			return nil, err
		}
		procs = append(procs, tsnd)
	}
	var snds []*netns.Proc
	for i := range n {
		p, err := r.StartServer(hosts[i], b.cfg.clientCPU, "", "env", gmArgs(hosts[i], "-client", "-peer", sink.Name, "-d", dur(limit))...)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
		snds = append(snds, p)
	}
	for _, w := range []struct {
		p    *netns.Proc
		mode string
	}{{snk, "incast-sink"}, {tsnk, "tcp-sink"}} {
		if w.p != nil {
			if err := waitRecord(w.p, w.mode, limit); err != nil {
				return nil, err
			}
		}
	}
	if tcp {
		r.StopServer(tsnd, syscall.SIGTERM)
	}
	for _, p := range snds {
		_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
	}
	v := map[string]float64{}
	var sent, resent uint64
	for i, p := range snds {
		out, err := r.WaitServer(p, time.Minute)
		if err != nil {
			return nil, fmt.Errorf("incast sender %d: %w", i, err)
		}
		var s result.IncastSend
		if err := result.Decode(out, &s); err != nil {
			return nil, fmt.Errorf("incast sender %d: %w: %s", i, err, lastLine(out))
		}
		sent += s.DataFrames
		resent += s.Resends
	}
	out, err := b.cl.Switch.Run("tc", "-s", "qdisc", "show", "dev", shape)
	m := tbfStats.FindStringSubmatch(out)
	if err != nil || m == nil {
		return nil, fmt.Errorf("tc -s qdisc show dev %s: %v: %s", shape, err, out)
	}
	pkts, _ := strconv.ParseFloat(m[1], 64)
	drops, _ := strconv.ParseFloat(m[2], 64)
	var rec result.IncastSink
	if out := r.StopServer(snk, syscall.SIGTERM); result.Decode(out, &rec) != nil || rec.Mode != "incast-sink" {
		return nil, fmt.Errorf("incast sink: no record: %s", lastLine(out))
	}
	v[key+".gbps"] = rec.GbpsApp
	v[key+".ratio"] = rec.GbpsApp * 1e9 / incastRate
	if sent > 0 {
		v[key+".rtx"] = 100 * float64(resent) / float64(sent)
	}
	if pkts+drops > 0 {
		v[key+".drops"] = 100 * drops / (pkts + drops)
	}
	if !tcp {
		v[key+".jain"] = rec.Jain
		return v, nil
	}
	var ts result.TCPSink
	if out := r.StopServer(tsnk, syscall.SIGTERM); result.Decode(out, &ts) != nil || ts.Mode != "tcp-sink" {
		return nil, fmt.Errorf("TCP sink: no record: %s", lastLine(out))
	}
	v[key+".tcp_gbps"] = ts.Gbps
	v[key+".tcp_share"] = ts.Gbps * 1e9 / (incastRate / float64(n+1))
	return v, nil
}

// waitRecord waits up to d for p to print its record of mode mode (a
// sink, at the end of its measured interval).
func waitRecord(p *netns.Proc, mode string, d time.Duration) error {
	want := `"mode":"` + mode + `"`
	deadline := time.After(d)
	for !strings.Contains(p.Output(), want) {
		select {
		case <-p.Done():
			if strings.Contains(p.Output(), want) {
				return nil
			}
			return fmt.Errorf("%s exited without its record: %v: %s", mode, p.Wait(), lastLine(p.Output()))
		case <-deadline:
			return fmt.Errorf("%s: no record after %v: %s", mode, d, lastLine(p.Output()))
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
