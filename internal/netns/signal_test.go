package netns_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethergm/ethergm/internal/netns"
)

// helperEnv makes the test binary act as a program that builds a cluster,
// prints its run id and waits to be killed.
const helperEnv = "ETHERGM_NETNS_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		helperMain()
		return
	}
	os.Exit(m.Run())
}

func helperMain() {
	c, err := netns.NewCluster(netns.Options{Hosts: 2})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	if _, err := c.Hosts[0].Start("sleep", "1000"); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("ID", c.ID)
	select {}
}

// startHelper runs the helper program and returns it with its run id.
func startHelper(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	if err := netns.Available(); err != nil {
		if os.Getenv(netns.RequireEnv) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	id, ok := strings.CutPrefix(strings.TrimSpace(line), "ID ")
	if err != nil || !ok {
		t.Fatalf("helper said %q (%v)", line, err)
	}
	return cmd, id
}

func TestIntegrationSignalCleanup(t *testing.T) {
	t.Parallel()
	cmd, id := startHelper(t)
	if countRun(t, id) == 0 {
		t.Fatalf("run %s not visible", id)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("helper exit: %v, want death by SIGTERM (re-raised)", err)
	}
	if n := countRun(t, id); n != 0 {
		t.Errorf("%d names of run %s left after SIGTERM", n, id)
	}
}

func TestIntegrationRemoveStale(t *testing.T) {
	t.Parallel()
	cmd, id := startHelper(t)
	cmd.Process.Kill()
	cmd.Wait()
	if countRun(t, id) == 0 {
		t.Fatalf("SIGKILL left nothing of run %s to clean", id)
	}
	removed, err := netns.RemoveStale()
	if err != nil {
		t.Error(err)
	}
	if !slices.ContainsFunc(removed, func(s string) bool { return strings.Contains(s, netns.Prefix+id) }) {
		t.Errorf("RemoveStale removed %v, nothing of %s", removed, id)
	}
	deadline := time.Now().Add(3 * time.Second)
	for countRun(t, id) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("run %s still there after RemoveStale", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Live runs (this process's) are kept.
	c := netns.New(t, netns.Options{})
	if _, err := netns.RemoveStale(); err != nil {
		t.Error(err)
	}
	if countRun(t, c.ID) == 0 {
		t.Error("RemoveStale removed a live run")
	}
}
