package mapper

import "github.com/ethergm/ethergm/nodemap"

type selfState struct{}
type netState struct{}
type table struct{}
type installed struct{ m *nodemap.Map }
type assembly struct{}
type leaderState struct{}

func (m *Mapper) init()                                  {}
func (m *Mapper) input(now Time, rail int, frame []byte) {}
func (m *Mapper) tick(now Time)                          {}
func (m *Mapper) nextDeadline() Time                     { return 0 }
func (m *Mapper) setRailUp(rail int, up bool, now Time)  {}

// Status returns a snapshot of the mapper's state.
func (m *Mapper) Status() Status { return Status{} }

// Marshal returns s as a hosts file: text, one line per host.
func (s State) Marshal() []byte { return nil }

// ParseState parses a hosts file written by State.Marshal.
func ParseState(b []byte) (State, error) { return State{}, nil }
