package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunArgs checks the command-line handling that needs no link.
func TestRunArgs(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		stderr string
	}{
		{name: "help", args: []string{"-h"}, status: 0, stderr: "usage: gm_frames"},
		{name: "no interface", args: []string{"--to", "02:00:00:00:00:01"}, status: 2, stderr: "-i IFACE is required"},
		{name: "no destination", args: []string{"-i", "eth0"}, status: 2, stderr: "--to MAC is required"},
		{name: "bad port", args: []string{"-i", "eth0", "--listen", "--port", "256"}, status: 2, stderr: "ports must be 0..255"},
		{name: "bad ethertype", args: []string{"-i", "eth0", "--listen", "--ethertype", "0"}, status: 2, stderr: "--ethertype"},
		{name: "extra argument", args: []string{"-i", "eth0", "--listen", "x"}, status: 2, stderr: "unexpected arguments"},
		{name: "unknown flag", args: []string{"--bogus"}, status: 2, stderr: "flag provided but not defined"},
		{name: "no such interface", args: []string{"-i", "egm-no-such-if0", "--listen", "--timeout", "1ms"}, status: 1,
			stderr: "gm_frames: "},
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
		})
	}
}
