package baseline

import (
	"math"
	"strings"
	"testing"
)

const sockperfPPOut = `sockperf: == version #3.7-no.git ==
sockperf: [Valid Duration] RunTime=2.550 sec; SentMessages=103137; ReceivedMessages=103137
sockperf: ====> avg-rtt=24.635 (std-dev=20.170)
sockperf: Summary: Round trip is 24.635 usec
sockperf: Total 103137 observations; each percentile contains 1031.37 observations
sockperf: ---> <MAX> observation = 3031.497
sockperf: ---> percentile 99.999 = 2837.104
sockperf: ---> percentile 99.000 =   42.968
sockperf: ---> percentile 90.000 =   27.076
sockperf: ---> percentile 50.000 =   23.726
sockperf: ---> <MIN> observation =   15.105
`

func TestParseSockperfPP(t *testing.T) {
	r, err := ParseSockperfPP(sockperfPPOut)
	if err != nil {
		t.Fatal(err)
	}
	if r != (PingPong{AvgRTT: 24.635, P50: 23.726, P99: 42.968, N: 103137}) {
		t.Errorf("got %+v", r)
	}
	for _, bad := range []string{
		"",
		"sockperf: error",
		"sockperf: Summary: Latency is 12 usec\n",
		"avg-rtt=1\nTotal 0 observations\n",
		strings.ReplaceAll(sockperfPPOut, "percentile 50.000", "percentile 51.000"),
	} {
		if _, err := ParseSockperfPP(bad); err == nil {
			t.Errorf("ParseSockperfPP(%q) succeeded", bad)
		}
	}
}

func TestParseSockperfTP(t *testing.T) {
	client := "sockperf: Total of 1000000 messages sent in 3.000 sec\n"
	tests := []struct {
		name     string
		server   string
		wantRecv float64
		wantLoss float64
		wantErr  bool
	}{
		{"no loss", "sockperf: Total 1000000 messages received and handled\n", 1000000, 0, false},
		{"half lost", "sockperf: Total 500000 messages received and handled\n", 500000, 50, false},
		{"more than sent is clamped", "sockperf: Total 1000010 messages received and handled\n", 1000000, 0, false},
		{"server without summary", "sockperf: cleanupAfterLoop() exit\n", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseSockperfTP(client, tt.server)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if r.Sent != 1000000 || r.Seconds != 3 || r.Received != tt.wantRecv || math.Abs(r.Loss()-tt.wantLoss) > 1e-9 {
				t.Errorf("got %+v, loss %v", r, r.Loss())
			}
		})
	}
	if _, err := ParseSockperfTP("nothing", "sockperf: Total 5 messages received\n"); err == nil {
		t.Error("missing client count accepted")
	}
}

const npOut = `       1 1.645863   0.00000464
       8 9.850111   0.00000620
    1024 1564.090352   0.00000499
   65536 30014.836427   0.00001666
 1048576 28214.060807   0.00028355
`

func TestParseNetPIPE(t *testing.T) {
	s, err := ParseNetPIPE(npOut)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 5 || s[1].Bytes != 8 || s[1].HalfRTT != 0.00000620 {
		t.Fatalf("%+v", s)
	}
	// 1 MiB in 283.55 us is 3698 MB/s (NetPIPE's own column is Mbit/s of 2^20 bits).
	if bw := s[4].MBs(); math.Abs(bw-1048576/283.55) > 0.01 {
		t.Fatalf("bandwidth %v", bw)
	}
	if half, err := HalfRTTAt(s, 1024); err != nil || half != 0.00000499 {
		t.Errorf("HalfRTTAt(1024) = %v, %v", half, err)
	}
	if _, err := HalfRTTAt(s, 64); err == nil {
		t.Error("HalfRTTAt without a 64-byte line succeeded")
	}
	for _, bad := range []string{"", "8 x y\n", "8 1.0 0\n"} {
		if _, err := ParseNetPIPE(bad); err == nil {
			t.Errorf("ParseNetPIPE(%q) accepted", bad)
		}
	}
}
