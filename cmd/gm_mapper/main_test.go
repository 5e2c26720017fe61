package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUsage checks gm_mapper's own checks of its options: each is a usage
// error (exit status 2) that names the option, before anything is opened.
func TestUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--verify-interval", "5s"}, "--verify-interval"},
		{[]string{"--verify-interval", "1ms"}, "--verify-interval"},
		{[]string{"--num-passes", "-1"}, "--num-passes"},
		{[]string{"--level", "256"}, "--level"},
		{[]string{"extra"}, "extra"},
	} {
		var out, errb bytes.Buffer
		code := run(tt.args, &out, &errb, nil)
		if code != 2 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("gm_mapper %v: exit %d, stderr %q; want 2 and a message naming %s", tt.args, code, errb.String(), tt.want)
		}
	}
}

// TestHelp checks that --help lists every option of the daemon.
func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb, nil); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, o := range []string{"--unit", "--hostname", "--level", "--num-passes", "--verify-interval", "--state-dir",
		"--map-file", "--hosts-file", "--daemon-pid-file", "--pcap", "--log-format", "--verbose", "--version", "--help"} {
		if !strings.Contains(out.String(), o) {
			t.Errorf("--help does not mention %s", o)
		}
	}
}
