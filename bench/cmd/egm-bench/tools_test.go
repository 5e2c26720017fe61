package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckToolsOnly: a selection asks only for the tools its
// measurements run (the ring ping-pongs need neither sockperf nor NPtcp).
func TestCheckToolsOnly(t *testing.T) {
	dir := t.TempDir()
	for _, tool := range []string{"taskset", "nice", "ip"} {
		if err := os.WriteFile(filepath.Join(dir, tool), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	sel, err := selectSpecs("floor-pp,link-poll,gm-poll")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkTools(sel); err != nil {
		t.Errorf("floor-pp,link-poll,gm-poll: %v", err)
	}
	sel, err = selectSpecs("gm-poll,udp-pp,tcp-pp")
	if err != nil {
		t.Fatal(err)
	}
	err = checkTools(sel)
	if err == nil || !strings.Contains(err.Error(), "sockperf, NPtcp") {
		t.Errorf("udp-pp and tcp-pp without sockperf and NPtcp: %v, want both named", err)
	}
	if err := os.Remove(filepath.Join(dir, "ip")); err != nil {
		t.Fatal(err)
	}
	sel, _ = selectSpecs("gm-poll")
	if err := checkTools(sel); err == nil || !strings.Contains(err.Error(), "ip") {
		t.Errorf("without ip: %v, want it named", err)
	}
}
