package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
)

// TestNetnsBench runs every measurement once, tiny, in a real two-host
// cluster: it checks that the programs build, talk to each other and print
// records the driver can parse. It asserts nothing about speed.
func TestNetnsBench(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs and runs them in namespaces")
	}
	if err := netns.Available(); err != nil {
		if os.Getenv(netns.RequireEnv) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset not installed")
	}
	bins, err := binaries("", filepath.Join(t.TempDir(), "bin"))
	if err != nil {
		t.Skipf("cannot build the benchmark programs: %v", err)
	}
	nets, closeNets, err := openNets(specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := closeNets(); err != nil {
			t.Errorf("netns: %v", err)
		}
	})
	b := &bench{
		cfg: &config{n: 300, warmup: 20, ppTime: time.Second, streamTime: 300 * time.Millisecond,
			npRepeats: 100, clientCPU: 0, serverCPU: 1},
		bins: bins, log: io.Discard, tmp: t.TempDir(), nets: nets,
	}
	for _, s := range specs {
		if strings.HasPrefix(s.name, "gm-incast") && s.name != "gm-incast4-tcp" {
			// One incast covers the programs (senders, sink, TCP flow);
			// the others differ in counts and a setting only, and six
			// runs of ten hosts would cost minutes on a loaded machine.
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			b, err := b.on(s.net)
			if err != nil {
				t.Fatal(err)
			}
			switch s.name {
			case "udp-pp", "udp-stream", "tcp-pp":
				tool := map[bool]string{true: "NPtcp", false: "sockperf"}[s.name == "tcp-pp"]
				if _, err := exec.LookPath(tool); err != nil {
					t.Skipf("%s not installed", tool)
				}
			}
			v, err := s.run(b, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range s.metrics {
				x, ok := v[m.key]
				if !ok || x < 0 {
					t.Errorf("%s = %v (present %v)", m.key, x, ok)
				}
			}
			if loss, ok := v[s.prefix()+"loss"]; ok && loss >= 100 {
				t.Errorf("everything lost")
			}
		})
	}
}
