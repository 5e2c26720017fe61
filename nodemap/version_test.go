package nodemap

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestWatchersRouteOnlyRewrite: the mapper installs its map again with the
// same version when only this host's routes change (docs/MAPPER.md §2), so
// two map files of one version and one size differ. Watchers (each port
// of a process), and the maps they share, must follow the file, not the
// version: both watchers see the new routes, none keeps the old parse.
func TestWatchersRouteOnlyRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "map")
	self := []MAC{{2, 0, 0, 0, 0, 1}, {2, 1, 0, 0, 0, 1}}
	peer := []MAC{{2, 0, 0, 0, 0, 2}, {2, 1, 0, 0, 0, 2}}
	es := []Entry{{ID: 1, Host: "a", MACs: self}, {ID: 2, Host: "b", MACs: peer}}
	mapper := self[0]
	write := func(rail int) {
		t.Helper()
		m, err := New(7, mapper, es, []Route{{Node: 2, Local: self[rail], Peer: peer[rail]}})
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(path, m); err != nil {
			t.Fatal(err)
		}
	}
	routes := func(w *Watcher) []Route {
		t.Helper()
		m, err := w.Load()
		if err != nil || m == nil {
			t.Fatalf("Load: %v, %v", m, err)
		}
		if m.Version != 7 {
			t.Fatalf("version %d, want 7", m.Version)
		}
		return m.RoutesTo(2)
	}
	w1, w2 := &Watcher{Path: path}, &Watcher{Path: path}
	for i, rail := range []int{0, 1, 0, 1} {
		write(rail)
		want := []Route{{Node: 2, Local: self[rail], Peer: peer[rail]}}
		for _, w := range []*Watcher{w1, w2} {
			if got := routes(w); !slices.Equal(got, want) {
				t.Fatalf("rewrite %d (rail %d), same version: routes %v, want %v", i, rail, got, want)
			}
		}
	}
}
