package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Chart is a figure: a title and panels drawn left to right.
type Chart struct {
	// Title is drawn above the panels.
	Title string
	// Subtitle is drawn under the title in a smaller font (machine, date).
	Subtitle string
	// Panels are the plots, drawn side by side.
	Panels []Panel
}

// Panel is one plot with logarithmic x and y axes.
type Panel struct {
	Title  string
	XLabel string
	YLabel string
	Lines  []Line
}

// Line is one series of a panel. X and Y have the same length.
type Line struct {
	// Name is the legend entry; lines with the same name share a color.
	Name string
	X, Y []float64
	// Dashed draws the line dashed (used for baselines).
	Dashed bool
}

// ErrEmpty is returned by SVG for a chart without panels.
var ErrEmpty = errors.New("plot: chart has no panels")

// Layout of one panel, in SVG user units (pixels).
const (
	panelW     = 560
	panelH     = 420
	marginL    = 78
	marginR    = 24
	marginT    = 34
	marginB    = 56
	headerH    = 58
	legendRowH = 20
	legendCols = 3
)

// palette holds the series colors (Okabe-Ito and Tableau, colorblind-safe
// first).
var palette = []string{
	"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
	"#000000", "#8C564B", "#7F7F7F", "#BCBD22", "#17BECF", "#9467BD",
}

// LogTicks returns the decade ticks (powers of ten) that cover [lo, hi],
// from the decade at or below lo to the decade at or above hi, at least two
// of them, and the minor ticks (2..9 times each decade) in between. lo and
// hi must be positive.
func LogTicks(lo, hi float64) (major, minor []float64) {
	a := math.Floor(math.Log10(lo) + 1e-9)
	b := math.Ceil(math.Log10(hi) - 1e-9)
	if b <= a {
		b = a + 1
	}
	for e := a; e <= b; e++ {
		d := math.Pow(10, e)
		major = append(major, d)
		if e < b {
			for m := 2.0; m <= 9; m++ {
				minor = append(minor, m*d)
			}
		}
	}
	return major, minor
}

// FormatTick formats a decade tick: 0.001 .. 100 in plain notation, then
// 1k, 10k, 100k, 1M, 10M, 100M, 1G; other magnitudes as 1e-4 or 1e12.
func FormatTick(v float64) string {
	e := int(math.Round(math.Log10(v)))
	switch {
	case e >= -3 && e <= 2:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case e >= 3 && e <= 5:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	case e >= 6 && e <= 8:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case e >= 9 && e <= 11:
		return strconv.FormatFloat(v/1e9, 'f', -1, 64) + "G"
	}
	return fmt.Sprintf("1e%d", e)
}

func drawable(x, y float64) bool {
	return x > 0 && y > 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) && !math.IsNaN(x) && !math.IsNaN(y)
}

// axis maps values to pixels on a log scale.
type axis struct {
	lo, hi float64 // log10 of the range ends
	p0, p1 float64 // pixels of lo and hi
	major  []float64
	minor  []float64
}

func newAxis(lo, hi, p0, p1 float64) axis {
	major, minor := LogTicks(lo, hi)
	return axis{
		lo: math.Log10(major[0]), hi: math.Log10(major[len(major)-1]),
		p0: p0, p1: p1, major: major, minor: minor,
	}
}

func (a axis) pix(v float64) float64 {
	return a.p0 + (math.Log10(v)-a.lo)/(a.hi-a.lo)*(a.p1-a.p0)
}

// SVG writes c as a standalone SVG document to w.
func SVG(w io.Writer, c Chart) error {
	if len(c.Panels) == 0 {
		return ErrEmpty
	}
	// Colors by name, in order of first appearance.
	color := map[string]string{}
	dashed := map[string]bool{}
	var names []string
	for _, p := range c.Panels {
		for _, l := range p.Lines {
			if _, ok := color[l.Name]; !ok {
				color[l.Name] = palette[len(names)%len(palette)]
				dashed[l.Name] = l.Dashed
				names = append(names, l.Name)
			}
		}
	}
	legendRows := (len(names) + legendCols - 1) / legendCols
	width := panelW * len(c.Panels)
	height := headerH + panelH + 16 + legendRows*legendRowH + 10

	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", width, height)
	text(&b, float64(width)/2, 24, "middle", 17, "bold", c.Title)
	if c.Subtitle != "" {
		text(&b, float64(width)/2, 44, "middle", 12, "normal", c.Subtitle)
	}
	for i, p := range c.Panels {
		drawPanel(&b, float64(i*panelW), headerH, p, color)
	}
	// Legend.
	colW := float64(width-40) / legendCols
	for i, n := range names {
		x := 20 + float64(i%legendCols)*colW
		y := float64(headerH+panelH+16) + float64(i/legendCols)*legendRowH
		dash := ""
		if dashed[n] {
			dash = ` stroke-dasharray="6,3"`
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", x, y, x+28, y, color[n], dash)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x+14, y, color[n])
		text(&b, x+36, y+4, "start", 12, "normal", n)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func drawPanel(b *bytes.Buffer, ox, oy float64, p Panel, color map[string]string) {
	x0, x1 := ox+marginL, ox+panelW-marginR
	y0, y1 := oy+panelH-marginB, oy+marginT // y0 is the bottom
	// Data range over the drawable points.
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, l := range p.Lines {
		for i := range l.X {
			if i < len(l.Y) && drawable(l.X[i], l.Y[i]) {
				xlo, xhi = math.Min(xlo, l.X[i]), math.Max(xhi, l.X[i])
				ylo, yhi = math.Min(ylo, l.Y[i]), math.Max(yhi, l.Y[i])
			}
		}
	}
	if math.IsInf(xlo, 1) { // nothing to draw: an empty decade
		xlo, xhi, ylo, yhi = 1, 10, 1, 10
	}
	ax, ay := newAxis(xlo, xhi, x0, x1), newAxis(ylo, yhi, y0, y1)

	text(b, (x0+x1)/2, oy+20, "middle", 14, "bold", p.Title)
	// Grid and ticks.
	for _, v := range ax.minor {
		x := ax.pix(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eeeeee"/>`+"\n", x, y0, x, y1)
	}
	for _, v := range ay.minor {
		y := ay.pix(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eeeeee"/>`+"\n", x0, y, x1, y)
	}
	for _, v := range ax.major {
		x := ax.pix(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#cccccc"/>`+"\n", x, y0, x, y1)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, y0, x, y0+5)
		text(b, x, y0+18, "middle", 11, "normal", FormatTick(v))
	}
	for _, v := range ay.major {
		y := ay.pix(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#cccccc"/>`+"\n", x0, y, x1, y)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x0-5, y, x0, y)
		text(b, x0-8, y+4, "end", 11, "normal", FormatTick(v))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", x0, y1, x1-x0, y0-y1)
	text(b, (x0+x1)/2, y0+40, "middle", 12, "normal", p.XLabel)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="12" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
		ox+20, (y0+y1)/2, ox+20, (y0+y1)/2, esc(p.YLabel))
	// Series.
	for _, l := range p.Lines {
		var pts []string
		type mark struct{ x, y, vx, vy float64 }
		var marks []mark
		for i := range l.X {
			if i >= len(l.Y) || !drawable(l.X[i], l.Y[i]) {
				continue
			}
			px, py := ax.pix(l.X[i]), ay.pix(l.Y[i])
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
			marks = append(marks, mark{px, py, l.X[i], l.Y[i]})
		}
		if len(pts) == 0 {
			continue
		}
		dash := ""
		if l.Dashed {
			dash = ` stroke-dasharray="6,3"`
		}
		fmt.Fprintf(b, `<g class="series"><title>%s</title>`+"\n", esc(l.Name))
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"/>`+"\n", color[l.Name], dash, strings.Join(pts, " "))
		for _, m := range marks {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s: %g, %.4g</title></circle>`+"\n",
				m.x, m.y, color[l.Name], esc(l.Name), m.vx, m.vy)
		}
		b.WriteString("</g>\n")
	}
}

func text(b *bytes.Buffer, x, y float64, anchor string, size int, weight, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%d" font-weight="%s">%s</text>`+"\n", x, y, anchor, size, weight, esc(s))
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
