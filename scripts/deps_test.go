// Package scripts_test checks scripts/deps.sh against the code: every
// program the Go code runs by name must be installed by `deps.sh test`, so
// that `make test` on a fresh machine runs every test instead of skipping.
package scripts_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notFromDebian are programs the code runs that deps.sh need not install:
// the Go toolchain, and optional helpers whose absence changes no test.
var notFromDebian = map[string]string{
	"go":                  "the Go toolchain itself",
	"bash":                "essential in Debian; this test runs deps.sh with it",
	"rsvg-convert":        "gm_allsize --plot FILE.png only; no test asks for PNG",
	"systemd-detect-virt": "bench/allsize reports the virtualisation if it can",
}

// runsByName finds programs named by a string literal in a call of
// exec.Command, exec.CommandContext or exec.LookPath; toolList finds the
// tool lists the benchmark drivers look up in a loop.
var (
	runsByName = regexp.MustCompile(`exec\.(?:LookPath|Command)\("([^"]+)"|exec\.CommandContext\(\w+, "([^"]+)"`)
	toolList   = regexp.MustCompile(`range \[\]string\{((?:"[A-Za-z][\w.-]*",? ?)+)\} \{\s*\n\s*if _, err := exec\.LookPath`)
)

func TestDepsCoverTheCode(t *testing.T) {
	out, err := exec.Command("bash", "deps.sh", "--list", "test").Output()
	if err != nil {
		t.Fatalf("deps.sh --list test: %v", err)
	}
	installed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("deps.sh --list: bad line %q", line)
		}
		installed[f[0]] = true
	}
	for _, must := range []string{"ip", "tshark", "dumpcap", "sockperf", "NPtcp", "taskset", "setpriv"} {
		if !installed[must] {
			t.Errorf("deps.sh test does not install %s", must)
		}
	}

	seen := map[string]string{} // program -> a file that runs it
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "results" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range runsByName.FindAllStringSubmatch(string(src), -1) {
			seen[m[1]+m[2]] = path
		}
		for _, m := range toolList.FindAllStringSubmatch(string(src), -1) {
			for _, q := range strings.Split(m[1], ",") {
				if name := strings.Trim(strings.TrimSpace(q), `"`); name != "" {
					seen[name] = path
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 5 {
		t.Fatalf("found only %v in the code: is the pattern still right?", seen)
	}
	t.Logf("programs the code runs by name: %v", seen)
	for prog, path := range seen {
		if installed[prog] || notFromDebian[prog] != "" {
			continue
		}
		t.Errorf("%s runs %q, which `scripts/deps.sh test` does not install: add `need %s PACKAGE` to it", path, prog, prog)
	}
}
