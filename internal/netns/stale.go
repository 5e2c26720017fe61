package netns

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// stateDir holds one owner record per live run, named by run id. cluster.sh
// uses the same directory.
const stateDir = "/run/ethergm/netns"

// ownerRecord is the content of a run's state file.
func ownerRecord(pid int, owner string) string {
	return fmt.Sprintf("pid=%d\nstart=%s\nowner=%s\n", pid, procStart(pid), owner)
}

// procStart returns the start time of pid (field 22 of /proc/pid/stat), to
// tell a live owner from a reused pid, or "" if pid does not exist.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 || f[0] == "Z" {
		return ""
	}
	return f[19]
}

// runOwner describes the owner of a run as recorded in its state file.
type runOwner struct {
	pid   int
	start string
	owner string // "go" or "script"
}

// readOwner reads the state file of run id; ok is false if there is none.
func readOwner(id string) (o runOwner, ok bool) {
	b, err := os.ReadFile(filepath.Join(stateDir, id))
	if err != nil {
		return o, false
	}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "pid":
			o.pid, _ = strconv.Atoi(v)
		case "start":
			o.start = v
		case "owner":
			o.owner = v
		}
	}
	return o, true
}

// alive reports whether the owner process still runs.
func (o runOwner) alive() bool {
	return o.pid > 0 && o.start != "" && procStart(o.pid) == o.start
}

var staleOnce sync.Once

// removeStaleOnce runs RemoveStale once per process, ignoring errors.
func removeStaleOnce() {
	staleOnce.Do(func() { _, _ = RemoveStale() })
}

// RemoveStale removes the leftovers of killed runs: every namespace (with
// the processes in it) and root-namespace link whose name starts with
// "egm<run id>" when the run's owner process is gone, and state files of
// runs that have nothing left. Runs of live processes and runs made by
// cluster.sh are kept. It returns the names it removed.
func RemoveStale() ([]string, error) { return removeRuns(false) }

// RemoveAllRuns is [RemoveStale] that also removes runs of live processes
// (other than this one) and of cluster.sh. Use it only when no test runs.
func RemoveAllRuns() ([]string, error) { return removeRuns(true) }

func removeRuns(all bool) ([]string, error) {
	self := os.Getpid()
	keep := func(id string) bool {
		o, ok := readOwner(id)
		if !ok {
			return false
		}
		if o.pid == self && o.alive() {
			return true
		}
		return !all && (o.owner == "script" || o.alive())
	}
	var removed []string
	var errs []error
	runs := map[string]bool{}

	entries, err := os.ReadDir(netnsRunDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range entries {
		id := runIDOf(e.Name())
		if id == "" {
			continue
		}
		runs[id] = true
		if keep(id) {
			continue
		}
		if err := removeNS(e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}

	if out, err := ipCmd("-o", "link", "show"); err == nil {
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			id := runIDOf(name)
			if id == "" || keep(id) {
				continue
			}
			runs[id] = true
			if _, err := ipCmd("link", "del", name); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, name)
		}
	}

	states, _ := os.ReadDir(stateDir)
	for _, e := range states {
		id := e.Name()
		if !validRunID(id) || keep(id) {
			continue
		}
		if err := os.Remove(filepath.Join(stateDir, id)); err == nil {
			removed = append(removed, filepath.Join(stateDir, id))
		}
		if dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), Prefix+id+"-*")); len(dirs) > 0 {
			for _, d := range dirs {
				os.RemoveAll(d)
			}
		}
	}
	slices.Sort(removed)
	return removed, errors.Join(errs...)
}

// live holds the clusters of this process that are not closed yet, for the
// signal handler.
var live struct {
	sync.Mutex
	clusters map[*Cluster]bool
	sigc     chan os.Signal
}

// register adds c to the live clusters, installing the SIGINT/SIGTERM
// handler when c is the first one.
func register(c *Cluster) {
	live.Lock()
	defer live.Unlock()
	if live.clusters == nil {
		live.clusters = map[*Cluster]bool{}
	}
	live.clusters[c] = true
	if live.sigc == nil {
		live.sigc = make(chan os.Signal, 1)
		signal.Notify(live.sigc, syscall.SIGINT, syscall.SIGTERM)
		go handleSignals(live.sigc)
	}
}

// unregister removes c from the live clusters and uninstalls the signal
// handler when none is left.
func unregister(c *Cluster) {
	live.Lock()
	defer live.Unlock()
	delete(live.clusters, c)
	if len(live.clusters) == 0 && live.sigc != nil {
		signal.Stop(live.sigc)
		close(live.sigc)
		live.sigc = nil
	}
}

// handleSignals closes every live cluster when a signal arrives on sigc,
// then re-raises the signal with its default action.
func handleSignals(sigc chan os.Signal) {
	sig, ok := <-sigc
	if !ok {
		return
	}
	live.Lock()
	var cs []*Cluster
	for c := range live.clusters {
		cs = append(cs, c)
	}
	live.Unlock()
	for _, c := range cs {
		if err := c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "netns: on %v: %v\n", sig, err)
		}
	}
	signal.Stop(sigc)
	if s, ok := sig.(syscall.Signal); ok {
		syscall.Kill(os.Getpid(), s)
	}
}
