//go:build linux

// Package ctest runs libgm's C test programs (testdata/*.c): GM programs
// written against GM 2.x's documented API, compiled with gcc against the
// installed gm.h and libgm, the way a GM user builds them:
//
//	gcc -Wall -Wextra -Werror prog.c $(pkg-config --cflags --libs gm)
//
// Once per run it builds libgm twice (scripts/libgm.sh build: plain, and
// with GOFLAGS=-asan), installs each into a temporary prefix
// (scripts/libgm.sh install) and compiles every program three ways: plain
// against the plain libgm, with AddressSanitizer against the -asan libgm,
// and pingpong once more linked statically against the plain libgm.a.
// TestC... tests need no network; TestIntegrationC... tests run the
// programs on network namespace hosts (internal/netns), between two hosts
// and with both processes on one host. Each program checks everything
// itself and exits 0 only if every check passed; the tests also fail on any
// sanitizer report in the output.
//
// # AddressSanitizer and the Go runtime
//
// The "asan" programs are compiled and linked with -fsanitize=address and
// linked against a libgm built with `go build -asan` (GOFLAGS=-asan
// scripts/libgm.sh build). That is what makes the check cover libgm too:
// with -asan, cgo compiles libgm's C files (api.c, util.c) with
// -fsanitize=address and the Go compiler instruments the Go code's loads
// and stores, so a write by the library past the end of a program's buffer
// (a message longer than the malloc'd receive buffer it lands in, a get
// into too short a local buffer) is reported where it happens. Against the
// plain libgm, ASan would only see the programs' own accesses and the
// intercepted libc calls: the Go side copies into C memory unchecked
// (TestIntegrationCSanitizerCanary shows both: the canary program's
// deliberate errors are reported, among them a write by the library into
// a too-short receive buffer).
//
// No ASan check is turned off: ASAN_OPTIONS (asanOptions) only makes
// LeakSanitizer's default explicit (detect_leaks=1, so every program also
// frees what it allocates) and gives reports a distinct exit status. The
// Go runtime's own memory is mmap'd, not malloc'd, so it neither leaks nor
// trips ASan; its signal handlers coexist with ASan's (the runtime installs
// its handlers with SA_ONSTACK and forwards signals raised in C code to the
// handler installed before it, ASan's).
//
// Building libgm takes a minute or two per variant (the first -asan build
// also builds the standard library with -asan: several minutes; the Go
// build cache keeps it). While working on libgm's C side,
// ETHERGM_CTEST_LIBGM=OUT uses the output of earlier builds instead:
// `scripts/libgm.sh build OUT` and `GOFLAGS=-asan scripts/libgm.sh build
// OUT-asan` (each is still installed into a temporary prefix and every
// program is still compiled against it).
package ctest

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
	"github.com/ethergm/ethergm/internal/netns/gmmap"
)

// asanOptions is ASAN_OPTIONS for the sanitized programs (see the package
// comment).
const asanOptions = "detect_leaks=1:exitcode=66"

// variant is one way of building the programs.
type variant struct {
	name string
	asan bool
}

var variants = []variant{{"plain", false}, {"asan", true}}

// The build, once per test process.
var (
	buildOnce sync.Once
	buildErr  error
	work      string // temporary directory: build-*/, prefix-*/, bin/
)

func TestMain(m *testing.M) {
	code := m.Run()
	if work != "" {
		os.RemoveAll(work)
	}
	os.Exit(code)
}

// repoRoot is the module's root directory (this package is libgm/ctest).
func repoRoot() string {
	d, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return d
}

// needTools fails t with one readable line if gcc or pkg-config is missing.
func needTools(t *testing.T) {
	t.Helper()
	for _, c := range []string{"gcc", "pkg-config"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s not found: run scripts/deps.sh test (it installs gcc and pkg-config)", c)
		}
	}
}

// programs returns the names of the C programs in testdata (without .c).
func programs() ([]string, error) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.c"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".c"))
	}
	sort.Strings(names)
	return names, nil
}

func run(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// build builds and installs libgm and compiles every program, once.
func build(t *testing.T) {
	t.Helper()
	needTools(t)
	buildOnce.Do(func() {
		work, buildErr = os.MkdirTemp("", "libgm-ctest-")
		if buildErr != nil {
			return
		}
		buildErr = buildAll()
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

func buildAll() error {
	root := repoRoot()
	names, err := programs()
	if err != nil {
		return err
	}
	src, err := filepath.Abs("testdata")
	if err != nil {
		return err
	}
	const cflags = "-Wall -Wextra -Werror -O2 -g"
	for _, v := range variants {
		// libgm, built and installed.
		out := filepath.Join(work, "build-"+v.name)
		pfx := filepath.Join(work, "prefix-"+v.name)
		var env []string
		if v.asan {
			env = []string{"GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -asan")}
		}
		if dir := os.Getenv("ETHERGM_CTEST_LIBGM"); dir != "" {
			out = dir // built already (see the package comment)
			if v.asan {
				out += "-asan"
			}
		} else if err := run(root, env, "scripts/libgm.sh", "build", out, pfx); err != nil {
			return fmt.Errorf("build libgm (%s): %w", v.name, err)
		}
		if err := run(root, nil, "scripts/libgm.sh", "install", out, pfx, pfx); err != nil {
			return err
		}
		// The programs, as a user types it; the rpath finds libgm.so in
		// the temporary prefix.
		pc := []string{"PKG_CONFIG_PATH=" + filepath.Join(pfx, "lib", "pkgconfig")}
		dir := filepath.Join(work, "bin", v.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		extra := ""
		if v.asan {
			extra = "-fsanitize=address -fno-omit-frame-pointer"
		}
		for _, n := range names {
			line := fmt.Sprintf(`gcc %s %s -o %s %s $(pkg-config --cflags --libs gm) -Wl,-rpath,"$(pkg-config --variable=libdir gm)" -lpthread`,
				cflags, extra, filepath.Join(dir, n), filepath.Join(src, n+".c"))
			if err := run(src, pc, "sh", "-c", line); err != nil {
				return fmt.Errorf("compile %s (%s): %w", n, v.name, err)
			}
		}
		if v.asan {
			continue
		}
		// pingpong linked statically against the plain libgm.a.
		dir = filepath.Join(work, "bin", "static")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		line := fmt.Sprintf(`gcc %s -o %s %s $(pkg-config --cflags gm) "$(pkg-config --variable=libdir gm)/libgm.a" $(pkg-config --libs-only-other --static gm) -lpthread`,
			cflags, filepath.Join(dir, "pingpong"), filepath.Join(src, "pingpong.c"))
		if err := run(src, pc, "sh", "-c", line); err != nil {
			return fmt.Errorf("compile pingpong against libgm.a: %w", err)
		}
	}
	return nil
}

// bin returns the path of program name built as variant v ("static" is
// pingpong against libgm.a).
func bin(v string, name string) string { return filepath.Join(work, "bin", v, name) }

// sanitizerReport matches the first line of an ASan or LSan report.
var sanitizerReport = regexp.MustCompile(`(?m)^(==\d+==ERROR: \w+Sanitizer|SUMMARY: \w+Sanitizer)`)

// checkOutput fails t if out holds a sanitizer report.
func checkOutput(t *testing.T, what, out string) {
	t.Helper()
	if sanitizerReport.MatchString(out) {
		t.Errorf("%s: sanitizer report:\n%s", what, out)
	}
}

// progEnv is the environment of a program run as variant v.
func progEnv(v variant) []string {
	env := []string{"GODEBUG=cgocheck=1"}
	if v.asan {
		env = append(env, "ASAN_OPTIONS="+asanOptions)
	}
	return env
}

// Local (no netns) runs.

// runLocal runs a program of variant v here and returns its output; it
// fails t if the program fails or reports a sanitizer error.
func runLocal(t *testing.T, v variant, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(v.name, name), args...)
	cmd.Env = append(os.Environ(), progEnv(v)...)
	out, err := cmd.CombinedOutput()
	checkOutput(t, name, string(out))
	if err != nil {
		t.Fatalf("%s %s (%s): %v\n%s", name, strings.Join(args, " "), v.name, err, out)
	}
	return string(out)
}

func TestCPerror(t *testing.T) {
	build(t)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			out := runLocal(t, v, "perror")
			if !strings.Contains(out, "perror: PASS") {
				t.Fatalf("no PASS:\n%s", out)
			}
		})
	}
}

func TestCUtil(t *testing.T) {
	build(t)
	if _, err := os.Stat(filepath.Join("testdata", "util_test.c")); err != nil {
		t.Fatalf("testdata/util_test.c: %v", err)
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			out := runLocal(t, v, "util_test")
			t.Log(out)
		})
	}
}

// TestCStaticLink: the pingpong linked against libgm.a needs no libgm.so,
// the others do.
func TestCStaticLink(t *testing.T) {
	build(t)
	libs := func(path string) []string {
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		l, err := f.ImportedLibraries()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	has := func(l []string) bool {
		for _, s := range l {
			if strings.HasPrefix(s, "libgm.so") {
				return true
			}
		}
		return false
	}
	if l := libs(bin("static", "pingpong")); has(l) {
		t.Errorf("pingpong linked against libgm.a needs %v", l)
	}
	if l := libs(bin("plain", "pingpong")); !has(l) {
		t.Errorf("pingpong linked with -lgm does not need libgm.so: %v", l)
	}
	if l := libs(bin("asan", "pingpong")); !has(l) {
		t.Errorf("the asan pingpong does not need libgm.so: %v", l)
	}
}

// Runs on netns hosts.

// cluster is a netns cluster with its node map.
type cluster struct {
	c       *netns.Cluster
	mapPath string
}

func newCluster(t *testing.T, hosts int) *cluster {
	t.Helper()
	build(t)
	c := netns.New(t, netns.Options{Hosts: hosts})
	return &cluster{c: c, mapPath: gmmap.MustWrite(t, c)}
}

// start starts program name (variant v, or "static") on h.
func (cl *cluster) start(t *testing.T, h *netns.Host, v variant, binVariant, name string, args ...string) *netns.Proc {
	t.Helper()
	env := append([]string{"ETHERGM_HOST=" + h.Name, "ETHERGM_STATE_DIR=" + h.Dir, "ETHERGM_MAP=" + cl.mapPath, "ETHERGM_UNIT=eth0"}, progEnv(v)...)
	p, err := h.Start("env", append(append(env, bin(binVariant, name)), args...)...)
	if err != nil {
		t.Fatal(err)
	}
	// Killed by process group id (Kill waits), even if the test fails.
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

// wait waits for p to exit, at most timeout; it returns p's output and
// fails t if p failed, timed out or reported a sanitizer error.
func wait(t *testing.T, p *netns.Proc, timeout time.Duration) string {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(timeout):
		_ = p.Kill()
		t.Fatalf("%v: still running after %v, killed:\n%s", p, timeout, p.Output())
	}
	out := p.Output()
	checkOutput(t, p.String(), out)
	if err := p.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Errorf("%v: exit status %d:\n%s", p, ee.ExitCode(), out)
		} else {
			t.Errorf("%v: %v:\n%s", p, err, out)
		}
	}
	return out
}

// waitReady waits until server p printed "ready" (its port is open and its
// buffers are provided).
func waitReady(t *testing.T, p *netns.Proc) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(p.Output(), "ready\n") {
		select {
		case <-p.Done():
			t.Fatalf("%v exited before it was ready: %v\n%s", p, p.Wait(), p.Output())
		case <-deadline:
			_ = p.Kill()
			t.Fatalf("%v not ready after 30 s:\n%s", p, p.Output())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// pair describes a two-process run: the server on srv, the client on cli
// (the same host for a one-host run).
type pair struct {
	srv, cli         int // host indexes
	srvPort, cliPort int
	cliBin           string // "" means the variant's build
}

// runPair runs program name as server and client with extra arguments and
// returns the client's and the server's output.
func (cl *cluster) runPair(t *testing.T, v variant, name string, pr pair, extra ...string) (string, string) {
	t.Helper()
	hs, hc := cl.c.Hosts[pr.srv], cl.c.Hosts[pr.cli]
	args := func(role string, peer *netns.Host, mine, theirs int) []string {
		return append([]string{role, peer.Name, strconv.Itoa(mine), strconv.Itoa(theirs)}, extra...)
	}
	srv := cl.start(t, hs, v, v.name, name, args("server", hc, pr.srvPort, pr.cliPort)...)
	waitReady(t, srv)
	cb := pr.cliBin
	if cb == "" {
		cb = v.name
	}
	cli := cl.start(t, hc, v, cb, name, args("client", hs, pr.cliPort, pr.srvPort)...)
	cout := wait(t, cli, 3*time.Minute)
	sout := wait(t, srv, 30*time.Second)
	if t.Failed() {
		t.Logf("server output:\n%s", sout)
	}
	return cout, sout
}

// The usual placements: both processes on host0, or the server on host1.
var (
	oneHost = pair{srv: 0, cli: 0, srvPort: 2, cliPort: 4}
	twoHost = pair{srv: 1, cli: 0, srvPort: 2, cliPort: 4}
	// samePort: both on port 5, so that their messages are PEER events.
	samePort = pair{srv: 1, cli: 0, srvPort: 5, cliPort: 5}
)

// forPairs runs fn for every variant and placement as subtests.
func forPairs(t *testing.T, cl *cluster, pairs map[string]pair, fn func(t *testing.T, v variant, pr pair)) {
	names := make([]string, 0, len(pairs))
	for n := range pairs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, v := range variants {
		for _, n := range names {
			t.Run(v.name+"/"+n, func(t *testing.T) { fn(t, v, pairs[n]) })
		}
	}
}

var rttLine = regexp.MustCompile(`(?m)^rtt_p50_us=(\d+\.\d+)$`)

// rttP50 returns the rtt_p50_us value that pingpong printed.
func rttP50(t *testing.T, out string) float64 {
	t.Helper()
	m := rttLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no rtt_p50_us line:\n%s", out)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil || f <= 0 {
		t.Fatalf("rtt_p50_us=%s", m[1])
	}
	return f
}

func TestIntegrationCPingPong(t *testing.T) {
	cl := newCluster(t, 2)
	forPairs(t, cl, map[string]pair{"onehost": oneHost, "twohost": twoHost}, func(t *testing.T, v variant, pr pair) {
		for _, l := range []string{"8", "4000"} {
			out, _ := cl.runPair(t, v, "pingpong", pr, "1000", l, "100")
			t.Logf("len %s: rtt_p50_us=%.2f", l, rttP50(t, out))
		}
	})
	// The client linked statically against libgm.a.
	t.Run("static/twohost", func(t *testing.T) {
		pr := twoHost
		pr.cliBin = "static"
		out, _ := cl.runPair(t, variants[0], "pingpong", pr, "1000", "8", "100")
		t.Logf("static: rtt_p50_us=%.2f", rttP50(t, out))
	})
}

func TestIntegrationCAllSize(t *testing.T) {
	cl := newCluster(t, 2)
	forPairs(t, cl, map[string]pair{"onehost": oneHost, "twohost": twoHost, "twohost-peer": samePort}, func(t *testing.T, v variant, pr pair) {
		max := "20"
		if pr == oneHost {
			max = "16"
		}
		out, _ := cl.runPair(t, v, "allsize", pr, max)
		t.Log(strings.TrimSpace(out))
	})
}

// runOnBoth runs program name (server and client, with extra arguments)
// on one host and on two, plain and under AddressSanitizer, and logs the
// client's output.
func runOnBoth(t *testing.T, name string, extra ...string) {
	t.Helper()
	cl := newCluster(t, 2)
	forPairs(t, cl, map[string]pair{"onehost": oneHost, "twohost": twoHost}, func(t *testing.T, v variant, pr pair) {
		out, _ := cl.runPair(t, v, name, pr, extra...)
		t.Log(strings.TrimSpace(out))
	})
}

func TestIntegrationCCallbacks(t *testing.T) {
	runOnBoth(t, "callbacks")
}

func TestIntegrationCTags(t *testing.T) {
	cl := newCluster(t, 2)
	forPairs(t, cl, map[string]pair{"onehost": oneHost, "twohost": twoHost, "twohost-peer": samePort}, func(t *testing.T, v variant, pr pair) {
		cl.runPair(t, v, "tags", pr)
	})
}

// TestIntegrationCDatagram: gm_datagram_send(_4) delivered as ordinary
// receive events, verified, none twice; every callback once with success.
func TestIntegrationCDatagram(t *testing.T) {
	runOnBoth(t, "datagram")
}

func TestIntegrationCTokens(t *testing.T) {
	runOnBoth(t, "tokens")
}

func TestIntegrationCDropResume(t *testing.T) {
	runOnBoth(t, "dropresume", "6")
}

func TestIntegrationCRDMA(t *testing.T) {
	cl := newCluster(t, 2)
	forPairs(t, cl, map[string]pair{"onehost": oneHost, "twohost": twoHost}, func(t *testing.T, v variant, pr pair) {
		out, _ := cl.runPair(t, v, "rdma", pr)
		t.Log(strings.TrimSpace(out))
	})
}

func TestIntegrationCThread(t *testing.T) {
	cl := newCluster(t, 2)
	forPairs(t, cl, map[string]pair{"onehost": oneHost, "twohost": twoHost}, func(t *testing.T, v variant, pr pair) {
		out, _ := cl.runPair(t, v, "thread", pr, "20")
		t.Log(strings.TrimSpace(out))
	})
}

func TestIntegrationCAlarms(t *testing.T) {
	cl := newCluster(t, 1)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			out := wait(t, cl.start(t, cl.c.Hosts[0], v, v.name, "alarms", "2"), time.Minute)
			t.Log(strings.TrimSpace(out))
		})
	}
}

// TestIntegrationCBusy: a port held by another process (a pingpong server
// waiting for its client) is busy.
func TestIntegrationCBusy(t *testing.T) {
	cl := newCluster(t, 1)
	h := cl.c.Hosts[0]
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			holder := cl.start(t, h, v, v.name, "pingpong", "server", h.Name, "2", "4", "1", "8", "0")
			waitReady(t, holder)
			wait(t, cl.start(t, h, v, v.name, "busy", "2"), time.Minute)
			// The holder waits for a ping that never comes: stop it.
			if err := holder.Kill(); err != nil {
				t.Fatal(err)
			}
			if out := holder.Output(); strings.Contains(out, "FAIL") {
				t.Errorf("holder: %s", out)
			}
		})
	}
}

// TestIntegrationCSanitizerCanary: the sanitized build reports the canary
// program's deliberate errors: a heap overflow and a leak in C, and libgm's
// Go code writing past a receive buffer shorter than its size class.
// Without it, a suite with no reports could also mean a sanitizer that
// does not look (or does not see into libgm).
func TestIntegrationCSanitizerCanary(t *testing.T) {
	cl := newCluster(t, 1)
	h := cl.c.Hosts[0]
	asan := variants[1]
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"heap"}, []string{"ERROR: AddressSanitizer: heap-buffer-overflow", "canary.c"}},
		{[]string{"leak"}, []string{"ERROR: LeakSanitizer: detected memory leaks", "64 byte(s) leaked"}},
		{[]string{"short", "2"}, []string{"ERROR: AddressSanitizer", "0 bytes to the right of 100-byte region"}},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			p := cl.start(t, h, asan, asan.name, "canary", tc.args...)
			select {
			case <-p.Done():
			case <-time.After(time.Minute):
				t.Fatalf("%v: still running:\n%s", p, p.Output())
			}
			out := p.Output()
			var ee *exec.ExitError
			if err := p.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 66 {
				t.Errorf("exit: %v, want status 66 (ASan's, from asanOptions)", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in the output:\n%s", w, out)
				}
			}
		})
	}
}
