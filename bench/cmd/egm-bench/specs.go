package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/bench/internal/baseline"
	"github.com/ethergm/ethergm/bench/internal/ctl"
	"github.com/ethergm/ethergm/bench/internal/result"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/relay"
)

// Frame and message sizes of the experiments.
const (
	pingPayload  = 64   // Ethernet payload (floor, link) or UDP/TCP message, bytes
	udpDatagram  = 1472 // UDP payload of a full 1500-byte IP packet
	fullEthFrame = 1500 // Ethernet payload of a full frame at MTU 1500
)

// metric is one row of the results table.
type metric struct {
	key   string
	label string
	unit  string
}

// spec is one measurement, run once per repetition.
type spec struct {
	name    string
	net     string // the network it runs on: netDirect, netMTU9000, netRelay
	metrics []metric
	run     func(b *bench, rep int) (map[string]float64, error)
	// short marks a measurement of well under a second (the polled ring
	// ping-pongs), run -pp-runs times per repetition (measure).
	short bool
	// tools are the programs from PATH it runs besides ours (checkTools).
	tools []string
}

// measure runs the measurement once, or runs times if it is short, and
// returns each metric's median over the runs. Short runs are repeated
// because their medians differ from one run to the next by far more than
// within a run (each run starts new processes on new rings: the gm
// round trip's p50 ranged over 3.2-4.4 us between five runs in a row),
// and they cost less than a second each. The first failed run ends it.
func (s *spec) measure(b *bench, rep, runs int) (map[string]float64, error) {
	if !s.short || runs <= 1 {
		return s.run(b, rep)
	}
	all := make([]map[string]float64, 0, runs)
	for range runs {
		v, err := s.run(b, rep)
		if err != nil {
			return nil, err
		}
		all = append(all, v)
	}
	return medianRuns(all), nil
}

// medianRuns returns, for every key of the first run, the median of its
// values over the runs that have it.
func medianRuns(runs []map[string]float64) map[string]float64 {
	out := map[string]float64{}
	if len(runs) == 0 {
		return out
	}
	for k := range runs[0] {
		var v []float64
		for _, r := range runs {
			if x, ok := r[k]; ok {
				v = append(v, x)
			}
		}
		out[k] = result.Median(v)
	}
	return out
}

// netLabel describes a network for the progress header.
func netLabel(name string) string {
	switch name {
	case netMTU9000:
		return " (direct, MTU 9000)"
	case netRelay:
		return " (relay, MTU 1500)"
	case netIncast:
		return " (incast: 10 hosts on a bridge, MTU 1500)"
	}
	return " (direct, MTU 1500)"
}

// brief is the one-line progress summary of a measurement's values.
func (s *spec) brief(v map[string]float64) string {
	var parts []string
	for _, m := range s.metrics {
		if x, ok := v[m.key]; ok {
			parts = append(parts, fmt.Sprintf("%s=%.3g", strings.TrimPrefix(m.key, s.prefix()), x))
		}
	}
	return strings.Join(parts, " ")
}

func (s *spec) prefix() string { return strings.SplitN(s.metrics[0].key, ".", 2)[0] + "." }

// specs lists the measurements in the order of one repetition.
var specs = []*spec{
	{
		name:    "floor-pp",
		short:   true,
		metrics: rttMetrics("floor_pp", "floor ping-pong", "", false),
		run: func(b *bench, rep int) (map[string]float64, error) {
			return b.goPingPong("floor_pp", "egm-floor", nil)
		},
	},
	{
		name:    "link-poll",
		short:   true,
		metrics: rttMetrics("link_poll", "link ping-pong", ", polling", false),
		run: func(b *bench, rep int) (map[string]float64, error) {
			return b.goPingPong("link_poll", "egm-linkperf", []string{"-mode", "pingpong", "-wait=false"})
		},
	},
	{
		name:    "link-wait",
		metrics: rttMetrics("link_wait", "link ping-pong", ", blocking", false),
		run: func(b *bench, rep int) (map[string]float64, error) {
			return b.goPingPong("link_wait", "egm-linkperf", []string{"-mode", "pingpong", "-wait=true", "-spin", "-1ns"})
		},
	},
	{
		name:    "gm-poll",
		short:   true,
		metrics: rttMetrics("gm_poll", "gm ping-pong", ", polling (8-byte message)", true),
		run:     gmRun((*bench).gmPingPong, "gm_poll"),
	},
	{
		// The same ping-pong through libgm, GM's C API (egm-cperf).
		name:    "c-poll",
		short:   true,
		metrics: rttMetrics("c_poll", "C (libgm) ping-pong", ", polling (8-byte message)", true),
		run: func(b *bench, rep int) (map[string]float64, error) {
			return b.cPingPong("c_poll")
		},
	},
	{
		// The cost of one call from C into libgm (the Go runtime's
		// cgo callback), on an idle port of host0.
		name: "c-calls",
		metrics: []metric{
			{"c_calls.receive_ns", "C (libgm) gm_receive on an idle port, per call", "ns"},
			{"c_calls.ticks_ns", "C (libgm) gm_ticks, per call", "ns"},
		},
		run: func(b *bench, rep int) (map[string]float64, error) {
			return b.cCalls()
		},
	},
	{
		name:    "gm-poll-key",
		short:   true,
		metrics: rttMetrics("gm_poll_key", "gm ping-pong", ", polling, cluster key", true),
		run:     withKey((*bench).gmPingPong, "gm_poll_key"),
	},
	{
		name:    "udp-pp",
		tools:   []string{"sockperf"},
		metrics: rttMetrics("udp_pp", "UDP ping-pong", " (sockperf)", false),
		run:     (*bench).udpPingPong,
	},
	{
		name:  "tcp-pp",
		tools: []string{"NPtcp"},
		metrics: []metric{
			{"tcp_pp.rtt", "TCP ping-pong RTT (NPtcp, 2 x half-RTT)", "us"},
		},
		run: (*bench).tcpPingPong,
	},
	{
		name:    "link-stream",
		metrics: streamMetrics("link_stream", "link stream", "", true),
		run:     linkStream("link_stream"),
	},
	{
		name:    "gm-stream",
		metrics: gmStreamMetrics("gm_stream", "gm stream"),
		run:     gmRun((*bench).gmStream, "gm_stream"),
	},
	{
		name:    "gm-stream-key",
		metrics: gmStreamMetrics("gm_stream_key", "gm stream with a cluster key"),
		run:     withKey((*bench).gmStream, "gm_stream_key"),
	},
	{
		name:  "udp-stream",
		tools: []string{"sockperf"},
		run:   (*bench).udpStream,
		metrics: []metric{
			{"udp_stream.gbps", "UDP stream goodput received, Ethernet payload (sockperf tp)", "Gbit/s"},
			{"udp_stream.gbps_app", "UDP stream goodput received, datagram payload", "Gbit/s"},
			{"udp_stream.loss", "UDP stream datagrams lost at the receiver", "%"},
			{"udp_stream.sent_gbps", "UDP stream rate sent (sockperf tp report), Ethernet payload", "Gbit/s"},
		},
	},
	{
		name:    "floor-stream",
		metrics: streamMetrics("floor_stream", "floor stream", "", false),
		run:     floorStream("floor_stream"),
	},
	{
		name:    "floor-stream-mtu9000",
		net:     netMTU9000,
		metrics: streamMetrics("floor_stream9k", "floor stream", " at MTU 9000", false),
		run:     floorStream("floor_stream9k", "-size", "9000"),
	},
	{
		name:    "link-stream-mtu9000",
		net:     netMTU9000,
		metrics: streamMetrics("link_stream9k", "link stream", " at MTU 9000", true),
		run:     linkStream("link_stream9k"),
	},
	{
		name:    "gm-stream-mtu9000",
		net:     netMTU9000,
		metrics: gmStreamMetrics("gm_stream9k", "gm stream at MTU 9000"),
		run:     gmRun((*bench).gmStream, "gm_stream9k"),
	},
	{
		name:    "gm-stream-mtu9000-key",
		net:     netMTU9000,
		metrics: gmStreamMetrics("gm_stream9k_key", "gm stream at MTU 9000 with a cluster key"),
		run:     withKey((*bench).gmStream, "gm_stream9k_key"),
	},
	{
		name:    "gm-stream-relay",
		net:     netRelay,
		metrics: gmStreamMetrics("gm_relay", "gm stream through the relay, no loss"),
		run: func(b *bench, rep int) (map[string]float64, error) {
			return b.relayStream("gm_relay", 0)
		},
	},
	{
		name: "gm-stream-loss5",
		net:  netRelay,
		metrics: append(gmStreamMetrics("gm_loss5", "gm stream through the relay, 5 % loss"),
			metric{"gm_loss5.dropped", "gm stream through the relay, 5 % loss: data-direction frames the relay dropped", "%"}),
		run: func(b *bench, rep int) (map[string]float64, error) {
			return b.relayStream("gm_loss5", 0.05)
		},
	},
	// Incast (incast.go): n senders, each its own process, into
	// one port through a 1 Gbit/s bottleneck, with congestion control and
	// without; and a TCP flow beside a 4-sender incast.
	incastSpec("gm-incast4", "gm_incast4", "gm incast 4 -> 1", 4, true, false),
	incastSpec("gm-incast4-nocc", "gm_incast4_nocc", "gm incast 4 -> 1 without congestion control", 4, false, false),
	incastSpec("gm-incast8", "gm_incast8", "gm incast 8 -> 1", 8, true, false),
	incastSpec("gm-incast8-nocc", "gm_incast8_nocc", "gm incast 8 -> 1 without congestion control", 8, false, false),
	incastSpec("gm-incast4-tcp", "gm_incast4_tcp", "gm incast 4 -> 1 beside a TCP flow", 4, true, true),
	incastSpec("gm-incast4-tcp-nocc", "gm_incast4_tcp_nocc", "gm incast 4 -> 1 beside a TCP flow, without congestion control", 4, false, true),
}

// gmRun returns the run of f (gmPingPong or gmStream) for the metrics of
// key.
func gmRun(f func(b *bench, key string, extra ...string) (map[string]float64, error), key string) func(*bench, int) (map[string]float64, error) {
	return func(b *bench, _ int) (map[string]float64, error) { return f(b, key) }
}

// withKey returns the run of f (gmPingPong or gmStream) for the metrics
// of key with a cluster key on both sides.
func withKey(f func(b *bench, key string, extra ...string) (map[string]float64, error), key string) func(*bench, int) (map[string]float64, error) {
	return func(b *bench, _ int) (map[string]float64, error) {
		k, err := b.keyFile()
		if err != nil {
			return nil, err
		}
		return f(b, key, "-key", k)
	}
}

// rttMetrics are the rows of a ping-pong measurement described by what
// (and suffix, after the percentile): its round trip's p50 and p99, and
// with mean its mean.
func rttMetrics(key, what, suffix string, mean bool) []metric {
	m := []metric{
		{key + ".p50", what + " RTT p50" + suffix, "us"},
		{key + ".p99", what + " RTT p99" + suffix, "us"},
	}
	if mean {
		m = append(m, metric{key + ".mean", what + " RTT mean" + suffix, "us"})
	}
	return m
}

// streamMetrics are the rows of a link or floor streaming measurement
// described by what and at (the network, or ""); app adds the goodput of
// application payload.
func streamMetrics(key, what, at string, app bool) []metric {
	lost := what + " frames lost at the receiver"
	if at != "" {
		lost = what + at + ", frames lost at the receiver"
	}
	m := []metric{{key + ".gbps", what + " goodput" + at + ", Ethernet payload", "Gbit/s"}}
	if app {
		m = append(m, metric{key + ".gbps_app", what + " goodput" + at + ", application payload", "Gbit/s"})
	}
	return append(m, metric{key + ".loss", lost, "%"})
}

// linkStream returns the run of egm-linkperf's stream for the metrics of
// key, the receiver in link.Wait with the link's default spin.
func linkStream(key string) func(*bench, int) (map[string]float64, error) {
	return func(b *bench, _ int) (map[string]float64, error) {
		return b.goStream(key, "egm-linkperf", []string{"-mode", "stream"}, []string{"-wait=true", "-spin", "0"})
	}
}

// floorStream returns the run of egm-floor's stream (extra: more options
// of both sides) for the metrics of key.
func floorStream(key string, extra ...string) func(*bench, int) (map[string]float64, error) {
	return func(b *bench, _ int) (map[string]float64, error) {
		return b.goStream(key, "egm-floor", append([]string{"-stream"}, extra...), nil)
	}
}

// gmStreamMetrics are the rows of a gm streaming measurement (1 MiB
// messages) described by what.
func gmStreamMetrics(key, what string) []metric {
	return []metric{
		{key + ".gbps_app", what + " goodput (1 MiB messages), message payload", "Gbit/s"},
		{key + ".gbps", what + " goodput, Ethernet payload", "Gbit/s"},
		{key + ".rtx", what + ", data frames resent (of first transmissions)", "%"},
	}
}

func names() []string {
	var n []string
	for _, s := range specs {
		n = append(n, s.name)
	}
	return n
}

// selectSpecs returns the specs named in the comma-separated list only (all
// if it is empty), in the standard order.
func selectSpecs(only string) ([]*spec, error) {
	if only == "" {
		return specs, nil
	}
	want := map[string]bool{}
	for w := range strings.SplitSeq(only, ",") {
		want[strings.TrimSpace(w)] = true
	}
	var sel []*spec
	for _, s := range specs {
		if want[s.name] {
			sel = append(sel, s)
			delete(want, s.name)
		}
	}
	if len(want) > 0 {
		var bad []string
		for w := range want {
			bad = append(bad, w)
		}
		return nil, fmt.Errorf("-only: unknown measurement %s (known: %s)", strings.Join(bad, ","), strings.Join(names(), ","))
	}
	return sel, nil
}

// goPingPong runs one of our ping-pong programs (floor or link): server on
// host1, client on host0.
func (b *bench) goPingPong(key, tool string, extra []string) (map[string]float64, error) {
	bin := b.bins[tool]
	srvArgs := append([]string{"-i", b.server.Ifaces[0], "-server"}, extra...)
	srv, err := b.startServer(ctl.ReadyLine, bin, srvArgs...)
	if err != nil {
		return nil, err
	}
	defer b.stopServer(srv, syscall.SIGTERM)
	cliArgs := append([]string{"-i", b.client.Ifaces[0], "-client", "-peer", b.server.MACs[0].String(),
		"-n", fmt.Sprint(b.cfg.n), "-warmup", fmt.Sprint(b.cfg.warmup)}, extra...)
	out, err := b.runClient(2*time.Minute, bin, cliArgs...)
	if err != nil {
		return nil, err
	}
	var l result.Latency
	if err := result.Decode(out, &l); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", tool, err, lastLine(out))
	}
	if l.N == 0 {
		return nil, fmt.Errorf("%s: no round trip measured", tool)
	}
	return map[string]float64{key + ".p50": l.P50us, key + ".p99": l.P99us}, nil
}

// goStream runs one of our streaming programs: receiver on host1, sender
// on host0; the receiver's record counts.
func (b *bench) goStream(key, tool string, common, recvExtra []string) (map[string]float64, error) {
	bin := b.bins[tool]
	rArgs := append(append([]string{"-i", b.server.Ifaces[0], "-server"}, common...), recvExtra...)
	rcv, err := b.startServer(ctl.ReadyLine, bin, rArgs...)
	if err != nil {
		return nil, err
	}
	sArgs := append([]string{"-i", b.client.Ifaces[0], "-client", "-peer", b.server.MACs[0].String(),
		"-d", b.cfg.streamTime.String()}, common...)
	if _, err := b.runClient(b.cfg.streamTime+time.Minute, bin, sArgs...); err != nil {
		b.stopServer(rcv, syscall.SIGTERM)
		return nil, err
	}
	out, err := b.waitServer(rcv, 15*time.Second)
	if err != nil {
		return nil, err
	}
	var s result.Stream
	if err := result.Decode(out, &s); err != nil {
		return nil, fmt.Errorf("%s receiver: %w: %s", tool, err, lastLine(out))
	}
	v := map[string]float64{key + ".gbps": s.GbpsEth, key + ".gbps_app": s.GbpsApp}
	if total := s.Frames + s.Gaps; total > 0 {
		v[key+".loss"] = 100 * float64(s.Gaps) / float64(total)
	}
	return v, nil
}

// gmPingPong runs egm-gmperf ping-pong (8-byte messages, both sides
// polling): server on host1, client on host0.
func (b *bench) gmPingPong(key string, extra ...string) (map[string]float64, error) {
	srv, err := b.startServer(ctl.ReadyLine, "env", b.gmEnv(b.server, append([]string{"-i", b.server.Ifaces[0], "-mode", "pingpong", "-server"}, extra...)...)...)
	if err != nil {
		return nil, err
	}
	defer b.stopServer(srv, syscall.SIGTERM)
	out, err := b.runClient(2*time.Minute, "env", b.gmEnv(b.client, append([]string{"-i", b.client.Ifaces[0], "-mode", "pingpong", "-client",
		"-peer", b.server.Name, "-n", fmt.Sprint(b.cfg.n), "-warmup", fmt.Sprint(b.cfg.warmup)}, extra...)...)...)
	if err != nil {
		return nil, err
	}
	return parseGMPingPong(key, out)
}

// cEnv returns the env(1) arguments that run egm-cperf (libgm, C) as host
// h of the current network: its GM unit, host name, state directory and
// node map.
func (b *bench) cEnv(h *netns.Host, args ...string) ([]string, error) {
	bin, ok := b.bins["egm-cperf"]
	if !ok {
		return nil, errors.New("egm-cperf (C, on libgm) is not in -bin: `make bench` builds it")
	}
	return append([]string{"ETHERGM_UNIT=" + h.Ifaces[0], "ETHERGM_HOST=" + h.Name, "ETHERGM_STATE_DIR=" + h.Dir,
		"ETHERGM_MAP=" + b.mapFile, bin}, args...), nil
}

// cPingPong runs egm-cperf's ping-pong, egm-gmperf's written in C on
// libgm: server on host1, client on host0. It prints egm-gmperf's record.
func (b *bench) cPingPong(key string) (map[string]float64, error) {
	srvArgs, err := b.cEnv(b.server, "-mode", "pingpong", "-server")
	if err != nil {
		return nil, err
	}
	cliArgs, _ := b.cEnv(b.client, "-mode", "pingpong", "-client", "-peer", b.server.Name,
		"-n", fmt.Sprint(b.cfg.n), "-warmup", fmt.Sprint(b.cfg.warmup))
	srv, err := b.startServer(ctl.ReadyLine, "env", srvArgs...)
	if err != nil {
		return nil, err
	}
	defer b.stopServer(srv, syscall.SIGTERM)
	out, err := b.runClient(2*time.Minute, "env", cliArgs...)
	if err != nil {
		return nil, err
	}
	return parseGMPingPong(key, out)
}

// cCalls runs egm-cperf -mode calls on host0.
func (b *bench) cCalls() (map[string]float64, error) {
	args, err := b.cEnv(b.client, "-mode", "calls", "-n", "1000000")
	if err != nil {
		return nil, err
	}
	out, err := b.runClient(time.Minute, "env", args...)
	if err != nil {
		return nil, err
	}
	var r struct {
		Receive float64 `json:"receive_ns"`
		Ticks   float64 `json:"ticks_ns"`
	}
	if err := result.Decode(out, &r); err != nil {
		return nil, fmt.Errorf("egm-cperf: %w: %s", err, lastLine(out))
	}
	return map[string]float64{"c_calls.receive_ns": r.Receive, "c_calls.ticks_ns": r.Ticks}, nil
}

// parseGMPingPong reads egm-gmperf's ping-pong record.
func parseGMPingPong(key, out string) (map[string]float64, error) {
	var l result.Latency
	if err := result.Decode(out, &l); err != nil {
		return nil, fmt.Errorf("egm-gmperf: %w: %s", err, lastLine(out))
	}
	if l.N == 0 {
		return nil, errors.New("egm-gmperf: no round trip measured")
	}
	return map[string]float64{key + ".p50": l.P50us, key + ".p99": l.P99us, key + ".mean": l.MeanUs}, nil
}

// gmStream runs egm-gmperf streaming (1 MiB messages, every send token in
// flight): receiver on host1, sender on host0. Goodput is the receiver's,
// resends the sender's.
func (b *bench) gmStream(key string, extra ...string) (map[string]float64, error) {
	rcv, err := b.startServer(ctl.ReadyLine, "env", b.gmEnv(b.server, append([]string{"-i", b.server.Ifaces[0], "-mode", "stream", "-server"}, extra...)...)...)
	if err != nil {
		return nil, err
	}
	sendOut, err := b.runClient(b.cfg.streamTime+2*time.Minute, "env", b.gmEnv(b.client, append([]string{"-i", b.client.Ifaces[0], "-mode", "stream", "-client",
		"-peer", b.server.Name, "-d", b.cfg.streamTime.String()}, extra...)...)...)
	if err != nil {
		b.stopServer(rcv, syscall.SIGTERM)
		return nil, err
	}
	// The receiver printed its record at the end marker and keeps its port
	// open until told to stop, so that the sender's last resends are
	// acknowledged (the sender exits once every send completed).
	recvOut := b.stopServer(rcv, syscall.SIGTERM)
	return parseGMStream(key, sendOut, recvOut)
}

// parseGMStream reads egm-gmperf's sender and receiver records.
func parseGMStream(key, sendOut, recvOut string) (map[string]float64, error) {
	var snd, rcv result.Stream
	if err := result.Decode(sendOut, &snd); err != nil {
		return nil, fmt.Errorf("egm-gmperf sender: %w: %s", err, lastLine(sendOut))
	}
	if err := result.Decode(recvOut, &rcv); err != nil {
		return nil, fmt.Errorf("egm-gmperf receiver: %w: %s", err, lastLine(recvOut))
	}
	if snd.Mode != "stream-send" || rcv.Mode != "stream-recv" {
		return nil, fmt.Errorf("egm-gmperf: records of modes %q and %q, want stream-send and stream-recv", snd.Mode, rcv.Mode)
	}
	if rcv.Frames == 0 || rcv.Seconds <= 0 {
		return nil, fmt.Errorf("egm-gmperf receiver: %d messages in %v s", rcv.Frames, rcv.Seconds)
	}
	v := map[string]float64{key + ".gbps_app": rcv.GbpsApp, key + ".gbps": rcv.GbpsEth}
	if snd.DataFrames > 0 {
		v[key+".rtx"] = 100 * float64(snd.Resends) / float64(snd.DataFrames)
	}
	return v, nil
}

// relayStream is gmStream through the relay with random loss drop (the
// same in both directions: data and acknowledgements) for this run. It
// also reports the share of data-direction EtherGM frames the relay
// dropped (key.dropped).
func (b *bench) relayStream(key string, drop float64) (map[string]float64, error) {
	r := b.cl.Relay()
	if r == nil {
		return nil, errors.New("no relay in this network")
	}
	imp := relay.Impairment{Drop: drop}
	for _, d := range []relay.Direction{relay.AtoB, relay.BtoA} {
		if err := r.SetImpairment(d, imp); err != nil {
			return nil, err
		}
	}
	before := r.Stats(relay.AtoB)
	v, err := b.gmStream(key)
	after := r.Stats(relay.AtoB)
	fmt.Fprintf(b.log, "relay AtoB during %s: %+v\n", key, diffRelay(after, before))
	if err != nil {
		return nil, err
	}
	if n := after.Received - after.Passed - (before.Received - before.Passed); n > 0 {
		v[key+".dropped"] = 100 * float64(after.Dropped-before.Dropped) / float64(n)
	}
	return v, nil
}

// diffRelay returns the counters of a minus b.
func diffRelay(a, b relay.Stats) relay.Stats {
	return relay.Stats{
		Received: a.Received - b.Received, Forwarded: a.Forwarded - b.Forwarded, Passed: a.Passed - b.Passed,
		Dropped: a.Dropped - b.Dropped, Overflows: a.Overflows - b.Overflows, Errors: a.Errors - b.Errors,
	}
}

// hosts returns where the current network's baselines run.
func (b *bench) hosts() baseline.Hosts {
	return baseline.Hosts{Run: b.runner(), Client: b.client, Server: b.server, ClientCPU: b.cfg.clientCPU, ServerCPU: b.cfg.serverCPU}
}

// udpPingPong runs sockperf ping-pong (UDP, 64-byte messages, full RTT).
func (b *bench) udpPingPong(rep int) (map[string]float64, error) {
	h := b.hosts()
	srv, err := h.StartSockperf()
	if err != nil {
		return nil, err
	}
	defer h.StopSockperf(srv)
	r, err := h.SockperfPingPong(pingPayload, b.cfg.ppTime)
	if err != nil {
		return nil, err
	}
	return udpPPMetrics(r), nil
}

// udpPPMetrics returns the metrics of a sockperf ping-pong run.
func udpPPMetrics(r baseline.PingPong) map[string]float64 {
	v := map[string]float64{"udp_pp.p50": r.P50}
	if r.P99 > 0 {
		v["udp_pp.p99"] = r.P99
	}
	return v
}

// tcpPingPong runs NetPIPE NPtcp at 64 bytes only. NPtcp prints half the
// round trip (the best of its trials of -np-repeats round trips each).
func (b *bench) tcpPingPong(rep int) (map[string]float64, error) {
	outFile := filepath.Join(b.tmp, fmt.Sprintf("np-%d.out", rep))
	lines, data, err := b.hosts().NetPIPE(outFile, time.Minute,
		"-l", fmt.Sprint(pingPayload), "-u", fmt.Sprint(pingPayload), "-p", "0", "-n", fmt.Sprint(b.cfg.npRepeats))
	fmt.Fprintf(b.log, "--- %s:\n%s\n", outFile, data)
	if err != nil {
		return nil, err
	}
	half, err := baseline.HalfRTTAt(lines, pingPayload)
	if err != nil {
		return nil, err
	}
	return map[string]float64{"tcp_pp.rtt": 2 * half * 1e6}, nil
}

// udpStream runs sockperf tp (1472-byte datagrams) against a fresh
// sockperf server and takes the server's received count. Both sockets get
// -udp-buffer bytes of buffer: with the default 208 KiB receive buffer
// (about 90 full datagrams) every wake-up delay of the receiver overflows
// it, and UDP loses more than half of what it sends on this kind of VM,
// while our link has an 8 MiB ring; giving UDP a comparable buffer makes
// the comparison fair.
func (b *bench) udpStream(rep int) (map[string]float64, error) {
	var buf []string
	if b.cfg.udpBuf > 0 {
		buf = []string{"--buffer-size", fmt.Sprint(b.cfg.udpBuf)}
	}
	t, err := b.hosts().SockperfThroughput(udpDatagram, b.cfg.streamTime, buf...)
	if err != nil {
		return nil, err
	}
	return udpStreamMetrics(t), nil
}

// udpStreamMetrics returns the goodputs of a sockperf throughput run of
// full datagrams: on the wire (full Ethernet frames) and to the
// application.
func udpStreamMetrics(t baseline.Throughput) map[string]float64 {
	return map[string]float64{
		"udp_stream.gbps":      t.Received * fullEthFrame * 8 / t.Seconds / 1e9,
		"udp_stream.gbps_app":  t.Received * udpDatagram * 8 / t.Seconds / 1e9,
		"udp_stream.loss":      t.Loss(),
		"udp_stream.sent_gbps": t.Sent * fullEthFrame * 8 / t.Seconds / 1e9,
	}
}

// keyFile writes (once) a cluster key file next to the node map for the
// "-key" experiments and returns its path.
func (b *bench) keyFile() (string, error) {
	path := filepath.Join(filepath.Dir(b.mapFile), "cluster.key")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	return path, os.WriteFile(path, []byte("egm-bench-cluster-key-0123456789abcdef\n"), 0o600)
}
