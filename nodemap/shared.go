package nodemap

import (
	"path/filepath"
	"sync"
	"time"
	"weak"
)

// The maps that Watchers load are shared within the process: every port of
// a process watches the same map file, and a map of a million hosts keeps
// about 77 MiB, so sixteen ports each holding their own copy would keep
// over a gigabyte. A loaded map is remembered, weakly, under its file's
// identity (absolute path, modification time, size, inode); another
// Watcher that finds the file with the same identity takes that map
// instead of parsing the file again. A map nobody holds any more is
// collected, and its entry removed, as usual.

type fileVersion struct {
	path    string
	modTime time.Time
	size    int64
	ino     uint64
}

var shared = struct {
	sync.Mutex
	maps map[fileVersion]weak.Pointer[Map]
}{maps: map[fileVersion]weak.Pointer[Map]{}}

// sharedKey returns the key of path's version.
func sharedKey(path string, modTime time.Time, size int64, ino uint64) fileVersion {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return fileVersion{path: path, modTime: modTime, size: size, ino: ino}
}

// sharedMap returns the map loaded from version k, if one is still held.
func sharedMap(k fileVersion) *Map {
	shared.Lock()
	defer shared.Unlock()
	if wp, ok := shared.maps[k]; ok {
		if m := wp.Value(); m != nil {
			return m
		}
		delete(shared.maps, k)
	}
	return nil
}

// shareMap remembers m as the map of version k, and forgets the versions
// whose maps were collected.
func shareMap(k fileVersion, m *Map) {
	shared.Lock()
	defer shared.Unlock()
	for old, wp := range shared.maps {
		if wp.Value() == nil {
			delete(shared.maps, old)
		}
	}
	shared.maps[k] = weak.Make(m)
}
