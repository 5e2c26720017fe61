package nodemap

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestWatchersShareMaps: Watchers of the same file version (the ports of
// one process) get the same parsed map rather than a copy each; a new
// version of the file is parsed again, and a map nobody holds is
// collected.
func TestWatchersShareMaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "map")
	write := func(hosts ...string) {
		var es []Entry
		for i, h := range hosts {
			es = append(es, Entry{ID: NodeID(i + 1), Host: h, MACs: []MAC{{2, 0, 0, 0, 0, byte(i + 1)}}})
		}
		m, err := New(0, MAC{}, es, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(path, m); err != nil {
			t.Fatal(err)
		}
	}
	load := func(w *Watcher) *Map {
		t.Helper()
		m, err := w.Load()
		if err != nil || m == nil {
			t.Fatalf("Load: %v, %v", m, err)
		}
		return m
	}
	write("a", "b")
	w1, w2 := &Watcher{Path: path}, &Watcher{Path: path}
	m1, m2 := load(w1), load(w2)
	if m1 != m2 || m1.Len() != 2 {
		t.Fatalf("two watchers of one file version: maps %p and %p (%d hosts), want one shared map of 2", m1, m2, m1.Len())
	}
	if m, err := w2.Load(); m != nil || err != nil {
		t.Fatalf("unchanged file: %v, %v", m, err)
	}
	write("a", "b", "c")
	n1 := load(w1)
	if n1 == m1 || n1.Len() != 3 {
		t.Fatalf("new version: %d hosts (same map %v)", n1.Len(), n1 == m1)
	}
	if n2 := load(w2); n2 != n1 {
		t.Fatalf("second watcher of the new version: %p, want %p", n2, n1)
	}
	// m1 and n1 are no longer used: their maps can be collected.
	runtime.GC()
	runtime.GC()
	// The old version's entry is dropped once its map is collected.
	write("d")
	load(&Watcher{Path: path})
	shared.Lock()
	n := len(shared.maps)
	shared.Unlock()
	if n > 1 {
		t.Errorf("%d map versions remembered, want only the current one (the others were collected)", n)
	}
}
