package report

import (
	"io"

	"github.com/ethergm/ethergm/cmd/gm_allsize/plot"
)

// Chart returns the standard gm_allsize figure: a latency panel (half
// round trip in microseconds against message length) and a bandwidth panel
// (MB/s against message length), both log-log, with the series drawn
// solid and the baselines dashed. Each series is collapsed to one sample
// per length (Series.Collapse).
func Chart(title, subtitle string, series, baselines []Series) plot.Chart {
	lat := plot.Panel{Title: "Latency (half round trip)", XLabel: "message length (bytes)", YLabel: "half round trip (µs)"}
	bw := plot.Panel{Title: "Bandwidth", XLabel: "message length (bytes)", YLabel: "bandwidth (MB/s, 1 MB = 10^6 bytes)"}
	all := append(append([]Series(nil), series...), baselines...)
	for i, s := range all {
		dashed := i >= len(series)
		l := plot.Line{Name: s.Name, Dashed: dashed}
		b := plot.Line{Name: s.Name, Dashed: dashed}
		for _, x := range s.Collapse() {
			l.X, l.Y = append(l.X, x.Length), append(l.Y, x.HalfRTTus)
			b.X, b.Y = append(b.X, x.Length), append(b.Y, x.BWMBs)
		}
		lat.Lines = append(lat.Lines, l)
		bw.Lines = append(bw.Lines, b)
	}
	return plot.Chart{Title: title, Subtitle: subtitle, Panels: []plot.Panel{lat, bw}}
}

// WriteSVG draws Chart(title, subtitle, series, baselines) as SVG to w.
func WriteSVG(w io.Writer, title, subtitle string, series, baselines []Series) error {
	return plot.SVG(w, Chart(title, subtitle, series, baselines))
}
