package wire

import (
	"strconv"
	"testing"
)

var benchSizes = []int{0, 64, 1500, 8952}

func BenchmarkAppendFrame(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			payload := make([]byte, n)
			buf := make([]byte, 0, MaxHeaderLen+EthHeaderLen+n)
			f := golden[0].f
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				buf = AppendFrame(buf[:0], macB, macA, EtherType, &f, payload)
			}
		})
	}
}

func BenchmarkParseFrame(b *testing.B) {
	for _, n := range benchSizes {
		frame := AppendFrame(nil, macB, macA, EtherType, &golden[0].f, make([]byte, n))
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if _, err := ParseFrame(frame, EtherType); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(strconv.Itoa(n)+"/CRC", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if _, err := ParseFrameCRC(frame, EtherType); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParseConfig(b *testing.B) {
	body, _ := AppendConfig(nil, &ConfigHeader{TotalHosts: 64}, testEntries(64))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		c, err := ParseConfig(body)
		if err != nil {
			b.Fatal(err)
		}
		it := c.Entries()
		for _, ok := it.Next(); ok; _, ok = it.Next() {
		}
	}
}
