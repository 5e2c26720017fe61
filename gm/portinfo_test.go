package gm

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/ethergm/ethergm/gm/link"
)

// fillDistinct sets every numeric field of the struct v points to to a
// distinct value and returns their sum.
func fillDistinct(v any) uint64 {
	rv := reflect.ValueOf(v).Elem()
	var sum uint64
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Field(i); f.Kind() == reflect.Uint64 {
			f.SetUint(uint64(1) << i)
			sum += uint64(1) << i
		}
	}
	return sum
}

func sumFields(v any) uint64 {
	rv := reflect.ValueOf(v)
	var sum uint64
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Field(i); f.Kind() == reflect.Uint64 {
			sum += f.Uint()
		}
	}
	return sum
}

// TestCountersCarryEveryField fails when a counter is added to the
// engine's or the link's Stats and not to ProtocolCounters or
// LinkCounters (or to their Add).
func TestCountersCarryEveryField(t *testing.T) {
	var s Stats
	want := fillDistinct(&s)
	pc := protocolCounters(s)
	if got := sumFields(pc); got != want || reflect.TypeOf(pc).NumField() != reflect.TypeOf(s).NumField() {
		t.Errorf("ProtocolCounters carry %#x of the engine's %#x", got, want)
	}
	var sum ProtocolCounters
	sum.Add(pc)
	sum.Add(pc)
	if got := sumFields(sum); got != 2*want {
		t.Errorf("ProtocolCounters.Add: %#x, want %#x", got, 2*want)
	}
	var ls link.Stats
	want = fillDistinct(&ls)
	lc := linkCounters(ls)
	if got := sumFields(lc); got != want || reflect.TypeOf(lc).NumField() != reflect.TypeOf(ls).NumField() {
		t.Errorf("LinkCounters carry %#x of the link's %#x", got, want)
	}
	var lsum LinkCounters
	lsum.Add(lc)
	lsum.Add(lc)
	if got := sumFields(lsum); got != 2*want {
		t.Errorf("LinkCounters.Add: %#x, want %#x", got, 2*want)
	}
}

// TestPortInfoJSON pins PortInfo's JSON field names, which tools read.
func TestPortInfoJSON(t *testing.T) {
	pi := PortInfo{Rails: []RailInfo{{}}, Error: "x", Interfaces: []string{"eth0"}, Program: "p", MACs: []string{"m"}, RxPorts: []int{2, 5}}
	data, err := json.Marshal(pi)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	want := []string{"unit", "interfaces", "port", "pid", "program", "name", "host", "macs", "node_id",
		"map_version", "map_hosts", "map_changes", "send_tokens", "free_send_tokens", "receive_tokens",
		"free_receive_tokens", "stats", "link", "rails", "rx_ports", "error"}
	var got []string
	for k := range top {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("PortInfo JSON fields %v, want %v", got, want)
	}
	var back PortInfo
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, pi) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

// TestMaskPorts: PortInfo.RxPorts lists a mask's ports in order.
func TestMaskPorts(t *testing.T) {
	for _, c := range []struct {
		m    uint32
		want []int
	}{
		{0, nil},
		{1 << 4, []int{4}},
		{0xFFFF &^ (1 << 4), []int{0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
		{1<<0 | 1<<31, []int{0, 31}},
	} {
		if got := maskPorts(c.m); !slices.Equal(got, c.want) {
			t.Errorf("maskPorts(%#x) = %v, want %v", c.m, got, c.want)
		}
	}
}
