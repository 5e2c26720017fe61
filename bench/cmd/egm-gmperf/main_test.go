package main

import (
	"testing"

	"github.com/ethergm/ethergm/gm"
)

func TestEthPayload(t *testing.T) {
	tests := []struct{ length, mtu, want int }{
		{1 << 20, 1500, 1<<20 + 721*44}, // 1048576 / 1456 = 720.2 segments
		{1 << 20, 9000, 1<<20 + 118*44}, // 1048576 / 8956 = 117.08
		{8, 1500, 52},
		{0, 1500, 44},
		{1456, 1500, 1500},
		{1457, 1500, 1457 + 88},
	}
	for _, tt := range tests {
		if got := ethPayload(tt.length, tt.mtu); got != tt.want {
			t.Errorf("ethPayload(%d, %d) = %d, want %d", tt.length, tt.mtu, got, tt.want)
		}
	}
}

func TestSetDefaults(t *testing.T) {
	o := options{}
	if err := setDefaults(&o, 8, gm.HighPriority); err != nil || o.size != 8 || o.pri != gm.HighPriority {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	o = options{size: 100, prio: "low"}
	if err := setDefaults(&o, 8, gm.HighPriority); err != nil || o.size != 100 || o.pri != gm.LowPriority {
		t.Errorf("explicit: %+v, %v", o, err)
	}
	for _, bad := range []options{{prio: "medium"}, {size: -1}, {size: 1 << 31}} {
		if err := setDefaults(&bad, 8, gm.HighPriority); err == nil {
			t.Errorf("setDefaults(%+v) succeeded", bad)
		}
	}
}
