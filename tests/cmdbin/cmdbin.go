// Package cmdbin builds the project's commands for tests that run them as
// real processes (in netns hosts): each command once per test process, into
// one temporary directory that every user can read and run, removed by
// Cleanup (call it from TestMain).
package cmdbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	dir   string
	built = map[string]error{}
)

// Path returns the path of command name (a directory under cmd/), building
// it on first use with CGO_ENABLED=0. It fails tb if the build fails.
func Path(tb testing.TB, name string) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if dir == "" {
		d, err := os.MkdirTemp("", "egm-cmd-")
		if err == nil {
			err = os.Chmod(d, 0o755)
		}
		if err != nil {
			tb.Fatal(err)
		}
		dir = d
	}
	p := filepath.Join(dir, name)
	err, ok := built[name]
	if !ok {
		cmd := exec.Command("go", "build", "-o", p, "github.com/ethergm/ethergm/cmd/"+name)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, berr := cmd.CombinedOutput(); berr != nil {
			err = fmt.Errorf("go build %s: %v\n%s", name, berr, out)
		}
		built[name] = err
	}
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Cleanup removes the commands built.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir, built = "", map[string]error{}
	}
}
