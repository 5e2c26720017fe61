package gm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ethergm/ethergm/gm/internal/proto"
)

// The engine (package proto, which cannot import gm) produces GM send
// statuses and event types as plain numbers, and the port hands them on
// unchanged: Status(st) to send callbacks, EventType(ev.Type) to Receive.
// These two tables say which gm constant each engine constant stands for;
// TestEngineNumbersAreGM fails when the two definitions drift apart, or when
// the engine gains a status or event type that has no entry here.
var (
	engineStatuses = map[string]struct {
		got  proto.Status
		want Status
	}{
		"StatusSuccess":             {proto.StatusSuccess, Success},
		"StatusSendTimedOut":        {proto.StatusSendTimedOut, SendTimedOut},
		"StatusSendRejected":        {proto.StatusSendRejected, SendRejected},
		"StatusTargetPortClosed":    {proto.StatusTargetPortClosed, SendTargetPortClosed},
		"StatusTargetNodeUnreached": {proto.StatusTargetNodeUnreached, SendTargetNodeUnreachable},
		"StatusSendDropped":         {proto.StatusSendDropped, SendDropped},
	}
	engineEvents = map[string]struct {
		got  uint8
		want EventType
	}{
		"EventRecv":             {proto.EventRecv, RecvEvent},
		"EventHighRecv":         {proto.EventHighRecv, HighRecvEvent},
		"EventPeerRecv":         {proto.EventPeerRecv, PeerRecvEvent},
		"EventHighPeerRecv":     {proto.EventHighPeerRecv, HighPeerRecvEvent},
		"EventFastRecv":         {proto.EventFastRecv, FastRecvEvent},
		"EventFastHighRecv":     {proto.EventFastHighRecv, FastHighRecvEvent},
		"EventFastPeerRecv":     {proto.EventFastPeerRecv, FastPeerRecvEvent},
		"EventFastHighPeerRecv": {proto.EventFastHighPeerRecv, FastHighPeerRecvEvent},
		"EventSentTokens":       {proto.EventSentTokens, SentTokensEvent},
	}
)

func TestEngineNumbersAreGM(t *testing.T) {
	for name, c := range engineStatuses {
		if Status(c.got) != c.want {
			t.Errorf("proto.%s = %d, but it stands for gm.%v = %d", name, c.got, c.want, int(c.want))
		}
	}
	for name, c := range engineEvents {
		if EventType(c.got) != c.want {
			t.Errorf("proto.%s = %d, but it stands for gm.%v = %d", name, c.got, c.want, uint8(c.want))
		}
	}
	if MaxFastRecvBytes != proto.MaxFastRecvBytes {
		t.Errorf("MaxFastRecvBytes %d, engine's %d", MaxFastRecvBytes, proto.MaxFastRecvBytes)
	}
	// Every Status* and Event* constant the engine declares must be in the
	// tables above (a new one would reach the application unchecked).
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("internal", "proto", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("engine sources: %v", err)
	}
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				for i, n := range s.(*ast.ValueSpec).Names {
					name := n.Name
					var known bool
					switch {
					case strings.HasPrefix(name, "Status"):
						_, known = engineStatuses[name]
					case strings.HasPrefix(name, "Event"):
						_, known = engineEvents[name]
					default:
						continue
					}
					seen++
					if !known {
						t.Errorf("%s: proto.%s has no gm counterpart in engineStatuses/engineEvents", fset.Position(n.Pos()), name)
					}
					if vs := s.(*ast.ValueSpec).Values; i < len(vs) {
						if lit, ok := vs[i].(*ast.BasicLit); ok {
							if _, err := strconv.Atoi(lit.Value); err != nil {
								t.Errorf("proto.%s = %s: not a GM number", name, lit.Value)
							}
						}
					}
				}
			}
		}
	}
	if seen != len(engineStatuses)+len(engineEvents) {
		t.Errorf("the engine declares %d Status*/Event* constants, the tables hold %d", seen, len(engineStatuses)+len(engineEvents))
	}
}
