package gm

import (
	"errors"
	"testing"
)

func TestSendTokenAccounts(t *testing.T) {
	var a sendTokenAccounts
	// The counters start at 0 (GM: the client deposits first).
	if a.available(LowPriority) || a.alloc(LowPriority) || a.alloc(HighPriority) {
		t.Fatal("tokens before any deposit")
	}
	if err := a.free(LowPriority); !errors.Is(err, ErrTokenAccounting) {
		t.Fatalf("free before alloc: %v", err)
	}
	// PVFS2 style: half to each priority.
	if err := a.deposit(LowPriority, 30, 61); err != nil {
		t.Fatal(err)
	}
	if err := a.deposit(HighPriority, 31, 61); err != nil {
		t.Fatal(err)
	}
	if err := a.deposit(HighPriority, 1, 61); !errors.Is(err, ErrTokenAccounting) {
		t.Fatalf("over-deposit: %v", err)
	}
	if err := a.deposit(LowPriority, -1, 61); !errors.Is(err, ErrTokenAccounting) {
		t.Fatalf("negative deposit: %v", err)
	}
	if err := a.deposit(2, 0, 61); !errors.Is(err, ErrPriority) {
		t.Fatalf("bad priority: %v", err)
	}
	for i := 0; i < 30; i++ {
		if !a.available(LowPriority) || !a.alloc(LowPriority) {
			t.Fatalf("low alloc %d", i)
		}
	}
	if a.available(LowPriority) || a.alloc(LowPriority) {
		t.Fatal("31st low alloc")
	}
	// The priorities are separate.
	if !a.available(HighPriority) {
		t.Fatal("high priority drained by low")
	}
	for i := 0; i < 30; i++ {
		if err := a.free(LowPriority); err != nil {
			t.Fatal(i, err)
		}
	}
	if err := a.free(LowPriority); !errors.Is(err, ErrTokenAccounting) {
		t.Fatalf("free beyond deposit: %v", err)
	}
	if a.alloc(2) || a.available(2) {
		t.Fatal("bad priority allocated")
	}
	if err := a.free(2); !errors.Is(err, ErrPriority) {
		t.Fatalf("free bad priority: %v", err)
	}
	// NetPIPE style on a fresh port: everything to one priority.
	var b sendTokenAccounts
	if err := b.deposit(LowPriority, 61, 61); err != nil {
		t.Fatal(err)
	}
	n := 0
	for b.alloc(LowPriority) {
		n++
	}
	if n != 61 || b.alloc(HighPriority) {
		t.Fatalf("allocated %d", n)
	}
}
