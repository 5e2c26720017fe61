// Package cmd_test checks that every command in cmd/ follows the command-line
// convention of package internal/cli: it builds each command found under
// cmd/ (new commands are covered without changing this file) and runs it
// with bad input, --help and --version, checking the messages and the exit
// statuses. None of these cases may need root, an interface or a node map:
// when the test runs as root the commands run as an unprivileged user.
package cmd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testVersion is linked into the commands, as `make install` does.
const testVersion = "v0.0.0-clitest"

// commands returns the names of the main packages under cmd/.
func commands(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		pkg, err := build.ImportDir(e.Name(), 0)
		if err != nil {
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				continue
			}
			t.Fatalf("cmd/%s: %v", e.Name(), err)
		}
		if pkg.Name == "main" {
			names = append(names, e.Name())
		}
	}
	if len(names) < 3 {
		t.Fatalf("found only the commands %v under cmd/", names)
	}
	return names
}

// buildAll builds the commands into a folder every user can read.
func buildAll(t *testing.T, names []string) string {
	t.Helper()
	// Not t.TempDir: its parent is private to the test's user.
	dir, err := os.MkdirTemp("", "egm-clitest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"build", "-o", dir + "/", "-ldflags", "-X github.com/ethergm/ethergm/internal/cli.Version=" + testVersion}
	for _, n := range names {
		args = append(args, "./"+n)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs bin with args as an unprivileged user (when the test is root),
// with no EtherGM settings in the environment.
func run(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = os.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETHERGM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %q did not exit within 20 s (bad input must be rejected before any work)", filepath.Base(bin), args)
	}
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", bin, err)
	}
	return r
}

// optionLine matches an option of the help text: "-v, --verbose",
// "--port PORT", "--json[=FILE]".
var optionLine = regexp.MustCompile(`(?m)^\s+(?:-(\w), )?--([a-z0-9-]+)(\[=[A-Z_-]+\]| [A-Z][A-Z_-]*)?(?:\s|$)`)

// option is an option listed by --help.
type option struct {
	short, name, value string // value: "" for a switch, "N", "PORT", "[=FILE]"...
}

func helpOptions(help string) map[string]option {
	opts := map[string]option{}
	for _, m := range optionLine.FindAllStringSubmatch(help, -1) {
		opts[m[2]] = option{short: m[1], name: m[2], value: strings.TrimSpace(m[3])}
	}
	return opts
}

// Names that mean one of the convention's things under another name.
var wrongNames = map[string]string{
	"i": "--unit", "iface": "--unit", "interface": "--unit", "if": "--unit",
	"peer": "--remote-host", "to": "--remote-host or --remote-mac", "remote": "--remote-host", "server": "--remote-host",
	"server-port": "--remote-port", "to-port": "--remote-port", "from-port": "--port",
	"host": "--hostname or --remote-host", "map": "--map-file", "mapfile": "--map-file", "state": "--state-dir",
	"statedir": "--state-dir", "capture": "--pcap", "debug": "--verbose",
}

func TestCommandLines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every command")
	}
	names := commands(t)
	dir := buildAll(t, names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(dir, name)
			usageError := func(r result, args []string, want ...string) {
				t.Helper()
				if r.code != 2 {
					t.Errorf("%s %q: exit status %d, want 2 (usage error); stderr:\n%s", name, args, r.code, r.stderr)
				}
				if r.stdout != "" {
					t.Errorf("%s %q: wrote to standard output:\n%s", name, args, r.stdout)
				}
				lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
				if len(lines) != 2 || !strings.HasPrefix(lines[0], name+": ") || lines[1] != "Try '"+name+" --help' for more information." {
					t.Errorf("%s %q: stderr is not \"%s: <message>\" and the --help pointer:\n%s", name, args, name, r.stderr)
				}
				for _, w := range want {
					if !strings.Contains(lines[0], w) {
						t.Errorf("%s %q: message %q lacks %q", name, args, lines[0], w)
					}
				}
			}

			// --help and -h: the help on standard output, exit 0.
			var help string
			for _, arg := range []string{"--help", "-h"} {
				r := run(t, bin, arg)
				if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "Usage: "+name+" ") {
					t.Fatalf("%s %s: exit status %d, stdout:\n%s\nstderr:\n%s", name, arg, r.code, r.stdout, r.stderr)
				}
				help = r.stdout
			}
			for _, bad := range []string{"package gm", "Config.", "Privileged", "see package", "gm.Open", "ETHERGM_UNIT=", "os.Exit"} {
				if strings.Contains(help, bad) {
					t.Errorf("%s --help speaks of the Go API (%q):\n%s", name, bad, help)
				}
			}
			opts := helpOptions(help)
			for _, want := range []string{"help", "version"} {
				if _, ok := opts[want]; !ok {
					t.Errorf("%s --help lists no --%s:\n%s", name, want, help)
				}
			}
			for n, o := range opts {
				if better, ok := wrongNames[n]; ok {
					t.Errorf("%s has --%s; the convention's name is %s", name, n, better)
				}
				switch {
				case o.short == "v" && n != "verbose":
					t.Errorf("%s: -v is --%s; -v always means --verbose", name, n)
				case o.short == "h" && n != "help":
					t.Errorf("%s: -h is --%s; -h always means --help", name, n)
				case n == "json" && o.value != "[=FILE]":
					t.Errorf("%s: --json%s; want --json[=FILE] (standard output, or --json=FILE)", name, o.value)
				case n == "port" || n == "remote-port":
					if o.value != "PORT" {
						t.Errorf("%s: --%s %s; want --%s PORT", name, n, o.value, n)
					}
				}
			}

			// --version: "<name> (EtherGM) <version>", exit 0.
			r := run(t, bin, "--version")
			if want := name + " (EtherGM) " + testVersion + "\n"; r.code != 0 || r.stdout != want || r.stderr != "" {
				t.Errorf("%s --version: exit status %d, stdout %q, stderr %q; want 0 and %q", name, r.code, r.stdout, r.stderr, want)
			}

			// Unknown options, long and short, and Go-style single-dash ones.
			args := []string{"--no-such-option"}
			usageError(run(t, bin, args...), args, "unknown option --no-such-option")
			args = []string{"-Q"}
			usageError(run(t, bin, args...), args, "unknown option -Q")
			if _, ok := opts["version"]; ok {
				args = []string{"-version"}
				usageError(run(t, bin, args...), args, "long options take two dashes")
			}

			// Unexpected arguments.
			args = []string{"unexpected-1", "unexpected-2", "unexpected-3", "unexpected-4", "unexpected-5", "unexpected-6",
				"unexpected-7", "unexpected-8", "unexpected-9"}
			usageError(run(t, bin, args...), args, "argument")

			// A missing value and bad values.
			for n, o := range opts {
				if o.value == "" || strings.HasPrefix(o.value, "[") {
					continue
				}
				args = []string{"--" + n}
				usageError(run(t, bin, args...), args, "option --"+n+" needs a value")
				break
			}
			bad := 0
			for n, o := range opts {
				var value, want string
				switch {
				case o.value == "PORT":
					value, want = "99", "a GM port is 0..15"
				case o.value == "ETHERTYPE":
					value, want = "0x1", "an EtherType is 0x0600..0xFFFF"
				case o.value == "N":
					value, want = "not-a-number", ""
				case o.value == "DURATION":
					value, want = "soon", ""
				default:
					continue
				}
				args = []string{"--" + n, value}
				usageError(run(t, bin, args...), args, fmt.Sprintf("invalid value %q for --%s", value, n), want)
				bad++
			}
			if bad == 0 {
				t.Logf("%s has no option with a typed value; no bad-value case", name)
			}
		})
	}
}
