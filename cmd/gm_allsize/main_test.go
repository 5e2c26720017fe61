package main

import (
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/ethergm/ethergm/gm"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-v", "--remote-host=hostB", "--priority", "both", "--min-size=4", "--max-size", "21",
		"--lengths", "8,1k,1M", "--max-bytes", "64M", "--baseline", "a.csv", "--baseline=b.csv", "--port", "5"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case !o.run.Verify, o.remote != "hostB", o.port != 5, o.run.MinSize != 4, o.run.MaxSize != 21:
		t.Fatalf("%+v", o)
	case !slices.Equal(o.run.Priorities, []gm.Priority{gm.LowPriority, gm.HighPriority}):
		t.Fatalf("priorities %v", o.run.Priorities)
	case !slices.Equal(o.run.Lengths, []int{8, 1024, 1 << 20}), o.run.MaxBytes != 64<<20:
		t.Fatalf("lengths %v max bytes %d", o.run.Lengths, o.run.MaxBytes)
	case !slices.Equal(o.baselines, []string{"a.csv", "b.csv"}):
		t.Fatalf("baselines %v", o.baselines)
	}
	d, err := parseFlags(nil, io.Discard)
	if err != nil || d.run.Verify || d.serve || d.port != 2 || d.run.MinSize != 3 || d.run.MaxSize != 24 || len(d.run.Priorities) != 1 {
		t.Fatalf("defaults %+v %v", d, err)
	}
}

func TestParseFlagsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--priority", "medium"},
		{"--serve", "--remote-host", "x"},
		{"--min-size", "2"},
		{"--max-size", "31"},
		{"--max-bytes", "lots"},
		{"--lengths", "1,-3"},
		{"--port", "16"},
		{"--iterations", "0"},
		{"--window", "2000"},
		{"--no-such-flag"},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
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
