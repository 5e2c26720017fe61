// Package baseline runs the kernel baselines of the benchmarks, sockperf
// (UDP) and NetPIPE's NPtcp (TCP), between the two hosts of a netns pair,
// and reads their output. Both benchmark drivers, bench/cmd/egm-bench and
// bench/allsize, use it, so that the baselines are run and read one way.
package baseline

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/bench/internal/runner"
	"github.com/ethergm/ethergm/internal/netns"
)

// SockperfPort is the UDP port of the sockperf server.
const SockperfPort = "11111"

// Hosts is where a baseline runs: clients on Client pinned to ClientCPU,
// servers on Server pinned to ServerCPU, through Run.
type Hosts struct {
	Run                  *runner.Runner
	Client, Server       *netns.Host
	ClientCPU, ServerCPU int
}

func (h Hosts) serverAddr() string { return h.Server.Addrs[0].String() }

// StartSockperf starts a sockperf server (extra: more of its options) and
// waits until it listens. Stop it with StopSockperf.
func (h Hosts) StartSockperf(extra ...string) (*netns.Proc, error) {
	args := append([]string{"sr", "-i", h.serverAddr(), "-p", SockperfPort}, extra...)
	return h.Run.StartServer(h.Server, h.ServerCPU, "to block on socket", "sockperf", args...)
}

// StopSockperf stops a sockperf server (it prints its counts on SIGINT)
// and returns its output.
func (h Hosts) StopSockperf(srv *netns.Proc) string { return h.Run.StopServer(srv, syscall.SIGINT) }

// seconds is d in whole seconds, at least 1: sockperf's -t.
func seconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
}

// SockperfPingPong runs sockperf ping-pong (--full-rtt) with size-byte
// messages for d against a server of StartSockperf.
func (h Hosts) SockperfPingPong(size int, d time.Duration) (PingPong, error) {
	out, err := h.Run.RunClient(h.Client, h.ClientCPU, d+time.Minute, "sockperf", "pp", "-i", h.serverAddr(), "-p", SockperfPort,
		"-m", strconv.Itoa(size), "-t", seconds(d), "--full-rtt")
	if err != nil {
		return PingPong{}, err
	}
	return ParseSockperfPP(out)
}

// SockperfThroughput runs sockperf throughput with size-byte datagrams
// for d against a fresh server (extra: options of both, such as
// --buffer-size) and counts what the server received.
func (h Hosts) SockperfThroughput(size int, d time.Duration, extra ...string) (Throughput, error) {
	srv, err := h.StartSockperf(extra...)
	if err != nil {
		return Throughput{}, err
	}
	out, err := h.Run.RunClient(h.Client, h.ClientCPU, d+time.Minute, "sockperf", append([]string{"tp", "-i", h.serverAddr(), "-p", SockperfPort,
		"-m", strconv.Itoa(size), "-t", seconds(d)}, extra...)...)
	time.Sleep(200 * time.Millisecond) // let the server drain its socket
	srvOut := h.StopSockperf(srv)
	if err != nil {
		return Throughput{}, err
	}
	return ParseSockperfTP(out, srvOut)
}

// NetPIPE runs NPtcp (its options in args, the same on both sides) with
// its output file at outFile, and returns the file's lines and text.
func (h Hosts) NetPIPE(outFile string, timeout time.Duration, args ...string) ([]NPLine, string, error) {
	srv, err := h.Run.StartServer(h.Server, h.ServerCPU, "", "NPtcp", args...)
	if err != nil {
		return nil, "", err
	}
	defer h.Run.StopServer(srv, syscall.SIGTERM)
	if err := runner.RetryClient(srv, func() error {
		_, err := h.Run.RunClient(h.Client, h.ClientCPU, timeout, "NPtcp", append([]string{"-h", h.serverAddr(), "-o", outFile}, args...)...)
		return err
	}); err != nil {
		return nil, "", fmt.Errorf("NPtcp: %w", err)
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		return nil, "", err
	}
	lines, err := ParseNetPIPE(string(data))
	return lines, string(data), err
}

// PingPong is the summary of one sockperf ping-pong run, in round-trip
// microseconds.
type PingPong struct {
	AvgRTT float64 // the mean round trip
	P50    float64 // the median round trip
	P99    float64 // the 99th percentile, 0 if sockperf did not print it
	N      int     // observations
}

var (
	reAvgRTT     = regexp.MustCompile(`avg-rtt=([\d.]+)`)
	rePercentile = regexp.MustCompile(`percentile (\d+\.\d+) =\s+([\d.]+)`)
	reObserv     = regexp.MustCompile(`Total (\d+) observations`)
	reTpSent     = regexp.MustCompile(`Total of (\d+) messages sent in ([\d.]+) sec`)
	reSrvRecv    = regexp.MustCompile(`Total (\d+) messages received`)
)

// ParseSockperfPP reads the summary of sockperf pp --full-rtt.
func ParseSockperfPP(out string) (PingPong, error) {
	var r PingPong
	m := reAvgRTT.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("sockperf pp: no full-RTT summary in its output: %s", runner.LastLine(out))
	}
	r.AvgRTT, _ = strconv.ParseFloat(m[1], 64)
	if o := reObserv.FindStringSubmatch(out); o != nil {
		r.N, _ = strconv.Atoi(o[1])
	}
	if r.N == 0 || r.AvgRTT <= 0 {
		return r, fmt.Errorf("sockperf pp: no observations: %s", runner.LastLine(out))
	}
	for _, p := range rePercentile.FindAllStringSubmatch(out, -1) {
		x, err := strconv.ParseFloat(p[2], 64)
		if err != nil {
			continue
		}
		switch p[1] {
		case "50.000":
			r.P50 = x
		case "99.000":
			r.P99 = x
		}
	}
	if r.P50 == 0 {
		return r, fmt.Errorf("sockperf pp: no median in its output: %s", runner.LastLine(out))
	}
	return r, nil
}

// Throughput is one sockperf throughput run: datagrams the client sent in
// Seconds, and how many of them the server received.
type Throughput struct {
	Sent, Received, Seconds float64
}

// Loss is the percentage of the datagrams sent that the server did not
// receive.
func (t Throughput) Loss() float64 { return 100 * (t.Sent - t.Received) / t.Sent }

// ParseSockperfTP reads the client's "sent" line (count and run time) and
// the server's "received" count. A received count above the sent one (a
// datagram of an earlier run) is clamped.
func ParseSockperfTP(client, server string) (Throughput, error) {
	var r Throughput
	m := reTpSent.FindStringSubmatch(client)
	if m == nil {
		return r, fmt.Errorf("sockperf tp: no \"Total of N messages sent\" line: %s", runner.LastLine(client))
	}
	rv := reSrvRecv.FindStringSubmatch(server)
	if rv == nil {
		return r, fmt.Errorf("sockperf server: no \"Total N messages received\" line: %s", runner.LastLine(server))
	}
	r.Sent, _ = strconv.ParseFloat(m[1], 64)
	r.Seconds, _ = strconv.ParseFloat(m[2], 64)
	r.Received, _ = strconv.ParseFloat(rv[1], 64)
	if r.Seconds <= 0 || r.Sent <= 0 {
		return r, fmt.Errorf("sockperf tp: sent %v in %v s", r.Sent, r.Seconds)
	}
	r.Received = min(r.Received, r.Sent)
	return r, nil
}

// NPLine is one line of an NPtcp output file.
type NPLine struct {
	Bytes   float64 // the block size
	HalfRTT float64 // the time of half a round trip, seconds (the best of NPtcp's trials)
}

// MBs is the line's bandwidth in MB/s, Bytes / HalfRTT (NPtcp's own
// column is Mbit/s of 2^20 bits).
func (l NPLine) MBs() float64 { return l.Bytes / l.HalfRTT / 1e6 }

// ParseNetPIPE reads an NPtcp output file: per line the block size in
// bytes, the rate in Mbit/s and the time of half a round trip in seconds.
func ParseNetPIPE(data string) ([]NPLine, error) {
	var out []NPLine
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
		out = append(out, NPLine{Bytes: n, HalfRTT: t})
	}
	if len(out) == 0 {
		return nil, errors.New("NPtcp: empty output file")
	}
	return out, nil
}

// HalfRTTAt returns the half round trip in seconds of the size-byte line.
func HalfRTTAt(lines []NPLine, size int) (float64, error) {
	for _, l := range lines {
		if l.Bytes == float64(size) {
			return l.HalfRTT, nil
		}
	}
	return 0, fmt.Errorf("NPtcp: no %d-byte line", size)
}
