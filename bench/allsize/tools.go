package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/bench/internal/runner"
	"github.com/ethergm/ethergm/cmd/gm_allsize/report"
	"github.com/ethergm/ethergm/internal/netns"
)

// sockperfPort is the UDP port of the sockperf server.
const sockperfPort = "11111"

// npMax is the largest NetPIPE block.
const npMax = 1 << 20

func (b *bench) runner() *runner.Runner { return &runner.Runner{Log: b.log} }

// startServer starts a server on p's server host, pinned to the server
// CPU, and waits until its output contains ready (if not empty).
func (b *bench) startServer(p *path, ready, name string, args ...string) (*netns.Proc, error) {
	return b.runner().StartServer(p.server, b.cfg.serverCPU, ready, name, args...)
}

// stopServer signals proc's process group with sig unless it has exited,
// waits up to 5 s (then kills it), logs and returns its output.
func (b *bench) stopServer(proc *netns.Proc, sig syscall.Signal) string {
	return b.runner().StopServer(proc, sig)
}

// waitServer waits up to d for proc to exit by itself, then kills it; it
// logs and returns its output.
func (b *bench) waitServer(proc *netns.Proc, d time.Duration) (string, error) {
	return b.runner().WaitServer(proc, d)
}

// runClient runs a client on p's client host, pinned to the client CPU,
// and returns its combined output.
func (b *bench) runClient(p *path, timeout time.Duration, name string, args ...string) (string, error) {
	return b.runner().RunClient(p.client, b.cfg.clientCPU, timeout, name, args...)
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string { return runner.LastLine(s) }

// gmArgs returns the arguments that run gm_allsize as host h.
func (b *bench) gmArgs(p *path, h *netns.Host, args ...string) []string {
	return append([]string{"--hostname", h.Name, "--state-dir", h.Dir, "--map-file", p.mapFile}, args...)
}

// gmAllsize runs one two-host gm_allsize run and returns its points.
func (b *bench) gmAllsize(p *path, rep int) ([]report.Point, error) {
	srv, err := b.startServer(p, "serving on", b.bin, b.gmArgs(p, p.server, "--serve", "--once", "--unit", p.server.Ifaces[0])...)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(b.dir, fmt.Sprintf("gm-mtu%d-rep%d", p.mtu, rep))
	_, err = b.runClient(p, 5*time.Minute, b.bin, b.gmArgs(p, p.client,
		"--remote-host=host1", "--unit", p.client.Ifaces[0],
		"--min-size", strconv.Itoa(b.cfg.minSize), "--max-size", strconv.Itoa(b.cfg.maxSize),
		"--random", "0", "--iterations", strconv.Itoa(b.cfg.iterations),
		"--csv="+base+".csv", "--json="+base+".json")...)
	if err != nil {
		b.stopServer(srv, syscall.SIGTERM)
		return nil, err
	}
	if _, err := b.waitServer(srv, 30*time.Second); err != nil {
		return nil, fmt.Errorf("gm_allsize server: %w", err)
	}
	data, err := os.ReadFile(base + ".json")
	if err != nil {
		return nil, err
	}
	var r report.Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s.json: %w", base, err)
	}
	if !r.Summary.OK() {
		return nil, fmt.Errorf("gm_allsize run failed: %d data errors, %d failed sends, %s", r.Summary.DataErrors, r.Summary.FailedSends, r.Summary.Error)
	}
	return r.Points, nil
}

// netpipe runs NPtcp from 1 byte to npMax and returns its samples.
func (b *bench) netpipe(p *path, rep int) ([]Sample, error) {
	args := []string{"-p", "0", "-l", "1", "-u", strconv.Itoa(npMax)}
	srv, err := b.startServer(p, "", "NPtcp", args...)
	if err != nil {
		return nil, err
	}
	defer b.stopServer(srv, syscall.SIGTERM)
	out := filepath.Join(b.dir, fmt.Sprintf("np-mtu%d-rep%d.out", p.mtu, rep))
	if err := runner.RetryClient(srv, func() error {
		_, err := b.runClient(p, 3*time.Minute, "NPtcp", append([]string{"-h", p.server.Addrs[0].String(), "-o", out}, args...)...)
		return err
	}); err != nil {
		return nil, fmt.Errorf("NPtcp: %w", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	return parseNetPIPE(string(data))
}

// parseNetPIPE reads an NPtcp output file: per line the block size in
// bytes, the rate in Mbit/s (2^20 bits) and the time of half a round trip
// in seconds. Bandwidth is recomputed as bytes / time in MB/s.
func parseNetPIPE(data string) ([]Sample, error) {
	var out []Sample
	for line := range strings.SplitSeq(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		n, err1 := strconv.ParseFloat(f[0], 64)
		t, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil || n <= 0 || t <= 0 {
			return nil, fmt.Errorf("NPtcp: bad line %q", line)
		}
		out = append(out, Sample{Length: n, HalfRTTus: t * 1e6, BWMBs: n / t / 1e6})
	}
	if len(out) == 0 {
		return nil, errors.New("NPtcp: empty output file")
	}
	return out, nil
}

// UDPPingPong is one sockperf ping-pong run.
type UDPPingPong struct {
	Size      int     `json:"size"`            // message size, bytes
	HalfRTTus float64 `json:"half_rtt_us"`     // avg-rtt / 2
	P50us     float64 `json:"half_rtt_p50_us"` // median round trip / 2
	N         int     `json:"observations"`
}

var (
	reAvgRTT     = regexp.MustCompile(`avg-rtt=([\d.]+)`)
	rePercentile = regexp.MustCompile(`percentile (\d+\.\d+) =\s+([\d.]+)`)
	reObserv     = regexp.MustCompile(`Total (\d+) observations`)
	reTpSent     = regexp.MustCompile(`Total of (\d+) messages sent in ([\d.]+) sec`)
	reSrvRecv    = regexp.MustCompile(`Total (\d+) messages received`)
)

// udpSizes returns the sockperf ping-pong sizes for datagram limit max:
// 14 bytes (sockperf's minimum, standing in for 8), 64, 1 KiB and max.
func udpSizes(max int) []int { return []int{14, 64, 1024, max} }

// udpPingPong runs sockperf ping-pong at every udpSizes size against one
// server.
func (b *bench) udpPingPong(p *path, dgram int) ([]UDPPingPong, error) {
	srv, err := b.startServer(p, "to block on socket", "sockperf", "sr", "-i", p.server.Addrs[0].String(), "-p", sockperfPort)
	if err != nil {
		return nil, err
	}
	defer b.stopServer(srv, syscall.SIGINT)
	secs := strconv.Itoa(max(1, int(b.cfg.ppTime.Round(time.Second)/time.Second)))
	var out []UDPPingPong
	for _, size := range udpSizes(dgram) {
		o, err := b.runClient(p, b.cfg.ppTime+time.Minute, "sockperf", "pp", "-i", p.server.Addrs[0].String(), "-p", sockperfPort,
			"-m", strconv.Itoa(size), "-t", secs, "--full-rtt")
		if err != nil {
			return nil, err
		}
		r, err := parseSockperfPP(o)
		if err != nil {
			return nil, err
		}
		r.Size = size
		out = append(out, r)
	}
	return out, nil
}

// parseSockperfPP reads the summary of sockperf pp --full-rtt.
func parseSockperfPP(out string) (UDPPingPong, error) {
	var r UDPPingPong
	m := reAvgRTT.FindStringSubmatch(out)
	o := reObserv.FindStringSubmatch(out)
	if m == nil || o == nil {
		return r, fmt.Errorf("sockperf pp: no full-RTT summary: %s", lastLine(out))
	}
	avg, _ := strconv.ParseFloat(m[1], 64)
	r.N, _ = strconv.Atoi(o[1])
	if r.N == 0 || avg <= 0 {
		return r, fmt.Errorf("sockperf pp: no observations: %s", lastLine(out))
	}
	r.HalfRTTus = avg / 2
	for _, p := range rePercentile.FindAllStringSubmatch(out, -1) {
		if p[1] == "50.000" {
			x, _ := strconv.ParseFloat(p[2], 64)
			r.P50us = x / 2
		}
	}
	if r.P50us == 0 {
		return r, fmt.Errorf("sockperf pp: no median: %s", lastLine(out))
	}
	return r, nil
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
	srv, err := b.startServer(p, "to block on socket", "sockperf", "sr", "-i", p.server.Addrs[0].String(), "-p", sockperfPort)
	if err != nil {
		return UDPThroughput{}, err
	}
	secs := strconv.Itoa(max(1, int(b.cfg.tpTime.Round(time.Second)/time.Second)))
	out, err := b.runClient(p, b.cfg.tpTime+time.Minute, "sockperf", "tp", "-i", p.server.Addrs[0].String(), "-p", sockperfPort,
		"-m", strconv.Itoa(dgram), "-t", secs)
	time.Sleep(200 * time.Millisecond) // let the server drain its socket
	srvOut := b.stopServer(srv, syscall.SIGINT)
	if err != nil {
		return UDPThroughput{}, err
	}
	return parseSockperfTP(out, srvOut, dgram)
}

// parseSockperfTP computes the received rate of size-byte datagrams from
// the client's "sent" line (count and time) and the server's "received"
// count.
func parseSockperfTP(client, server string, size int) (UDPThroughput, error) {
	r := UDPThroughput{Size: size}
	m := reTpSent.FindStringSubmatch(client)
	if m == nil {
		return r, fmt.Errorf("sockperf tp: no \"Total of N messages sent\" line: %s", lastLine(client))
	}
	rv := reSrvRecv.FindStringSubmatch(server)
	if rv == nil {
		return r, fmt.Errorf("sockperf server: no \"Total N messages received\" line: %s", lastLine(server))
	}
	sent, _ := strconv.ParseFloat(m[1], 64)
	r.Seconds, _ = strconv.ParseFloat(m[2], 64)
	recv, _ := strconv.ParseFloat(rv[1], 64)
	if r.Seconds <= 0 || sent <= 0 {
		return r, fmt.Errorf("sockperf tp: sent %v in %v s", sent, r.Seconds)
	}
	recv = min(recv, sent)
	r.Loss = 100 * (sent - recv) / sent
	r.MBs = recv * float64(size) / r.Seconds / 1e6
	r.SentMBs = sent * float64(size) / r.Seconds / 1e6
	return r, nil
}
