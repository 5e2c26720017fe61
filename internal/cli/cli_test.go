package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/ethergm/ethergm/gm"
)

// testCommand is a command with every standard option and a few of its own.
type testCommand struct {
	*Command
	out, errOut        bytes.Buffer
	unit, remote, json string
	port, remotePort   int
	etherType          uint16
	verbose            int
	cfg                gm.Config
	count              int
}

func newTestCommand() *testCommand {
	t := new(testCommand)
	t.Command = New("gm_test", &t.out, &t.errOut)
	t.Synopsis("[OPTION]...", "--remote-host HOST [OPTION]...")
	t.Description("gm_test tests the convention.")
	t.UnitFlag(&t.unit, "")
	t.PortFlag(&t.port, 2, "")
	t.PortVar(&t.remotePort, "remote-port", 4, "the peer's `PORT`")
	t.RemoteHostFlag(&t.remote, "")
	t.GMFlags(&t.cfg)
	t.JSONFlag(&t.json, "")
	t.EtherTypeVar(&t.etherType, "ethertype", 0x88b5, "the `ETHERTYPE`")
	t.VerboseFlag(&t.verbose, "")
	t.Flags.IntVar(&t.count, "count", 0, "how many")
	return t
}

func TestParse(t *testing.T) {
	c := newTestCommand()
	code, done := c.Parse([]string{"--unit", "eth0,eth1", "--port=5", "--remote-port", "7", "--remote-host", "b",
		"--hostname", "a", "--map-file", "/m", "--state-dir", "/s", "--json", "--ethertype", "0x0800", "-vv"})
	if done || code != ExitOK {
		t.Fatalf("Parse = %d, %v; stderr %q", code, done, c.errOut.String())
	}
	if c.unit != "eth0,eth1" || c.port != 5 || c.remotePort != 7 || c.remote != "b" || c.json != "-" ||
		c.etherType != 0x0800 || c.verbose != 2 || c.cfg.Host != "a" || c.cfg.MapFile != "/m" || c.cfg.StateDir != "/s" {
		t.Fatalf("parsed %+v", c)
	}

	d := newTestCommand()
	if _, done := d.Parse(nil); done {
		t.Fatal("no arguments: done")
	}
	if d.port != 2 || d.remotePort != 4 || d.etherType != 0x88b5 || d.json != "" || d.verbose != 0 {
		t.Fatalf("defaults %+v", d)
	}
	e := newTestCommand()
	if _, done := e.Parse([]string{"--json=out.json"}); done || e.json != "out.json" {
		t.Fatalf("--json=FILE: %q", e.json)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "gm_test: unknown option --bogus\n"},
		{[]string{"-port", "2"}, "unknown option -p in -port (long options take two dashes)"},
		{[]string{"--port", "99"}, `gm_test: invalid value "99" for --port: a GM port is 0..15`},
		{[]string{"--port", "-1"}, `invalid value "-1" for --port: a GM port is 0..15`},
		{[]string{"--remote-port=x"}, `invalid value "x" for --remote-port: a GM port is 0..15`},
		{[]string{"--ethertype", "0x1"}, `invalid value "0x1" for --ethertype: an EtherType is 0x0600..0xFFFF`},
		{[]string{"--ethertype", "0x10000"}, `an EtherType is 0x0600..0xFFFF`},
		{[]string{"--count", "many"}, `invalid value "many" for --count: must be an integer`},
		{[]string{"--count", "99999999999999999999"}, `invalid value "99999999999999999999" for --count`},
		{[]string{"--unit"}, "option --unit needs a value"},
		{[]string{"extra"}, `gm_test: unexpected argument "extra"`},
		{[]string{"--json", "out.json"}, `unexpected argument "out.json"; to give --json a value, write --json=out.json`},
	} {
		c := newTestCommand()
		code, done := c.Parse(tt.args)
		if !done || code != ExitUsage {
			t.Errorf("%q: Parse = %d, %v, want %d, true", tt.args, code, done, ExitUsage)
		}
		msg := c.errOut.String()
		if !strings.Contains(msg, tt.want) || !strings.HasSuffix(msg, "Try 'gm_test --help' for more information.\n") {
			t.Errorf("%q: stderr %q, want %q and the --help pointer", tt.args, msg, tt.want)
		}
		if c.out.Len() != 0 {
			t.Errorf("%q: stdout %q", tt.args, c.out.String())
		}
	}
}

func TestArgs(t *testing.T) {
	c := newTestCommand()
	c.Args(1, "FILE")
	if _, done := c.Parse([]string{"a", "--port", "3"}); done || c.Flags.Arg(0) != "a" || c.port != 3 {
		t.Fatalf("one argument: done %v args %q", done, c.Flags.Args())
	}
	c = newTestCommand()
	c.Args(1, "FILE")
	if code, done := c.Parse([]string{"a", "b"}); !done || code != ExitUsage || !strings.Contains(c.errOut.String(), "at most 1 FILE") {
		t.Fatalf("two arguments: %d %v %q", code, done, c.errOut.String())
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--port", "2", "-h"}, {"-h", "--bogus"}} {
		c := newTestCommand()
		code, done := c.Parse(args)
		if !done || code != ExitOK {
			t.Fatalf("%q: Parse = %d, %v", args, code, done)
		}
		out := c.out.String()
		for _, want := range []string{
			"Usage: gm_test [OPTION]...\n  or:  gm_test --remote-host HOST [OPTION]...\n\ngm_test tests the convention.\n\nOptions:\n",
			"--unit UNIT", "--port PORT", "(default 2)", "--remote-host HOST", "--hostname NAME", "$ETHERGM_HOST",
			"--map-file FILE", "--state-dir DIR", "--json[=FILE]", "-v, --verbose", "-h, --help", "--version",
			"--ethertype ETHERTYPE", "(default 0x88b5)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%q: help lacks %q:\n%s", args, want, out)
			}
		}
		if c.errOut.Len() != 0 {
			t.Errorf("%q: stderr %q", args, c.errOut.String())
		}
	}
}

func TestVersion(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "v9.8.7"
	c := newTestCommand()
	if code, done := c.Parse([]string{"--version"}); !done || code != ExitOK {
		t.Fatalf("Parse = %d, %v", code, done)
	}
	if got := c.out.String(); got != "gm_test (EtherGM) v9.8.7\n" {
		t.Fatalf("--version printed %q", got)
	}
}

func TestVersionFrom(t *testing.T) {
	for _, tt := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "0123456789ab+dirty"},
		{debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, "abc"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		if got := versionFrom(&tt.bi); got != tt.want {
			t.Errorf("versionFrom(%+v) = %q, want %q", tt.bi, got, tt.want)
		}
	}
}

func TestFail(t *testing.T) {
	var out, errOut bytes.Buffer
	c := New("gm_test", &out, &errOut)
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: port 1 is reserved", gm.PermissionDenied),
			"gm_test: GM_PERMISSION_DENIED: port 1 is reserved; ports 0, 1 and 3 are reserved for GM's daemons; use --port 2 or 4..15\n"},
		{fmt.Errorf("open: %w", gm.Busy),
			"gm_test: GM_BUSY: open; another process has this port of the unit open; pass another --port, or stop that process\n"},
		{gm.NoMatch, "gm_test: GM_NO_MATCH: no match; pass --remote-host with a host name or a node id of the node map (--map-file)\n"},
		{fmt.Errorf("link eth0: %w", os.ErrPermission),
			"gm_test: link eth0: permission denied; run as root, or give the program CAP_NET_RAW: sudo setcap cap_net_raw,cap_net_admin+ep PROGRAM\n"},
		{errors.New("disk full"), "gm_test: disk full\n"},
		{fmt.Errorf("%w: node map /x/map: %w", gm.NodeIDNotYetSet, os.ErrNotExist),
			"gm_test: GM_NODE_ID_NOT_YET_SET: node map /x/map: file does not exist; that file does not exist; pass --map-file with the node map, or --state-dir with the directory that holds it\n"},
	} {
		errOut.Reset()
		if code := c.Fail(tt.err); code != ExitFailure {
			t.Errorf("Fail = %d", code)
		}
		if got := errOut.String(); got != tt.want {
			t.Errorf("Fail(%v):\n got %q\nwant %q", tt.err, got, tt.want)
		}
	}
	errOut.Reset()
	c.FailWith(fmt.Errorf("%w: interface %q", gm.NoSuchDevice, "eth9"), "pass --unit eth0")
	if got, want := errOut.String(), "gm_test: GM_NO_SUCH_DEVICE: interface \"eth9\"; pass --unit eth0\n"; got != want {
		t.Errorf("FailWith:\n got %q\nwant %q", got, want)
	}
	if a := Advice(gm.NoSuchDevice); !strings.HasPrefix(a, "pass --unit with one of: ") && !strings.HasPrefix(a, "no network interface is up") {
		t.Errorf("Advice(NoSuchDevice) = %q", a)
	}
}

func TestHelpLayout(t *testing.T) {
	c := newTestCommand()
	c.PrintHelp()
	t.Log("\n" + c.out.String())
	for line := range strings.SplitSeq(c.out.String(), "\n") {
		if len(line) > 80 {
			t.Errorf("line longer than 80 columns: %q", line)
		}
	}
}
