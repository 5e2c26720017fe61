package nemesis

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/relay"
	"github.com/ethergm/ethergm/wire"
)

// mapperStatus is the part of gm_mapper's status document (ctl) the
// nemesis reads.
type mapperStatus struct {
	Host       string `json:"host"`
	NodeID     int    `json:"node_id"`
	Leader     bool   `json:"leader"`
	Mapper     string `json:"mapper"`
	MapVersion uint32 `json:"map_version"`
	Hosts      int    `json:"hosts"`
	Configured bool   `json:"configured"`
}

func unitOf(h *netns.Host) string { return strings.Join(h.Ifaces, ",") }

func queryMapper(h *netns.Host) (mapperStatus, error) {
	var st mapperStatus
	err := h.Do(func() error {
		_, err := ctl.Query(ctl.MapperName(h.Ifaces[0]), &st)
		return err
	})
	return st, err
}

// Names in the switch namespace (internal/netns, "Naming"): the bridge of
// switch s, the switch-side veth of host h's rail r, and, for a relayed
// rail, the relay's port towards the bridge (y) and its peer on the bridge
// (x).
func bridge(c *netns.Cluster, s int) string { return fmt.Sprintf("%s%sbr%d", netns.Prefix, c.ID, s) }
func hostPort(c *netns.Cluster, h, r int) string {
	return fmt.Sprintf("%s%sh%dr%d", netns.Prefix, c.ID, h, r)
}
func relayPort(c *netns.Cluster, h, r int) string {
	return fmt.Sprintf("%s%sh%dy%d", netns.Prefix, c.ID, h, r)
}
func relayPeer(c *netns.Cluster, h, r int) string {
	return fmt.Sprintf("%s%sh%dx%d", netns.Prefix, c.ID, h, r)
}

// insertRelay puts a two-port relay (AtoB: from the host) between host h's
// rail r and its bridge, inside the switch namespace: the host's veth leaves
// the bridge and a new veth pair joins the relay to it. The relay is closed
// by Cleanup, the links go with the namespace.
func insertRelay(t *testing.T, c *netns.Cluster, h, r int, seed int64) *relay.Relay {
	t.Helper()
	sw := c.Switch
	for _, args := range [][]string{
		{"link", "set", hostPort(c, h, r), "nomaster"},
		{"link", "add", relayPort(c, h, r), "mtu", fmt.Sprint(c.Opts.MTU), "type", "veth", "peer", "name", relayPeer(c, h, r), "mtu", fmt.Sprint(c.Opts.MTU)},
		{"link", "set", relayPeer(c, h, r), "master", bridge(c, r)},
		{"link", "set", relayPeer(c, h, r), "up"},
		{"link", "set", relayPort(c, h, r), "up"},
	} {
		if _, err := sw.Run("ip", args...); err != nil {
			t.Fatal(err)
		}
	}
	var a, b relay.Conn
	err := sw.Do(func() (err error) {
		if a, err = relay.Listen(hostPort(c, h, r)); err != nil {
			return err
		}
		b, err = relay.Listen(relayPort(c, h, r))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rl, err := relay.Start(a, b, relay.Config{Seed: seed, EtherType: wire.EtherType})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rl.Close() })
	return rl
}

// capBuffer keeps the last bytes written (a process's standard error).
type capBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.b = append(c.b, p...)
	if len(c.b) > 1<<20 {
		c.b = append(c.b[:0], c.b[len(c.b)-1<<19:]...)
	}
	return len(p), nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.b)
}

// peerProc is one incarnation of a sending or receiving process, started
// by the test (so it reads its standard output as it comes) in its own
// process group; it is killed by pid only.
type peerProc struct {
	role   string // "send" or "recv"
	host   int
	inc    uint32
	pid    int
	stdin  io.WriteCloser
	stderr capBuffer
	ready  chan struct{}
	done   chan struct{}
	killed atomic.Bool
	err    error // exit error, valid after done

	// Guarded by the nemesis' mutex.
	finished  bool
	submitted map[[2]int]uint64 // (dst, pri) -> messages submitted
	mem       [][2]uint64       // (heap in use, goroutines) samples
	debug     []string          // its state, asked for with "debug"
	started   time.Time
	ended     time.Time // when it was killed (zero while it runs)
}

func (p *peerProc) String() string {
	return fmt.Sprintf("%s inc %d on host%d (pid %d)", p.role, p.inc, p.host, p.pid)
}

// startPeer starts an incarnation of the peer command on h and feeds its
// output lines to line, in order, on a goroutine of its own.
func startPeer(h *netns.Host, bin, role string, inc uint32, args []string, line func(*peerProc, string)) (*peerProc, error) {
	p := &peerProc{role: role, host: h.Index, inc: inc, ready: make(chan struct{}), done: make(chan struct{}), submitted: map[[2]int]uint64{}, started: time.Now()}
	cmd := h.Command(bin, append([]string{role}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = &p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("host%d: start %s: %w", h.Index, role, err)
	}
	p.pid = cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var once sync.Once
		for sc.Scan() {
			l := sc.Text()
			if l == "READY" {
				once.Do(func() { close(p.ready) })
				continue
			}
			line(p, l)
		}
		io.Copy(io.Discard, stdout)
		p.err = cmd.Wait()
		p.stdin.Close()
		close(p.done)
	}()
	return p, nil
}

// kill sends SIGKILL to the incarnation's process group and waits for it.
func (p *peerProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.killed.Store(true)
	syscall.Kill(-p.pid, syscall.SIGKILL)
	<-p.done
}

// waitReady waits until the incarnation printed READY.
func (p *peerProc) waitReady(timeout time.Duration) error {
	select {
	case <-p.ready:
		return nil
	case <-p.done:
		return fmt.Errorf("%v exited before it was ready: %v\n%s", p, p.err, tail(p.stderr.String(), 20))
	case <-time.After(timeout):
		return fmt.Errorf("%v not ready after %v\n%s", p, timeout, tail(p.stderr.String(), 20))
	}
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// buildPeer builds the peer command into dir (without the race detector:
// the processes are many and the machine small).
func buildPeer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "nemesis-peer")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/ethergm/ethergm/tests/nemesis/peer")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build peer: %v\n%s", err, out)
	}
	return bin
}
