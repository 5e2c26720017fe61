package driver

import (
	"log/slog"
	"sync"

	"github.com/ethergm/ethergm/nodemap"
)

// diskWriter writes the map file and the hosts file on a goroutine of its
// own, so that the Driver's goroutine never waits for the disk. Each write
// is synced (nodemap.WriteFileAtomic), and a host of a large cluster
// installs every map version: with every host of a machine doing so at
// once, the syncs queue in the file system's journal for a second or more,
// and a Driver that waited for them would meanwhile neither read its rings
// nor send its SCOUTs nor acknowledge the map, so its mapper in charge
// would find it silent and map it absent, a new version that costs every
// host again. Only the newest map and state wait to be written; an older
// one not yet written is skipped.
//
// A hosts file that records a version this host made must be on disk
// before the version is used on the wire (mapper.Output.SaveState with
// sync): SaveState then writes it itself (flushState).
type diskWriter struct {
	log                *slog.Logger
	mapPath, statePath string

	wmu sync.Mutex // held while writing: files are written in order

	mu    sync.Mutex // guards the pending writes
	m     *nodemap.Map
	state []byte

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newDiskWriter(log *slog.Logger, mapPath, statePath string) *diskWriter {
	return &diskWriter{log: log, mapPath: mapPath, statePath: statePath,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// run writes what is pending until close; then it writes what is left.
func (w *diskWriter) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
			w.flush(true)
		case <-w.stop:
			w.flush(true)
			return
		}
	}
}

// close stops run after it wrote everything pending.
func (w *diskWriter) close() {
	close(w.stop)
	<-w.done
}

// saveMap queues m for the map file.
func (w *diskWriter) saveMap(m *nodemap.Map) {
	w.mu.Lock()
	w.m = m
	w.mu.Unlock()
	w.poke()
}

// saveState queues data for the hosts file.
func (w *diskWriter) saveState(data []byte) {
	w.mu.Lock()
	w.state = data
	w.mu.Unlock()
	w.poke()
}

func (w *diskWriter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// flushState writes the pending state now, on the caller's goroutine,
// after any write in progress.
func (w *diskWriter) flushState() { w.flush(false) }

// flush writes the pending state, and the pending map too if withMap.
func (w *diskWriter) flush(withMap bool) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	state, m := w.state, w.m
	w.state = nil
	if withMap {
		w.m = nil
	} else {
		m = nil
	}
	w.mu.Unlock()
	if state != nil && w.statePath != "" {
		if err := nodemap.WriteFileAtomic(w.statePath, state, 0o644); err != nil {
			w.log.Error("saving the hosts file", "file", w.statePath, "err", err)
		}
	}
	if m != nil && w.mapPath != "" {
		if err := nodemap.WriteFile(w.mapPath, m); err != nil {
			w.log.Error("writing the node map", "file", w.mapPath, "err", err)
		}
	}
}
