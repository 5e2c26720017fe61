package gm

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ethergm/ethergm/ctl"
	"github.com/ethergm/ethergm/nodemap"
)

// TestClaimPort takes a port name in this network namespace (an abstract
// socket needs no privileges), checks the Busy error of a second claim,
// the open-port mask read from /proc/net/unix and the release.
func TestClaimPort(t *testing.T) {
	unit := fmt.Sprintf("gmtest%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	info := func() any { return PortInfo{Unit: unit, Port: 6, Program: "holder", Name: "mine"} }
	o, err := claimPort(unit, 6, info)
	if err != nil {
		t.Fatal(err)
	}
	defer o.release()
	_, err = claimPort(unit, 6, nil)
	if !errors.Is(err, Busy) || !errors.Is(err, ctl.ErrInUse) {
		t.Fatalf("second claim: %v, want Busy wrapping ctl.ErrInUse", err)
	}
	want := fmt.Sprintf("port 6 of unit %s is open in process %d (holder, port name \"mine\")", unit, os.Getpid())
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("second claim: %q, want it to say %q", err, want)
	}
	o9, err := claimPort(unit, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := o.openMask(0); m != 1<<6|1<<9 {
		t.Fatalf("open mask %#x, want ports 6 and 9", m)
	}
	ports, err := ListPorts(unit)
	if err != nil || len(ports) != 2 || ports[0].Port != 6 || ports[0].Name != "mine" || ports[0].PID != os.Getpid() || ports[1].PID != os.Getpid() {
		t.Fatalf("ListPorts = %+v, %v", ports, err)
	}
	o9.release()
	if m := o.openMask(0); m != 1<<6 {
		t.Fatalf("open mask %#x after releasing port 9, want port 6", m)
	}
	// A recent answer is reused within minAge.
	o9, err = claimPort(unit, 9, nil)
	if err != nil {
		t.Fatalf("port 9 after release: %v", err)
	}
	defer o9.release()
	if m := o.openMask(time.Hour); m != 1<<6 {
		t.Fatalf("open mask %#x within minAge, want the previous answer", m)
	}
	if m := o.openMask(0); m != 1<<6|1<<9 {
		t.Fatalf("open mask %#x, want ports 6 and 9", m)
	}
}

func TestMapErrorStatus(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/map"
	if err := mapError(path, &os.PathError{Op: "stat", Path: path, Err: os.ErrNotExist}); err != nil {
		t.Fatalf("missing map: %v, want no error", err)
	}
	if err := os.WriteFile(path, []byte("1 host0 02:00:00:00:00:01\n2 host1 zz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := nodemap.Watcher{Path: path}
	_, lerr := w.Load()
	err := mapError(path, lerr)
	if !errors.Is(err, InvalidParameter) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("malformed map: %v, want InvalidParameter naming %s and line 2", err, path)
	}
	err = mapError(path, &os.PathError{Op: "open", Path: path, Err: os.ErrPermission})
	if !errors.Is(err, PermissionDenied) || !errors.Is(err, os.ErrPermission) {
		t.Fatalf("unreadable map: %v", err)
	}
}

// TestPortOwnerWatch: with the unit's mapper watch listening, a port
// registers with it when claimed, hears what the mapper publishes (a port
// gone, whose name may still be listed, counts as closed in openMask) and
// ends its registration on release; it connects again (keepWatch) after
// the mapper restarts.
func TestPortOwnerWatch(t *testing.T) {
	unit := fmt.Sprintf("gmtest%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	events := make(chan struct{}, 16)
	w, err := ctl.ListenWatch(unit, func() { events <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	o4, err := claimPort(unit, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o4.release()
	o9, err := claimPort(unit, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-events
	<-events
	if conn, _ := w.Take(); conn != 1<<4|1<<9 {
		t.Fatalf("registered ports %#x, want 4 and 9", conn)
	}
	o4.takeChanged() // the mapper's first word
	w.Publish(1 << 9)
	for !o4.takeChanged() {
		time.Sleep(time.Millisecond)
	}
	if m := o4.openMask(0); m != 1<<4 {
		t.Fatalf("open mask %#x with port 9 gone but listed, want port 4", m)
	}
	o9.release()
	<-events
	if conn, ended := w.Take(); conn != 1<<4 || ended != 1<<9 {
		t.Fatalf("after release: registered %#x ended %#x, want 4 and 9", conn, ended)
	}
	// The mapper restarts: the port registers again.
	w.Close()
	for !o4.takeChanged() {
		time.Sleep(time.Millisecond)
	}
	for len(events) > 0 {
		<-events // the old watch's
	}
	w, err = ctl.ListenWatch(unit, func() { events <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	o4.keepWatch()
	<-events
	if conn, _ := w.Take(); conn != 1<<4 {
		t.Fatalf("after the restart: registered %#x, want port 4", conn)
	}
}
