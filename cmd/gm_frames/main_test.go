package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestRunArgs checks the command-line handling that needs no link.
func TestRunArgs(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		stdout string
		stderr string
	}{
		{name: "help", args: []string{"-h"}, status: 0, stdout: "Usage: gm_frames "},
		{name: "version", args: []string{"--version"}, status: 0, stdout: "gm_frames (EtherGM) "},
		{name: "no destination", args: []string{"--unit", "eth0"}, status: 2, stderr: "pass --remote-mac MAC to send, or --listen"},
		{name: "both modes", args: []string{"--listen", "--remote-mac", "02:00:00:00:00:01"}, status: 2, stderr: "exclude each other"},
		{name: "bad MAC", args: []string{"--remote-mac", "02:00"}, status: 2, stderr: `invalid value "02:00" for --remote-mac`},
		{name: "port 99", args: []string{"--listen", "--port", "99"}, status: 2, stderr: `invalid value "99" for --port: a GM port is 0..15`},
		{name: "remote port 16", args: []string{"--listen", "--remote-port", "16"}, status: 2, stderr: `for --remote-port: a GM port is 0..15`},
		{name: "ethertype 0x1", args: []string{"--listen", "--ethertype", "0x1"}, status: 2, stderr: `invalid value "0x1" for --ethertype: an EtherType is 0x0600..0xFFFF`},
		{name: "ethertype 0", args: []string{"--listen", "--ethertype", "0"}, status: 2, stderr: "--ethertype"},
		{name: "negative count", args: []string{"--listen", "--count", "-1"}, status: 2, stderr: "--count"},
		{name: "extra argument", args: []string{"--listen", "x"}, status: 2, stderr: `unexpected argument "x"`},
		{name: "unknown option", args: []string{"--bogus"}, status: 2, stderr: "unknown option --bogus"},
		{name: "old -i", args: []string{"-i", "eth0", "--listen"}, status: 2, stderr: "unknown option -i"},
		{name: "no such interface", args: []string{"--unit", "egm-no-such-if0", "--listen", "--timeout", "1ms"}, status: 1,
			stderr: "gm_frames: GM_NO_SUCH_DEVICE: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(tt.args, &stdout, &stderr); got != tt.status {
				t.Errorf("exit status %d, want %d; stderr:\n%s", got, tt.status, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, stdout.String())
			}
			if tt.status == 2 && !strings.Contains(stderr.String(), "Try 'gm_frames --help'") {
				t.Errorf("usage error without the --help pointer:\n%s", stderr.String())
			}
		})
	}
}

// TestOutput checks the text and JSON Lines forms of a frame line.
func TestOutput(t *testing.T) {
	var text, js bytes.Buffer
	out := &output{text: &text, json: json.NewEncoder(&js)}
	r := &frameRecord{Event: "received", Src: "02:00:00:00:00:01", Dst: "02:00:00:00:00:02", EtherType: 0x88b5, Bytes: 60, Summary: "DATA"}
	if err := out.record(r, "line one"); err != nil {
		t.Fatal(err)
	}
	if text.String() != "line one\n" {
		t.Errorf("text %q", text.String())
	}
	var got frameRecord
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || got != *r {
		t.Errorf("JSON %s: %+v, %v", js.String(), got, err)
	}
	if want := `{"event":"received","src":"02:00:00:00:00:01","dst":"02:00:00:00:00:02","ethertype":34997,"bytes":60,"summary":"DATA"}` + "\n"; js.String() != want {
		t.Errorf("JSON line %q, want %q", js.String(), want)
	}
}
