// Package plot draws gm_allsize's charts as SVG: side-by-side panels with
// logarithmic axes (decade ticks with labels, minor ticks at 2..9 times
// each decade), one polyline with markers per series, and one legend
// shared by all panels. It uses the standard library only.
//
// A series keeps its color in every panel (colors are assigned by name in
// order of first appearance), so latency and bandwidth curves of one
// transport match. Points whose coordinates are not positive and finite
// cannot be drawn on log axes and are left out.
package plot
