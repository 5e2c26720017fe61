package netns

import (
	"errors"
	"reflect"
	"testing"
)

func TestNames(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		id := newRunID()
		if !validRunID(id) {
			t.Fatalf("newRunID() = %q, not a run id", id)
		}
		seen[id] = true
	}
	if len(seen) < 190 {
		t.Errorf("only %d distinct run ids out of 200", len(seen))
	}
	const id = "0a1b2c"
	for _, name := range []string{
		nsName(id, hostName(MaxHosts-1)), nsName(id, "sw"), nsName(id, "relay"),
		bridgeName(id, MaxRails-1), portName(id, MaxHosts-1, MaxRails-1),
	} {
		if runIDOf(name) != id {
			t.Errorf("runIDOf(%q) = %q, want %q", name, runIDOf(name), id)
		}
	}
	for _, name := range []string{bridgeName(id, MaxRails-1), portName(id, MaxHosts-1, MaxRails-1)} {
		if len(name) > 15 {
			t.Errorf("interface name %q is longer than IFNAMSIZ-1", name)
		}
	}
	for _, name := range []string{"egmbx-a", "eth0", "egm0a1b2", "egmxyzxyz-host0"} {
		if runIDOf(name) != "" {
			t.Errorf("runIDOf(%q) = %q, want none", name, runIDOf(name))
		}
	}
	if got := hostMAC(id, 3, 1).String(); got != "02:0a:1b:2c:03:01" {
		t.Errorf("hostMAC = %s", got)
	}
	if got := portMAC(id, 3, 1).String(); got != "02:0a:1b:2c:03:81" {
		t.Errorf("portMAC = %s", got)
	}
	if got := hostPrefix(3, 1).String(); got != "198.18.1.4/24" {
		t.Errorf("hostPrefix = %s", got)
	}
	if got := hostPrefix(MaxHosts-1, 1).String(); got != "198.19.1.2/24" {
		t.Errorf("hostPrefix of the last host = %s", got)
	}
	for h := range 2 {
		for r := range MaxRails {
			if hostIndex(h, r) == portIndex(0, r) || hostIndex(0, r) == hostIndex(1, r) {
				t.Errorf("ifindex clash for host %d rail %d", h, r)
			}
		}
	}
}

func TestOptions(t *testing.T) {
	for _, tt := range []struct {
		in      Options
		want    Options
		invalid bool
	}{
		{in: Options{}, want: Options{Hosts: 1, Rails: 1, MTU: 1500}},
		{in: Options{Direct: true}, want: Options{Hosts: 2, Rails: 1, MTU: 1500, Direct: true}},
		{in: Options{Hosts: 3, Rails: 2, MTU: 9000}, want: Options{Hosts: 3, Rails: 2, MTU: 9000}},
		{in: Options{Hosts: 3, Direct: true}, invalid: true},
		{in: Options{Hosts: MaxHosts + 1}, invalid: true},
		{in: Options{Rails: MaxRails + 1}, invalid: true},
		{in: Options{MTU: 20}, invalid: true},
		{in: Options{Hosts: 2, Rails: 2, HostRails: [][]int{{1, 0}, nil}}, want: Options{Hosts: 2, Rails: 2, MTU: 1500, HostRails: [][]int{{1, 0}, nil}}},
		{in: Options{Hosts: 2, Rails: 2, HostRails: [][]int{{2}}}, invalid: true},
		{in: Options{Hosts: 2, Rails: 2, HostRails: [][]int{{}}}, invalid: true},
		{in: Options{Hosts: 1, HostRails: [][]int{{0}, {0}}}, invalid: true},
		{in: Options{Direct: true, HostRails: [][]int{{0}}}, invalid: true},
	} {
		got, err := tt.in.withDefaults()
		if tt.invalid {
			if !errors.Is(err, ErrOptions) {
				t.Errorf("%+v: err = %v, want ErrOptions", tt.in, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v: got %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}
