package eval

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// palette is Tableau 10: distinct, colour-blind-aware hues.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

func color(i int) string { return palette[i%len(palette)] }

const (
	svgWidth    = 960
	svgMargin   = 16
	panelHeight = 300
	sweepHeight = 240
	legendRow   = 18
)

// svg accumulates an SVG document; coordinates are printed with one decimal
// so the output is byte-stable.
type svg struct {
	b strings.Builder
}

func n1(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64, extra string) {
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n",
		n1(x1), n1(y1), n1(x2), n1(y2), stroke, n1(width), extra)
}

func (s *svg) rect(x, y, w, h float64, fill string) {
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n", n1(x), n1(y), n1(w), n1(h), fill)
}

func (s *svg) text(x, y float64, anchor, size, fill, t string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" text-anchor="%s" font-size="%s" fill="%s">%s</text>`+"\n",
		n1(x), n1(y), anchor, size, fill, html.EscapeString(t))
}

// axis is a vertical value axis over [lo, top] drawn into the box
// (x0, y0)–(x1, y1), with gridlines.
type axis struct {
	x0, y0, x1, y1, lo, top float64
}

func (a axis) y(v float64) float64 {
	v = math.Max(a.lo, math.Min(v, a.top))
	return a.y1 - (a.y1-a.y0)*(v-a.lo)/(a.top-a.lo)
}

// step is the gridline spacing: about five lines over the range.
func (a axis) step() float64 {
	for _, s := range []float64{0.01, 0.02, 0.05, 0.1} {
		if (a.top-a.lo)/s <= 6 {
			return s
		}
	}
	return 0.2
}

func (a axis) draw(s *svg) {
	step := a.step()
	prec := 1
	if step < 0.1 {
		prec = 2
	}
	for i := 0; ; i++ {
		v := a.lo + float64(i)*step
		if v > a.top+1e-9 {
			break
		}
		y := a.y(v)
		s.line(a.x0, y, a.x1, y, "#e0e0e0", 1, "")
		s.text(a.x0-4, y+4, "end", "11", "#555", strconv.FormatFloat(v, 'f', prec, 64))
	}
	s.line(a.x0, a.y1, a.x1, a.y1, "#333", 1, "")
}

// niceTop rounds v up to the next tenth, at least 0.1 and at most 1.
func niceTop(v float64) float64 {
	return math.Min(1, math.Max(0.1, math.Ceil(v*10-1e-9)/10))
}

// zoom returns a range around [lo, hi] on multiples of a step giving about
// five gridlines, within [0, 1]: lines compare small differences, so their
// axis need not start at 0.
func zoom(lo, hi float64) (float64, float64) {
	if hi <= lo {
		lo, hi = lo-0.05, hi+0.05
	}
	for _, s := range []float64{0.01, 0.02, 0.05, 0.1, 0.2} {
		a, b := math.Floor(lo/s+1e-9)*s, math.Ceil(hi/s-1e-9)*s
		if b == a {
			b = a + s
		}
		if (b-a)/s <= 6 {
			return math.Max(0, a), math.Min(1, b)
		}
	}
	return 0, 1
}

// whisker draws a vertical error bar at x over [lo, hi].
func (s *svg) whisker(a axis, x, lo, hi float64) {
	ylo, yhi := a.y(lo), a.y(hi)
	s.line(x, ylo, x, yhi, "#222", 1, "")
	s.line(x-3, ylo, x+3, ylo, "#222", 1, "")
	s.line(x-3, yhi, x+3, yhi, "#222", 1, "")
}

// WriteSVG draws the report as an SVG chart: for all queries (and without
// the excluded categories), each metric's mean per configuration as bars
// with bootstrap 95% whiskers; then, per sweep, one small panel per metric
// with a line per base configuration (whiskers likewise) and the baseline
// as a dashed line.
func (r *Report) WriteSVG(w io.Writer) error {
	var body svg
	y := float64(svgMargin)
	fmt.Fprintf(&body.b, `<text x="%d" y="%s" font-size="16" font-weight="bold" fill="#222">%s</text>`+"\n",
		svgMargin, n1(y+14), html.EscapeString("mnemo eval: "+r.Dataset))
	y += 28

	// Legend: one swatch per configuration.
	x := float64(svgMargin)
	for i, c := range r.Configs {
		label := c.Name
		wd := 26 + 7*float64(len([]rune(label)))
		if x+wd > svgWidth-svgMargin {
			x = svgMargin
			y += legendRow
		}
		body.rect(x, y, 12, 12, color(i))
		body.text(x+16, y+10, "start", "12", "#222", label)
		x += wd
	}
	y += legendRow + 8

	panels := []struct {
		title string
		get   func(ConfigResult) (*Metrics, map[string]Interval)
	}{{fmt.Sprintf("all queries (n=%d)", r.Queries), func(c ConfigResult) (*Metrics, map[string]Interval) { return &c.Overall, c.CI }}}
	if len(r.ExcludeCategories) > 0 && len(r.Configs) > 0 && r.Configs[0].OverallExcluding != nil {
		panels = append(panels, struct {
			title string
			get   func(ConfigResult) (*Metrics, map[string]Interval)
		}{fmt.Sprintf("without %s (n=%d)", r.excludedLabel(), r.Configs[0].OverallExcluding.N),
			func(c ConfigResult) (*Metrics, map[string]Interval) { return c.OverallExcluding, c.CIExcluding }})
	}
	metrics := r.Info.Metrics
	for _, p := range panels {
		if len(r.Configs) == 0 {
			break
		}
		top := 0.0
		for _, c := range r.Configs {
			m, ci := p.get(c)
			for _, name := range metrics {
				top = math.Max(top, math.Max(m.Values[name], ci[name].High))
			}
		}
		a := axis{x0: svgMargin + 36, y0: y + 22, x1: svgWidth - svgMargin, y1: y + panelHeight - 24, top: niceTop(top)}
		body.text(a.x0, y+12, "start", "13", "#222", p.title+": mean with 95% bootstrap interval")
		a.draw(&body)
		groupW := (a.x1 - a.x0) / float64(len(metrics))
		barW := math.Min(28, (groupW-16)/float64(len(r.Configs)))
		for gi, name := range metrics {
			gx := a.x0 + groupW*float64(gi) + (groupW-barW*float64(len(r.Configs)))/2
			for ci, c := range r.Configs {
				m, iv := p.get(c)
				v := m.Values[name]
				bx := gx + barW*float64(ci)
				body.rect(bx+1, a.y(v), barW-2, a.y1-a.y(v), color(ci))
				if barW >= 14 && a.y1-a.y(v) > 40 {
					lx, ly := bx+barW/2+4, a.y1-6
					fmt.Fprintf(&body.b, `<text x="%s" y="%s" transform="rotate(-90 %s %s)" font-size="11" fill="#fff">%s</text>`+"\n",
						n1(lx), n1(ly), n1(lx), n1(ly), f3(v))
				}
				if ivl, ok := iv[name]; ok {
					body.whisker(a, bx+barW/2, ivl.Low, ivl.High)
				}
			}
			body.text(a.x0+groupW*(float64(gi)+0.5), a.y1+16, "middle", "12", "#222", metricLabel(name))
		}
		y += panelHeight
	}

	for _, s := range r.Sweeps {
		title := "sweep " + s.Key
		if s.Setting != s.Key {
			title += " (" + s.Setting + ")"
		}
		body.text(svgMargin, y+14, "start", "13", "#222", title+": mean with 95% bootstrap interval; dashed line: "+r.Info.Baseline)
		y += 20
		// Series legend (base configurations).
		x := float64(svgMargin)
		for i, ser := range s.Series {
			body.line(x, y+6, x+14, y+6, color(i), 2, "")
			body.text(x+18, y+10, "start", "12", "#222", ser.Config)
			x += 30 + 7*float64(len([]rune(ser.Config)))
		}
		y += legendRow
		panelW := float64(svgWidth-2*svgMargin) / float64(len(metrics))
		for mi, name := range metrics {
			px := svgMargin + panelW*float64(mi)
			lo, hi, base := math.Inf(1), math.Inf(-1), math.NaN()
			for _, c := range r.Configs {
				if c.Name == r.Info.Baseline {
					base = c.Overall.Values[name]
					lo, hi = base, base
				}
			}
			for _, ser := range s.Series {
				for _, p := range ser.Points {
					v, ci := p.Overall.Values[name], p.CI[name]
					lo = math.Min(lo, math.Min(v, ci.Low))
					hi = math.Max(hi, math.Max(v, ci.High))
				}
			}
			if math.IsInf(lo, 0) {
				lo, hi = 0, 1
			}
			lo, hi = zoom(lo, hi)
			a := axis{x0: px + 40, y0: y + 8, x1: px + panelW - 8, y1: y + sweepHeight - 40, lo: lo, top: hi}
			a.draw(&body)
			if !math.IsNaN(base) {
				body.line(a.x0, a.y(base), a.x1, a.y(base), "#555", 1, ` stroke-dasharray="4 3"`)
			}
			nv := len(s.Values)
			xAt := func(i int) float64 { return a.x0 + (a.x1-a.x0)*(float64(i)+0.5)/float64(nv) }
			for i, v := range s.Values {
				body.text(xAt(i), a.y1+14, "middle", "11", "#222", v)
			}
			body.text((a.x0+a.x1)/2, a.y1+30, "middle", "12", "#222", metricLabel(name))
			for si, ser := range s.Series {
				// Series are shifted apart a little so their whiskers do
				// not hide each other.
				dx := (float64(si) - float64(len(s.Series)-1)/2) * 5
				pts := make([]string, len(ser.Points))
				for i, p := range ser.Points {
					pts[i] = n1(xAt(i)+dx) + "," + n1(a.y(p.Overall.Values[name]))
				}
				fmt.Fprintf(&body.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color(si))
				for i, p := range ser.Points {
					if ci, ok := p.CI[name]; ok {
						body.whisker(a, xAt(i)+dx, ci.Low, ci.High)
					}
					fmt.Fprintf(&body.b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", n1(xAt(i)+dx), n1(a.y(p.Overall.Values[name])), color(si))
				}
			}
		}
		y += sweepHeight
	}
	y += svgMargin

	var out strings.Builder
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%s" viewBox="0 0 %d %s" font-family="sans-serif">`+"\n",
		svgWidth, n1(y), svgWidth, n1(y))
	fmt.Fprintf(&out, `<rect width="%d" height="%s" fill="#fff"/>`+"\n", svgWidth, n1(y))
	out.WriteString(body.b.String())
	out.WriteString("</svg>\n")
	_, err := io.WriteString(w, out.String())
	return err
}
