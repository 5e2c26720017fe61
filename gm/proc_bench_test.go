package gm_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/membuf"
	"github.com/ethergm/ethergm/internal/netns"
)

// Environment of the helper processes of BenchmarkStreamProcs.
const (
	envRole   = "GM_STREAM_ROLE" // "send" or "recv"
	envHost   = "GM_STREAM_HOST"
	envState  = "GM_STREAM_STATE"
	envMap    = "GM_STREAM_MAP"
	envIface  = "GM_STREAM_IF"
	envPeer   = "GM_STREAM_PEER"
	envLen    = "GM_STREAM_LEN"
	envCount  = "GM_STREAM_N"
	envWindow = "GM_STREAM_WINDOW"
	// envProfile, if set in the benchmark's environment, names a
	// directory where each helper writes a CPU profile of its measured
	// part (send.pprof, recv.pprof).
	envProfile = "GM_STREAM_CPUPROFILE"
)

// BenchmarkStreamProcs is BenchmarkStream1MiB with the sender and the
// receiver in separate processes pinned to CPU 0 and CPU 1 (as
// bench/cmd/egm-bench runs egm-linkperf and egm-floor), so that it can be
// compared with the link's streaming numbers of the same run, at MTU 1500
// and 9000. b.N is the number of 1 MiB messages. Besides the goodput it
// reports each side's CPU time per MiB; both sides poll while data flows,
// so a side below the other's figure had idle time.
func BenchmarkStreamProcs(b *testing.B) {
	for _, mtu := range []int{1500, 9000} {
		b.Run(fmt.Sprintf("mtu%d", mtu), func(b *testing.B) { streamProcs(b, mtu) })
	}
}

func streamProcs(b *testing.B, mtu int) {
	c := netns.New(b, netns.Options{Hosts: 2, Direct: true, MTU: mtu})
	m := writeMap(b, c)
	const msgLen = 1 << 20
	start := func(h *netns.Host, cpu int, role string, peer, n int) (*exec.Cmd, *bufio.Scanner) {
		cmd := h.Command("taskset", "-c", strconv.Itoa(cpu), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			envRole+"="+role, envHost+"="+h.Name, envState+"="+h.Dir, envMap+"="+m, envIface+"="+h.Ifaces[0],
			envPeer+"="+strconv.Itoa(peer), envLen+"="+strconv.Itoa(msgLen), envCount+"="+strconv.Itoa(n),
			envWindow+"=1024")
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		return cmd, bufio.NewScanner(out)
	}
	result := func(sc *bufio.Scanner) (secs, cpu float64) {
		for sc.Scan() {
			if _, err := fmt.Sscanf(sc.Text(), "GMSTREAM %g %g", &secs, &cpu); err == nil {
				return secs, cpu
			}
		}
		b.Fatalf("helper ended without a result")
		return 0, 0
	}
	n := b.N
	recv, rs := start(c.Hosts[1], 1, "recv", 1, n)
	defer recv.Process.Kill()
	for rs.Scan() && rs.Text() != "ready" {
	}
	send, ss := start(c.Hosts[0], 0, "send", 2, n)
	defer send.Process.Kill()
	b.ResetTimer()
	secs, sendCPU := result(ss)
	_, recvCPU := result(rs)
	b.StopTimer()
	if err := send.Wait(); err != nil {
		b.Fatalf("sender: %v", err)
	}
	if err := recv.Wait(); err != nil {
		b.Fatalf("receiver: %v", err)
	}
	mib := float64(n) * msgLen / (1 << 20)
	b.ReportMetric(float64(n)*msgLen/secs/1e6, "MB/s")
	b.ReportMetric(sendCPU/mib*1e6, "send-cpu-us/MiB")
	b.ReportMetric(recvCPU/mib*1e6, "recv-cpu-us/MiB")
}

// TestMain runs the test binary as a sender or receiver process of
// BenchmarkStreamProcs, or as a port helper of TestIntegrationNonRoot
// (portHelper), or as the other process of TestIntegrationSixteenPorts
// (sixteenHelper), when the environment names a role, and the tests
// otherwise.
func TestMain(m *testing.M) {
	if role := os.Getenv(envHelper); role != "" {
		os.Exit(portHelper(role))
	}
	if os.Getenv(envSixteen) != "" {
		os.Exit(sixteenHelper())
	}
	if role := os.Getenv(envRole); role != "" {
		if err := streamHelper(role); err != nil {
			fmt.Fprintln(os.Stderr, "stream helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// streamHelper is one side of BenchmarkStreamProcs: role "send" or "recv".
func streamHelper(role string) error {
	var bad error
	atoi := func(k string) int {
		v, err := strconv.Atoi(os.Getenv(k))
		if err != nil && bad == nil {
			bad = fmt.Errorf("%s: %v", k, err)
		}
		return v
	}
	cfg := &gm.Config{
		Host: os.Getenv(envHost), StateDir: os.Getenv(envState), MapFile: os.Getenv(envMap),
		ProgressTimeout: time.Minute, LivenessTimeout: time.Minute, Window: atoi(envWindow),
	}
	if bad != nil {
		return bad
	}
	p, err := gm.Open(os.Getenv(envIface), 2, "stream", cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	msgLen, n, peer := atoi(envLen), atoi(envCount), gm.NodeID(atoi(envPeer))
	size := gm.MinSizeForLength(msgLen)
	const warm = 8
	var r0 syscall.Rusage
	var t0 time.Time
	var prof *os.File
	mark := func() {
		if dir := os.Getenv(envProfile); dir != "" {
			if f, err := os.Create(filepath.Join(dir, role+".pprof")); err == nil && pprof.StartCPUProfile(f) == nil {
				prof = f
			}
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		t0 = time.Now()
	}
	report := func() {
		el := time.Since(t0)
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
		}
		var r1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
		fmt.Printf("GMSTREAM %g %g\n", el.Seconds(), cpu.Seconds())
	}
	if role == "recv" {
		for i := 0; i < 64; i++ {
			if err := p.ProvideReceiveBuffer(membuf.Touched(msgLen), size, gm.LowPriority, 0); err != nil {
				return err
			}
		}
		fmt.Println("ready")
		got := 0
		for got < n+warm {
			e := p.BlockingReceive()
			switch {
			case e.Type.IsRecv():
				if got++; got == warm {
					mark()
				}
				_ = p.ProvideReceiveBuffer(e.Buffer, e.Size, e.Priority, e.Tag)
			case e.Type != gm.NoRecvEvent:
				p.Unknown(e)
			}
		}
		report()
		// Stay until the sender has seen the last acks.
		time.Sleep(50 * time.Millisecond)
		if os.Getenv("GM_STREAM_DEBUG") != "" {
			fmt.Fprintln(os.Stderr, strings.TrimSpace(p.DebugState()))
		}
		return nil
	}
	msg := membuf.Touched(msgLen)
	var done, failed atomic.Int64
	cb := gm.SendCallback(func(_ *gm.Port, _ any, st gm.Status) {
		done.Add(1)
		if st != gm.Success {
			failed.Add(1)
		}
	})
	send := func() error {
		for {
			err := p.SendToPeerWithCallback(msg, size, msgLen, gm.LowPriority, peer, cb, nil)
			if err == nil {
				return nil
			}
			if !errors.Is(err, gm.ErrNoSendToken) {
				return err
			}
			if e := p.Receive(); e.Type != gm.NoRecvEvent {
				p.Unknown(e)
			}
		}
	}
	for i := 0; i < warm; i++ {
		if err := send(); err != nil {
			return err
		}
	}
	for done.Load() < warm {
		p.Unknown(p.Receive())
	}
	mark()
	for i := 0; i < n; i++ {
		if err := send(); err != nil {
			return err
		}
	}
	for done.Load() < int64(n+warm) {
		if e := p.Receive(); e.Type != gm.NoRecvEvent {
			p.Unknown(e)
		}
	}
	report()
	if os.Getenv("GM_STREAM_DEBUG") != "" {
		fmt.Fprintln(os.Stderr, strings.TrimSpace(p.DebugState()))
	}
	if failed.Load() > 0 {
		return fmt.Errorf("%d sends failed", failed.Load())
	}
	return nil
}
