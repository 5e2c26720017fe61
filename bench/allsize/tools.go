package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/bench/internal/baseline"
	"github.com/ethergm/ethergm/bench/internal/runner"
	"github.com/ethergm/ethergm/cmd/gm_allsize/report"
	"github.com/ethergm/ethergm/internal/netns"
)

// npMax is the largest NetPIPE block.
const npMax = 1 << 20

func (b *bench) runner() *runner.Runner { return &runner.Runner{Log: b.log} }

// hosts returns where p's baselines run.
func (b *bench) hosts(p *path) baseline.Hosts {
	return baseline.Hosts{Run: b.runner(), Client: p.client, Server: p.server, ClientCPU: b.cfg.clientCPU, ServerCPU: b.cfg.serverCPU}
}

// gmArgs returns the arguments that run gm_allsize as host h.
func (b *bench) gmArgs(p *path, h *netns.Host, args ...string) []string {
	return append([]string{"--hostname", h.Name, "--state-dir", h.Dir, "--map-file", p.mapFile}, args...)
}

// gmAllsize runs one two-host gm_allsize run and returns its points.
func (b *bench) gmAllsize(p *path, rep int) ([]report.Point, error) {
	r := b.runner()
	srv, err := r.StartServer(p.server, b.cfg.serverCPU, "serving on", b.bin, b.gmArgs(p, p.server, "--serve", "--once", "--unit", p.server.Ifaces[0])...)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(b.dir, fmt.Sprintf("gm-mtu%d-rep%d", p.mtu, rep))
	_, err = r.RunClient(p.client, b.cfg.clientCPU, 5*time.Minute, b.bin, b.gmArgs(p, p.client,
		"--remote-host=host1", "--unit", p.client.Ifaces[0],
		"--min-size", strconv.Itoa(b.cfg.minSize), "--max-size", strconv.Itoa(b.cfg.maxSize),
		"--random", "0", "--iterations", strconv.Itoa(b.cfg.iterations),
		"--csv="+base+".csv", "--json="+base+".json")...)
	if err != nil {
		r.StopServer(srv, syscall.SIGTERM)
		return nil, err
	}
	if _, err := r.WaitServer(srv, 30*time.Second); err != nil {
		return nil, fmt.Errorf("gm_allsize server: %w", err)
	}
	data, err := os.ReadFile(base + ".json")
	if err != nil {
		return nil, err
	}
	var run report.Run
	if err := json.Unmarshal(data, &run); err != nil {
		return nil, fmt.Errorf("%s.json: %w", base, err)
	}
	if !run.Summary.OK() {
		return nil, fmt.Errorf("gm_allsize run failed: %d data errors, %d failed sends, %s", run.Summary.DataErrors, run.Summary.FailedSends, run.Summary.Error)
	}
	return run.Points, nil
}

// netpipe runs NPtcp from 1 byte to npMax and returns its samples.
func (b *bench) netpipe(p *path, rep int) ([]Sample, error) {
	out := filepath.Join(b.dir, fmt.Sprintf("np-mtu%d-rep%d.out", p.mtu, rep))
	lines, _, err := b.hosts(p).NetPIPE(out, 3*time.Minute, "-p", "0", "-l", "1", "-u", strconv.Itoa(npMax))
	if err != nil {
		return nil, err
	}
	s := make([]Sample, len(lines))
	for i, l := range lines {
		s[i] = Sample{Length: l.Bytes, HalfRTTus: l.HalfRTT * 1e6, BWMBs: l.MBs()}
	}
	return s, nil
}

// UDPPingPong is one sockperf ping-pong run.
type UDPPingPong struct {
	Size      int     `json:"size"`            // message size, bytes
	HalfRTTus float64 `json:"half_rtt_us"`     // avg-rtt / 2
	P50us     float64 `json:"half_rtt_p50_us"` // median round trip / 2
	N         int     `json:"observations"`
}

// udpSizes returns the sockperf ping-pong sizes for datagram limit max:
// 14 bytes (sockperf's minimum, standing in for 8), 64, 1 KiB and max.
func udpSizes(max int) []int { return []int{14, 64, 1024, max} }

// udpPingPong runs sockperf ping-pong at every udpSizes size against one
// server.
func (b *bench) udpPingPong(p *path, dgram int) ([]UDPPingPong, error) {
	h := b.hosts(p)
	srv, err := h.StartSockperf()
	if err != nil {
		return nil, err
	}
	defer h.StopSockperf(srv)
	var out []UDPPingPong
	for _, size := range udpSizes(dgram) {
		r, err := h.SockperfPingPong(size, b.cfg.ppTime)
		if err != nil {
			return nil, err
		}
		out = append(out, UDPPingPong{Size: size, HalfRTTus: r.AvgRTT / 2, P50us: r.P50 / 2, N: r.N})
	}
	return out, nil
}

// UDPThroughput is one sockperf throughput run.
type UDPThroughput struct {
	Size    int     `json:"size"`     // datagram payload, bytes
	MBs     float64 `json:"mbs"`      // received payload, MB/s
	SentMBs float64 `json:"sent_mbs"` // offered payload, MB/s
	Loss    float64 `json:"loss_pct"` // datagrams lost at the receiver, percent
	Seconds float64 `json:"seconds"`
}

// udpThroughput runs sockperf tp with datagrams of dgram bytes against a
// fresh server and counts what the server received.
func (b *bench) udpThroughput(p *path, dgram int) (UDPThroughput, error) {
	t, err := b.hosts(p).SockperfThroughput(dgram, b.cfg.tpTime)
	if err != nil {
		return UDPThroughput{}, err
	}
	return UDPThroughput{Size: dgram, Seconds: t.Seconds, Loss: t.Loss(),
		MBs:     t.Received * float64(dgram) / t.Seconds / 1e6,
		SentMBs: t.Sent * float64(dgram) / t.Seconds / 1e6}, nil
}
