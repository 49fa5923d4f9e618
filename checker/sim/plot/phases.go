package plot

import (
	"cmp"
	"image/color"
	"math"
	"slices"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// rowHeight is how much of its row a handoff's bars fill, in rows.
const rowHeight = 0.78

// phaseKey lists the phases in chart order, then the marks on the rows.
func phaseKey() []keyItem {
	var key []keyItem
	for _, n := range sim.PhaseNames {
		key = append(key, keyItem{label: n, color: phaseColor(n)})
	}
	return append(key,
		keyItem{label: "arrival", color: color.Black, line: 1.2},
		keyItem{label: "overlapping phases split their row into thinner bars; a note ends each row where a side did not end ok", note: true})
}

func phaseColor(name string) color.RGBA {
	if c, ok := phaseColors[name]; ok {
		return c
	}
	return rgb(0x525252)
}

// bar is one phase interval on the chart, in data coordinates.
type bar struct {
	x0, x1, y0, y1 float64
	color          color.Color
}

// ganttRow is one handoff's bars, its arrival and, when a side did not
// end ok, a note saying how the sides ended.
type ganttRow struct {
	y, arrival, end float64
	bars            []bar
	note            string
}

// gantt is a gonum plotter drawing one row per handoff.
type gantt struct{ rows []ganttRow }

func (g *gantt) Plot(c draw.Canvas, p *gplot.Plot) {
	tx, ty := p.Transforms(&c)
	if len(g.rows) == 0 {
		ts := textStyle(10, false)
		ts.XAlign, ts.YAlign = draw.XCenter, draw.YCenter
		c.FillText(ts, c.Center(), "no handoffs recorded")
		return
	}
	minW := vg.Points(1)
	for _, r := range g.rows {
		for _, b := range r.bars {
			x0, x1 := tx(b.x0), tx(b.x1)
			if x1-x0 < minW {
				x1 = x0 + minW
			}
			rect := vg.Rectangle{Min: vg.Point{X: x0, Y: ty(b.y0)}, Max: vg.Point{X: x1, Y: ty(b.y1)}}
			c.FillPolygon(b.color, c.ClipPolygonXY(rectPts(rect)))
		}
		ax := tx(r.arrival)
		if c.ContainsX(ax) {
			c.StrokeLine2(draw.LineStyle{Color: color.Black, Width: vg.Points(1.2)}, ax, ty(r.y-0.45), ax, ty(r.y+0.45))
		}
	}
	ns := noteStyle()
	for _, r := range g.rows {
		// A zoomed panel leaves out the notes of rows that run past it.
		if r.note != "" && r.end <= p.X.Max {
			c.FillText(ns, vg.Point{X: tx(r.end) + vg.Points(3), Y: ty(r.y)}, r.note)
		}
	}
}

// noteStyle is the style of the outcome notes.
func noteStyle() text.Style {
	ns := textStyle(7, false)
	ns.Color = rgb(0xa50f15)
	ns.YAlign = draw.YCenter
	return ns
}

// GlyphBoxes tells gonum where the outcome notes go, so it shrinks the
// data area to keep them inside the panel instead of clipping them.
func (g *gantt) GlyphBoxes(p *gplot.Plot) []gplot.GlyphBox {
	ns := noteStyle()
	var boxes []gplot.GlyphBox
	for _, r := range g.rows {
		if r.note == "" || r.end > p.X.Max {
			continue
		}
		h := ns.Height(r.note)
		boxes = append(boxes, gplot.GlyphBox{X: p.X.Norm(r.end), Y: p.Y.Norm(r.y),
			Rectangle: vg.Rectangle{Min: vg.Point{X: vg.Points(3), Y: -h / 2}, Max: vg.Point{X: vg.Points(3) + ns.Width(r.note), Y: h / 2}}})
	}
	return boxes
}

// lanes places a handoff's phases: phases that overlap in time share the
// row's height as thinner sub-bars, one lane each, so none hides another;
// a run of phases that overlaps nothing fills the row.
func lanes(phs []sim.Phase, y float64) []bar {
	order := func(n string) int {
		if i := slices.Index(sim.PhaseNames, n); i >= 0 {
			return i
		}
		return len(sim.PhaseNames)
	}
	ps := slices.Clone(phs)
	slices.SortStableFunc(ps, func(a, b sim.Phase) int {
		return cmp.Or(cmp.Compare(a.StartMS, b.StartMS), cmp.Compare(order(a.Name), order(b.Name)))
	})
	var out []bar
	for i := 0; i < len(ps); {
		// A cluster is a maximal run of phases each overlapping the
		// span of those before it.
		end, j := ps[i].EndMS, i+1
		for j < len(ps) && ps[j].StartMS < end {
			end = math.Max(end, ps[j].EndMS)
			j++
		}
		var laneEnd []float64
		lane := make([]int, j-i)
		for k := i; k < j; k++ {
			l := slices.IndexFunc(laneEnd, func(e float64) bool { return e <= ps[k].StartMS })
			if l < 0 {
				l = len(laneEnd)
				laneEnd = append(laneEnd, 0)
			}
			laneEnd[l] = ps[k].EndMS
			lane[k-i] = l
		}
		h := rowHeight / float64(len(laneEnd))
		for k := i; k < j; k++ {
			top := y + rowHeight/2 - float64(lane[k-i])*h
			out = append(out, bar{x0: ps[k].StartMS, x1: ps[k].EndMS, y0: top - h, y1: top, color: phaseColor(ps[k].Name)})
		}
		i = j
	}
	return out
}

// outcomeNote says how the sides of a handoff ended, when not both ok.
func outcomeNote(h *sim.HandoffTimeline) string {
	if h.Source == "ok" && h.Destination == "ok" {
		return ""
	}
	return "source " + h.Source + ", destination " + h.Destination
}

// ganttPanel is the phase chart of a timeline's handoffs, with row i for
// the i-th of the requests given (request indices ascending, top down)
// and time in [lo, hi] ms.
func ganttPanel(tl *sim.Timeline, requests []int, ta timeAxis, lo, hi float64, title string) *gplot.Plot {
	p := newPlot(title)
	p.X.Label.Text = ta.label
	p.Y.Label.Text = "request"
	p.Y.Tick.Label.Font.Size = 6.5
	if len(requests) > 0 {
		gr := plotter.NewGrid()
		gr.Horizontal.Color = nil
		gr.Vertical.Color = rgb(0xdddddd)
		p.Add(gr)
	}
	row := map[int]int{}
	var ticks gplot.ConstantTicks
	for i, r := range requests {
		row[r] = i
		ticks = append(ticks, gplot.Tick{Value: -float64(i), Label: strconv.Itoa(r)})
	}
	g := &gantt{}
	for i := range tl.Handoffs {
		h := &tl.Handoffs[i]
		y := -float64(row[h.Request])
		bars := lanes(h.Phases, y)
		for k := range bars {
			bars[k].x0, bars[k].x1 = ta.x(bars[k].x0), ta.x(bars[k].x1)
		}
		end := h.ArrivalMS
		for _, ph := range h.Phases {
			end = math.Max(end, ph.EndMS)
		}
		g.rows = append(g.rows, ganttRow{y: y, arrival: ta.x(h.ArrivalMS), end: ta.x(end), bars: bars, note: outcomeNote(h)})
	}
	p.Add(g)
	p.Y.Tick.Marker = ticks
	p.X.Min, p.X.Max = ta.x(lo), ta.x(hi)
	if len(requests) == 0 {
		p.Y.Min, p.Y.Max = 0, 1
		p.Y.Tick.Marker = gplot.ConstantTicks{}
	} else {
		p.Y.Min, p.Y.Max = -float64(len(requests))+0.5, 0.5
	}
	return p
}

// phaseSpan is the time range of the handoffs' arrivals and phases, with
// a little room on the right.
func phaseSpan(tls ...*sim.Timeline) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, tl := range tls {
		for i := range tl.Handoffs {
			h := &tl.Handoffs[i]
			lo, hi = math.Min(lo, h.ArrivalMS), math.Max(hi, h.ArrivalMS)
			for _, ph := range h.Phases {
				lo, hi = math.Min(lo, ph.StartMS), math.Max(hi, ph.EndMS)
			}
		}
	}
	if lo > hi {
		return 0, 1
	}
	if lo == hi {
		hi = lo + 1
	}
	return lo, hi + 0.02*(hi-lo)
}

// requestRows is the request indices of the timelines' handoffs, sorted
// and without repeats: the rows of a phase chart.
func requestRows(tls ...*sim.Timeline) []int {
	var rs []int
	for _, tl := range tls {
		for i := range tl.Handoffs {
			rs = append(rs, tl.Handoffs[i].Request)
		}
	}
	slices.Sort(rs)
	return slices.Compact(rs)
}

// zoomTo says where a second, zoomed panel should end: when a few
// handoffs last far longer than the rest (a source pinned for the whole
// run), the full span squeezes every other row into a sliver, so the
// chart adds a panel that ends a little after 90% of the handoffs have.
func zoomTo(lo, hi float64, tls ...*sim.Timeline) (float64, bool) {
	var ends []float64
	for _, tl := range tls {
		for i := range tl.Handoffs {
			h := &tl.Handoffs[i]
			end := h.ArrivalMS
			for _, ph := range h.Phases {
				end = math.Max(end, ph.EndMS)
			}
			ends = append(ends, end)
		}
	}
	if len(ends) < 5 {
		return 0, false
	}
	slices.Sort(ends)
	p90 := ends[int(0.9*float64(len(ends)-1))]
	z := p90 + 0.1*(p90-lo)
	if z <= lo || hi-lo < 3*(z-lo) {
		return 0, false
	}
	return z, true
}

func zoomTitle(ta timeAxis, lo, hi float64) string {
	unit, prec := "ms", 0
	if ta.div == 1000 {
		unit, prec = "s", 2
	}
	f := func(x float64) string { return strconv.FormatFloat(ta.x(x), 'f', prec, 64) }
	return "zoomed to " + f(lo) + "–" + f(hi) + " " + unit + ", where 90% of these handoffs have ended"
}

func phasesHeight(rows int) vg.Length {
	return vg.Length(max(rows, 8))*0.19*vg.Inch + 0.9*vg.Inch
}

// Phases is a Gantt chart of the handoffs the timeline keeps (the first
// sim.PlotHandoffs requests): one row per request, time across, each
// phase a colored bar; where phases overlap (a source pinned while the
// transfer runs) they split the row into thinner bars. A black tick marks
// each arrival, and a note ends each row whose sides did not both end ok.
// When a few handoffs outlast the rest by far, a second panel zooms in on
// the time most of them took.
func Phases(tl *sim.Timeline) (*Figure, error) {
	if err := checkTimeline(tl); err != nil {
		return nil, err
	}
	lo, hi := phaseSpan(tl)
	ta := newTimeAxis(hi - lo)
	reqs := requestRows(tl)
	panels := [][]*gplot.Plot{{ganttPanel(tl, reqs, ta, lo, hi, "")}}
	if z, ok := zoomTo(lo, hi, tl); ok {
		zta := newTimeAxis(z - lo)
		panels[0][0].Title.Text = "whole span"
		panels[0] = append(panels[0], ganttPanel(tl, reqs, zta, lo, z, zoomTitle(zta, lo, z)))
	}
	return gridFigure("phases", "Handoff phases, first "+strconv.Itoa(len(tl.Handoffs))+" requests: "+label(tl), phaseKey(), 11*vg.Inch, phasesHeight(len(reqs)), panels), nil
}

// ComparePhases puts two runs' phase charts side by side, a on the left
// and b on the right, with the same request on the same row and one time
// axis for both.
func ComparePhases(a, b *sim.Timeline) (*Figure, error) {
	for _, tl := range []*sim.Timeline{a, b} {
		if err := checkTimeline(tl); err != nil {
			return nil, err
		}
	}
	lo, hi := phaseSpan(a, b)
	ta := newTimeAxis(hi - lo)
	reqs := requestRows(a, b)
	panels := [][]*gplot.Plot{{ganttPanel(a, reqs, ta, lo, hi, label(a)), ganttPanel(b, reqs, ta, lo, hi, label(b))}}
	if z, ok := zoomTo(lo, hi, a, b); ok {
		zta := newTimeAxis(z - lo)
		zt := zoomTitle(zta, lo, z)
		panels = append(panels, []*gplot.Plot{ganttPanel(a, reqs, zta, lo, z, label(a)+", "+zt), ganttPanel(b, reqs, zta, lo, z, label(b)+", "+zt)})
	}
	return gridFigure("compare-phases", "Handoff phases: "+label(a)+" vs "+label(b), phaseKey(), 12*vg.Inch, vg.Length(len(panels))*phasesHeight(len(reqs)), panels), nil
}
