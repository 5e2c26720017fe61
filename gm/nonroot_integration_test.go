package gm_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethergm/ethergm/gm"
	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
	"golang.org/x/sys/unix"
)

// Environment of the port helper processes (portHelper).
const (
	envHelper      = "GM_PORT_HELPER" // role: "open", "hold", "recv" or "send"
	envHelperUnit  = "GM_PORT_HELPER_UNIT"
	envHelperPort  = "GM_PORT_HELPER_PORT"
	envHelperPeer  = "GM_PORT_HELPER_PEER" // "send": node id of the receiver
	envHelperTo    = "GM_PORT_HELPER_TO"   // "send": port of the receiver
	helperDeadline = 30 * time.Second
)

// portHelper is a test process that opens a port with the configuration
// of the environment (ETHERGM_HOST, ETHERGM_MAP, ETHERGM_STATE_DIR) and
// reports on standard output, one line each:
//
//	OPENERR <status> perm=<errors.Is(err, os.ErrPermission)> <message>
//	READY <node id> <pid>
//	GOT <message>      (recv: a message arrived; it answers "pong:<message>")
//	REPLY <message>    (send: the answer to its "ping" arrived)
//
// Role "open" exits after opening, "hold" keeps the port until its
// standard input closes, "recv" answers one message, "send" sends one
// and waits for the answer.
func portHelper(role string) int {
	time.AfterFunc(helperDeadline, func() {
		fmt.Println("TIMEOUT")
		os.Exit(4)
	})
	id, _ := strconv.Atoi(os.Getenv(envHelperPort))
	p, err := gm.Open(os.Getenv(envHelperUnit), id, "helper-"+role, &gm.Config{MapPoll: 20 * time.Millisecond})
	if err != nil {
		var st gm.Status
		errors.As(err, &st)
		fmt.Printf("OPENERR %s perm=%v %v\n", st.String(), errors.Is(err, os.ErrPermission), err)
		return 3
	}
	defer p.Close()
	fmt.Printf("READY %d %d\n", p.NodeID(), os.Getpid())
	switch role {
	case "hold":
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "recv", "send":
	default:
		return 0
	}
	size := gm.MinSizeForLength(64)
	if err := p.ProvideReceiveBuffer(make([]byte, 64), size, gm.LowPriority, 0); err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	status := make(chan gm.Status, 1)
	cb := func(_ *gm.Port, _ any, st gm.Status) { status <- st }
	if role == "send" {
		peer, _ := strconv.Atoi(os.Getenv(envHelperPeer))
		to, _ := strconv.Atoi(os.Getenv(envHelperTo))
		if err := p.SendWithCallback([]byte("ping"), size, 4, gm.LowPriority, gm.NodeID(peer), to, cb, nil); err != nil {
			fmt.Println("ERROR", err)
			return 1
		}
	}
	var got string
	for sent := role == "recv"; got == "" || !sent; {
		e := p.BlockingReceive()
		switch {
		case e.Type.IsRecv():
			got = string(e.Message)
			if role == "recv" {
				fmt.Println("GOT", got)
				reply := []byte("pong:" + got)
				if err := p.SendWithCallback(reply, size, len(reply), gm.LowPriority, e.SenderNode, e.SenderPort, cb, nil); err != nil {
					fmt.Println("ERROR", err)
					return 1
				}
				sent = false
			}
		case e.Type == gm.PortClosedEvent:
			return 1
		default:
			p.Unknown(e)
		}
		select {
		case st := <-status:
			if st != gm.Success {
				fmt.Println("ERROR send:", st)
				return 1
			}
			sent = true
		default:
		}
	}
	if role == "send" {
		fmt.Println("REPLY", got)
	}
	return 0
}

// helperProc is a running portHelper.
type helperProc struct {
	cmd   *exec.Cmd
	lines chan string
	stdin io.WriteCloser
	t     *testing.T
}

// expect returns the next line of output that starts with one of the
// prefixes, and fails the test on any other report, on exit or after a
// timeout.
func (h *helperProc) expect(prefix string) string {
	h.t.Helper()
	timeout := time.After(helperDeadline + 5*time.Second)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				h.t.Fatalf("helper exited before %s", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
			if strings.HasPrefix(l, "OPENERR") || strings.HasPrefix(l, "ERROR") || strings.HasPrefix(l, "TIMEOUT") {
				h.t.Fatalf("helper: %s (waiting for %s)", l, prefix)
			}
		case <-timeout:
			h.t.Fatalf("helper: no %s", prefix)
		}
	}
}

// TestIntegrationNonRoot runs ports as an unprivileged user (uid and gid
// 65534, no groups) in a copy of the test binary: with CAP_NET_RAW and
// CAP_NET_ADMIN as ambient capabilities (setpriv) two hosts exchange
// messages; with them as file capabilities (setcap on the binary, as the
// README says, or the same attribute written directly if setcap is
// missing) too; without them Open fails with PermissionDenied
// (errors.Is(err, os.ErrPermission)). The processes name a state
// directory that does not exist: opening a port writes nothing. It also
// checks port ownership across processes: a port held by another process
// is Busy (naming its pid), ListPorts shows its pid, and it is free again
// once that process is killed.
func TestIntegrationNonRoot(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed to run processes with ambient capabilities")
	}
	// A directory the unprivileged user can enter (t.TempDir's are 0700),
	// with a copy of this test binary and the node map.
	dir, err := os.MkdirTemp("", "egm-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gm.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	mapPath, err := gmmap.Write(c, filepath.Join(dir, "map"))
	if err != nil {
		t.Fatal(err)
	}
	noState := filepath.Join(dir, "no-such-state-dir")

	const nobody = "65534"
	unprivileged := []string{"--reuid=" + nobody, "--regid=" + nobody, "--clear-groups"}
	ambient := append(unprivileged[:3:3], "--inh-caps=+net_raw,+net_admin", "--ambient-caps=+net_raw,+net_admin")
	start := func(t *testing.T, h *netns.Host, privs []string, prog, role string, port int, env ...string) *helperProc {
		t.Helper()
		args := append([]string{}, privs...)
		if privs != nil {
			args = append([]string{setpriv}, args...)
		}
		args = append(args, prog, "-test.run=^$")
		cmd := h.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), envHelper+"="+role, envHelperUnit+"="+h.Ifaces[0], envHelperPort+"="+strconv.Itoa(port),
			gm.EnvHost+"="+h.Name, gm.EnvMap+"="+mapPath, gm.EnvStateDir+"="+noState)
		cmd.Env = append(cmd.Env, env...)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		hp := &helperProc{cmd: cmd, lines: make(chan string, 16), stdin: in, t: t}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				hp.lines <- sc.Text()
			}
			close(hp.lines)
		}()
		t.Cleanup(func() {
			in.Close()
			cmd.Process.Kill()
			cmd.Wait()
		})
		return hp
	}
	h0, h1 := c.Hosts[0], c.Hosts[1]
	exchange := func(t *testing.T, privs []string, prog string) {
		recv := start(t, h1, privs, prog, "recv", 4)
		if l := recv.expect("READY"); !strings.HasPrefix(l, "READY 2 ") {
			t.Fatalf("receiver: %s, want node id 2", l)
		}
		send := start(t, h0, privs, prog, "send", 2, envHelperPeer+"=2", envHelperTo+"=4")
		send.expect("READY 1 ")
		if l := recv.expect("GOT"); l != "GOT ping" {
			t.Fatalf("receiver: %s", l)
		}
		if l := send.expect("REPLY"); l != "REPLY pong:ping" {
			t.Fatalf("sender: %s", l)
		}
		if err := send.cmd.Wait(); err != nil {
			t.Fatalf("sender: %v", err)
		}
		if err := recv.cmd.Wait(); err != nil {
			t.Fatalf("receiver: %v", err)
		}
		if _, err := os.Stat(noState); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the state directory appeared: %v", err)
		}
	}

	t.Run("WithoutCapabilities", func(t *testing.T) {
		h := start(t, h0, unprivileged, bin, "open", 2)
		l := h.expect("OPENERR")
		if !strings.HasPrefix(l, "OPENERR GM_PERMISSION_DENIED perm=true ") || !strings.Contains(l, "CAP_NET_RAW") {
			t.Fatalf("unprivileged open: %s\nwant GM_PERMISSION_DENIED wrapping os.ErrPermission, naming CAP_NET_RAW", l)
		}
	})
	t.Run("AmbientCapabilities", func(t *testing.T) { exchange(t, ambient, bin) })
	t.Run("FileCapabilities", func(t *testing.T) {
		capBin := filepath.Join(dir, "gm-caps.test")
		if err := os.WriteFile(capBin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		if setcap, err := exec.LookPath("setcap"); err == nil {
			if out, err := exec.Command(setcap, "cap_net_raw,cap_net_admin+ep", capBin).CombinedOutput(); err != nil {
				t.Fatalf("setcap: %v: %s", err, out)
			}
		} else if err := setFileCaps(capBin); err != nil {
			// What setcap writes, without libcap2-bin.
			t.Fatalf("setting file capabilities: %v", err)
		}
		exchange(t, unprivileged, capBin)
	})
	t.Run("Ownership", func(t *testing.T) {
		holder := start(t, h0, ambient, bin, "hold", 6)
		holder.expect("READY")
		pid := holder.cmd.Process.Pid
		cfg := &gm.Config{Host: h0.Name, MapFile: mapPath, StateDir: t.TempDir()}
		err := h0.Do(func() error { _, err := gm.Open(h0.Ifaces[0], 6, "second", cfg); return err })
		want := fmt.Sprintf("port 6 of unit eth0 is open in process %d (gm.test, port name \"helper-hold\")", pid)
		if !errors.Is(err, gm.Busy) || !strings.Contains(err.Error(), want) {
			t.Fatalf("open of a held port: %v\nwant Busy saying %q", err, want)
		}
		var ports []gm.PortInfo
		if err := h0.Do(func() (err error) { ports, err = gm.ListPorts(h0.Ifaces[0]); return err }); err != nil {
			t.Fatal(err)
		}
		if len(ports) != 1 || ports[0].Port != 6 || ports[0].PID != pid || ports[0].Name != "helper-hold" || ports[0].NodeID != 1 || ports[0].Host != h0.Name || ports[0].SendTokens != 61 {
			t.Fatalf("ListPorts = %+v, want port 6 of pid %d", ports, pid)
		}
		// Killed, not closed: the kernel frees the port.
		holder.cmd.Process.Signal(syscall.SIGKILL)
		holder.cmd.Wait()
		var p *gm.Port
		if err := h0.Do(func() (err error) { p, err = gm.Open(h0.Ifaces[0], 6, "second", cfg); return err }); err != nil {
			t.Fatalf("open after the holder died: %v", err)
		}
		p.Close()
	})
}

// setFileCaps gives path the file capabilities cap_net_raw,cap_net_admin+ep
// as setcap(8) does: a version 2 security.capability attribute
// (struct vfs_cap_data, little-endian on the machines EtherGM runs on).
func setFileCaps(path string) error {
	const (
		capRevision2 = 0x02000000
		capEffective = 0x000001
		capNetAdmin  = 12
		capNetRaw    = 13
	)
	var b [20]byte
	binary.LittleEndian.PutUint32(b[0:], capRevision2|capEffective)
	binary.LittleEndian.PutUint32(b[4:], 1<<capNetAdmin|1<<capNetRaw) // permitted, low word
	return unix.Setxattr(path, "security.capability", b[:], 0)
}
