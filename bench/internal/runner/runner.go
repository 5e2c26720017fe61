// Package runner starts and stops the benchmark programs (ours, sockperf,
// NetPIPE) on netns hosts, pinned to a CPU with taskset, logging every
// command line and output. It is shared by the benchmark drivers
// bench/cmd/egm-bench and bench/allsize.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
)

// Runner runs commands on netns hosts. The zero Nice leaves the nice level
// unchanged.
type Runner struct {
	Log  io.Writer // receives every command line and output
	Nice int       // nice level of every command (0: unchanged)
}

// Pinned returns the command line that runs name pinned to cpu (taskset),
// at the configured nice level.
func (r *Runner) Pinned(cpu int, name string, args ...string) (string, []string) {
	argv := append([]string{"-c", strconv.Itoa(cpu), name}, args...)
	if r.Nice == 0 {
		return "taskset", argv
	}
	return "nice", append([]string{"-n", strconv.Itoa(r.Nice), "taskset"}, argv...)
}

// StartServer starts name on h pinned to cpu and waits up to 10 s until its
// output contains ready (if not empty).
func (r *Runner) StartServer(h *netns.Host, cpu int, ready, name string, args ...string) (*netns.Proc, error) {
	cmd, argv := r.Pinned(cpu, name, args...)
	fmt.Fprintf(r.Log, "$ [%s] %s %s &\n", h.Name, cmd, strings.Join(argv, " "))
	p, err := h.Start(cmd, argv...)
	if err != nil {
		return nil, err
	}
	if ready == "" {
		return p, nil
	}
	deadline := time.After(10 * time.Second)
	for !strings.Contains(p.Output(), ready) {
		select {
		case <-p.Done():
			out := p.Output()
			fmt.Fprint(r.Log, out)
			return nil, fmt.Errorf("%s exited before it was ready: %v: %s", name, p.Wait(), LastLine(out))
		case <-deadline:
			_ = p.Kill()
			return nil, fmt.Errorf("%s not ready after 10s: %s", name, LastLine(p.Output()))
		case <-time.After(10 * time.Millisecond):
		}
	}
	return p, nil
}

// StopServer signals p's process group with sig unless it has exited, waits
// up to 5 s (then kills it), logs and returns its output.
func (r *Runner) StopServer(p *netns.Proc, sig syscall.Signal) string {
	select {
	case <-p.Done():
	default:
		_ = syscall.Kill(-p.Pid(), sig)
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second):
			_ = p.Kill()
		}
	}
	out := p.Output()
	fmt.Fprintf(r.Log, "--- server %s output:\n%s\n", p.Args[0], out)
	return out
}

// WaitServer waits up to d for p to exit by itself (a receiver that saw the
// end of its stream), then kills it; it logs and returns its output.
func (r *Runner) WaitServer(p *netns.Proc, d time.Duration) (string, error) {
	var err error
	select {
	case <-p.Done():
		err = p.Wait()
	case <-time.After(d):
		_ = p.Kill()
		err = fmt.Errorf("%s did not finish within %v", p.Args[0], d)
	}
	out := p.Output()
	fmt.Fprintf(r.Log, "--- server %s output:\n%s\n", p.Args[0], out)
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, LastLine(out))
	}
	return out, nil
}

// RunClient runs name on h pinned to cpu with a timeout and returns its
// combined output.
func (r *Runner) RunClient(h *netns.Host, cpu int, timeout time.Duration, name string, args ...string) (string, error) {
	cmd, argv := r.Pinned(cpu, name, args...)
	fmt.Fprintf(r.Log, "$ [%s] %s %s\n", h.Name, cmd, strings.Join(argv, " "))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := h.CommandContext(ctx, cmd, argv...).CombinedOutput()
	fmt.Fprintf(r.Log, "%s\n", out)
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("%s timed out after %v", name, timeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), fmt.Errorf("%s: %v: %s", name, err, LastLine(string(out)))
	}
	return string(out), err
}

// NewResultsDir creates the folder parent/<prefix>-<date> of one run and
// the log file name in it. The caller closes the log.
func NewResultsDir(parent, prefix, name string, start time.Time) (dir string, log *os.File, err error) {
	dir = filepath.Join(parent, prefix+"-"+start.Format("20060102-150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	log, err = os.Create(filepath.Join(dir, name))
	return dir, log, err
}

// retryClientFor bounds how long RetryClient keeps trying: a server may
// take seconds to start listening on a loaded machine.
var retryClientFor = 20 * time.Second

// RetryClient runs a client (run) against srv, a server that prints
// nothing once it listens (NPtcp): every 100 ms, until run succeeds or
// retryClientFor has passed. It gives up at once if the server has exited.
func RetryClient(srv *netns.Proc, run func() error) error {
	deadline := time.Now().Add(retryClientFor)
	for tries := 1; ; tries++ {
		time.Sleep(100 * time.Millisecond)
		err := run()
		if err == nil {
			return nil
		}
		select {
		case <-srv.Done():
			return fmt.Errorf("server exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d tries in %v: %w", tries, retryClientFor, err)
		}
	}
}

// LastLine returns the last non-empty line of s.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// CheckTools fails with one line naming the programs of tools that are not
// in PATH.
func CheckTools(tools ...string) error {
	var missing []string
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not found in PATH: apt-get install -y sockperf netpipe-tcp util-linux coreutils iproute2 (make bench does this)",
			strings.Join(missing, ", "))
	}
	return nil
}

// GoTool returns the go command: from PATH, else where the project's
// toolchain lives (sudo drops it from PATH).
func GoTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	const p = "/usr/local/go/bin/go"
	if _, err := os.Stat(p); err != nil {
		return "", errors.New("no Go toolchain to build the benchmark programs: pass prebuilt ones (-bin DIR)")
	}
	return p, nil
}

// GoBuild builds the packages pkgs (import paths) of this repository with
// goTool and CGO_ENABLED=0 into the folder out.
func GoBuild(goTool, out string, pkgs ...string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(goTool, append([]string{"build", "-o", out + string(filepath.Separator)}, pkgs...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s (run from the repository, or pass -bin DIR): %v: %s",
			strings.Join(pkgs, " "), err, strings.TrimSpace(string(o)))
	}
	return nil
}

// StopOnSignal returns a flag that SIGINT or SIGTERM raises, and the
// function that stops listening. Its handler keeps the driver alive after
// the netns package's handler has removed the clusters and re-raised the
// signal, so that the driver stops cleanly between measurements.
func StopOnSignal() (*atomic.Bool, func()) {
	var stop atomic.Bool
	c := make(chan os.Signal, 2)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for range c {
			stop.Store(true)
		}
	}()
	return &stop, func() { signal.Stop(c) }
}
