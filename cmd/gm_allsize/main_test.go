package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ethergm/ethergm/gm"
)

func TestParseFlags(t *testing.T) {
	var stderr bytes.Buffer
	o, _, _, done := parseFlags([]string{"--verify", "-v", "--remote-host=hostB", "--priority", "both", "--min-size=4", "--max-size", "21",
		"--lengths", "8,1k,1M", "--max-bytes", "64M", "--baseline", "a.csv", "--baseline=b.csv", "--port", "5", "--remote-port", "6",
		"--hostname", "hostA", "--map-file", "/m", "--state-dir", "/s", "--json", "--csv=r.csv", "--pcap", "x.pcapng"}, io.Discard, &stderr)
	if done {
		t.Fatal(stderr.String())
	}
	switch {
	case !o.run.Verify, o.verbose != 1, o.remote != "hostB", o.port != 5, o.remotePort != 6, o.run.MinSize != 4, o.run.MaxSize != 21:
		t.Fatalf("%+v", o)
	case o.cfg.Host != "hostA", o.cfg.MapFile != "/m", o.cfg.StateDir != "/s", o.jsonPath != "-", o.csvPath != "r.csv", o.pcap.Path != "x.pcapng":
		t.Fatalf("%+v", o)
	case !slices.Equal(o.run.Priorities, []gm.Priority{gm.LowPriority, gm.HighPriority}):
		t.Fatalf("priorities %v", o.run.Priorities)
	case !slices.Equal(o.run.Lengths, []int{8, 1024, 1 << 20}), o.run.MaxBytes != 64<<20:
		t.Fatalf("lengths %v max bytes %d", o.run.Lengths, o.run.MaxBytes)
	case !slices.Equal(o.baselines, []string{"a.csv", "b.csv"}):
		t.Fatalf("baselines %v", o.baselines)
	}
	d, _, _, done := parseFlags(nil, io.Discard, io.Discard)
	if done || d.run.Verify || d.serve || d.port != 2 || d.remotePort != -1 || d.run.MinSize != 3 || d.run.MaxSize != 24 || len(d.run.Priorities) != 1 {
		t.Fatalf("defaults %+v", d)
	}
}

func TestParseFlagsErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--priority", "medium"}, `invalid value "medium" for --priority: want low, high or both`},
		{[]string{"--serve", "--remote-host", "x"}, "--serve and --remote-host exclude each other"},
		{[]string{"--min-size", "2"}, `invalid value "2" for --min-size: want 3..30`},
		{[]string{"--max-size", "31"}, `invalid value "31" for --max-size: want 3..30`},
		{[]string{"--min-size", "9", "--max-size", "8"}, "--min-size 9 is larger than --max-size 8"},
		{[]string{"--max-bytes", "lots"}, `invalid value "lots" for --max-bytes`},
		{[]string{"--lengths", "1,-3"}, `invalid value "1,-3" for --lengths`},
		{[]string{"--lengths", "2G"}, "is longer than the longest message"},
		{[]string{"--port", "16"}, `invalid value "16" for --port: a GM port is 0..15`},
		{[]string{"--remote-port", "99"}, `invalid value "99" for --remote-port: a GM port is 0..15`},
		{[]string{"--iterations", "0"}, `invalid value "0" for --iterations`},
		{[]string{"--window", "2000"}, `invalid value "2000" for --window: want 1..1024`},
		{[]string{"--json", "--csv"}, "cannot both write to standard output"},
		{[]string{"--no-such-flag"}, "unknown option --no-such-flag"},
		{[]string{"-verify"}, "long options take two dashes"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--json", "r.json"}, "write --json=r.json"},
	} {
		var stdout, stderr bytes.Buffer
		_, _, code, done := parseFlags(tt.args, &stdout, &stderr)
		if !done || code != 2 {
			t.Errorf("%q: done %v, exit %d, want a usage error", tt.args, done, code)
		}
		if !strings.HasPrefix(stderr.String(), "gm_allsize: ") || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%q: stderr %q, want %q", tt.args, stderr.String(), tt.want)
		}
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	_, _, code, done := parseFlags([]string{"--help"}, &stdout, &stderr)
	if !done || code != 0 || stderr.Len() != 0 {
		t.Fatalf("--help: done %v exit %d stderr %q", done, code, stderr.String())
	}
	help := stdout.String()
	for _, want := range []string{"Usage: gm_allsize ", "--remote-host HOST", "--unit UNIT", "--hostname NAME", "--map-file FILE",
		"--state-dir DIR", "--pcap FILE", "--json[=FILE]", "-v, --verbose", "--verify", "--version"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	for _, bad := range []string{"package gm", "Config.", "Privileged"} {
		if strings.Contains(help, bad) {
			t.Errorf("help speaks of the Go API: %q", bad)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "512": 512, "4k": 4096, "4K": 4096, "32M": 32 << 20, "1G": 1 << 30} {
		if got, err := parseBytes(s); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "k", "-1", "1.5M", "2T"} {
		if _, err := parseBytes(s); err == nil {
			t.Errorf("parseBytes(%q) accepted", s)
		}
	}
}
