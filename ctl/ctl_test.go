package ctl

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

func TestListenQuery(t *testing.T) {
	name := fmt.Sprintf("%stest-%d-%d/port2", Prefix, os.Getpid(), time.Now().UnixNano())
	if _, err := Query(name, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Query before Listen: %v, want ErrNotFound", err)
	}
	s, err := Listen(name, func() any { return map[string]int{"port": 2} })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(name, nil); !errors.Is(err, ErrInUse) {
		t.Fatalf("second Listen: %v, want ErrInUse", err)
	}
	var got map[string]int
	pid, err := Query(name, &got)
	if err != nil || pid != os.Getpid() || got["port"] != 2 {
		t.Fatalf("Query = pid %d %v %v, want pid %d port 2", pid, got, err, os.Getpid())
	}
	if pid, err := Owner(name); err != nil || pid != os.Getpid() {
		t.Fatalf("Owner = %d %v", pid, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Owner(name); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Owner after Close: %v, want ErrNotFound", err)
	}
	s2, err := Listen(name, nil) // the name is free again
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
}
