package auth

import "testing"

// forEachGHASHPath runs f as a subtest on each GHASH path of this CPU: the
// 512-bit assembly, the 256-bit one and the Go loop. A path the CPU lacks
// is logged and left out.
func forEachGHASHPath(t *testing.T, f func(t *testing.T)) {
	save512, saveAsm := haveGHASH512, haveGHASHAsm
	defer func() { haveGHASH512, haveGHASHAsm = save512, saveAsm }()
	for _, p := range []struct {
		name         string
		on512, onAsm bool
	}{{"avx512", true, true}, {"avx2", false, true}, {"generic", false, false}} {
		if p.on512 && !save512 || p.onAsm && !saveAsm {
			t.Logf("%s: not on this CPU", p.name)
			continue
		}
		haveGHASH512, haveGHASHAsm = p.on512, p.onAsm
		t.Run(p.name, f)
	}
}
