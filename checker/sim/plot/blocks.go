package plot

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// layer is one block category of the stack, bottom first: pinned and
// reserved sit on the axis so that their growth is read against zero,
// and free is on top, so the stack's top is the capacity.
type layer struct {
	name  string
	color color.RGBA
	of    func(s *sim.Sample) int64
}

var layers = []layer{
	{"pinned", colPinned, func(s *sim.Sample) int64 { return s.Pinned }},
	{"reserved", colReserved, func(s *sim.Sample) int64 { return s.Reserved }},
	{"active", colActive, func(s *sim.Sample) int64 { return s.Active }},
	{"cached", colCached, func(s *sim.Sample) int64 { return s.Cached }},
	{"free", colFree, func(s *sim.Sample) int64 { return s.Free }},
}

// blocksKey lists the categories top to bottom, as the stack shows them.
func blocksKey() []keyItem {
	var key []keyItem
	for i := len(layers) - 1; i >= 0; i-- {
		key = append(key, keyItem{label: layers[i].name, color: layers[i].color})
	}
	return append(key,
		keyItem{label: "stranded source KV (pinned after compute while decode waits)", color: colStranded, line: 1.2},
		keyItem{label: "held for attempts that cannot succeed", color: colDoomed, line: 1.2, dashes: doomedDashes},
		keyItem{label: "decode router's booking", color: colBooked, line: 1.2, dashes: bookedDashes})
}

// doomedDashes tells the blocks held for doomed attempts from the
// stranded source line where both are drawn.
var doomedDashes = []vg.Length{3, 2}

// overlays are the lines drawn over the stack: the stranded source KV
// the handoff design is about, and the blocks held for attempts that can
// no longer succeed (StrandedBlockSeconds' integrand).
var overlays = []struct {
	name   string
	color  color.RGBA
	dashes []vg.Length
	of     func(s *sim.Sample) int64
}{
	{"stranded source", colStranded, nil, func(s *sim.Sample) int64 { return s.StrandedSource }},
	{"doomed", colDoomed, doomedDashes, func(s *sim.Sample) int64 { return s.Stranded }},
	{"booked", colBooked, bookedDashes, func(s *sim.Sample) int64 { return s.Booked }},
}

// bookedDashes draws the decode router's booking dotted: it is a
// router's estimate, not blocks the worker holds.
var bookedDashes = []vg.Length{1, 1.5}

// stack is a gonum plotter drawing a worker's block categories as
// stacked areas, with its stranded and doomed blocks as lines over them.
type stack struct {
	samples []sim.Sample
	ta      timeAxis
	// peaks is the note in the panel's corner: a few hundred pinned
	// blocks are a sliver against a capacity of thousands, but they are
	// the number that matters.
	peaks string
	warn  bool
}

// peakNote says the largest pinned, reserved, stranded source, doomed and
// router-booked counts of a worker's samples, those that are not zero;
// warn when
// blocks were stranded or doomed.
func peakNote(ss []sim.Sample) (note string, warn bool) {
	var pin, res, str, doom, booked int64
	for i := range ss {
		pin, res = max(pin, ss[i].Pinned), max(res, ss[i].Reserved)
		str, doom = max(str, ss[i].StrandedSource), max(doom, ss[i].Stranded)
		booked = max(booked, ss[i].Booked)
	}
	var parts []string
	for _, p := range []struct {
		name string
		v    int64
	}{{"pinned", pin}, {"reserved", res}, {"stranded source", str}, {"doomed", doom}, {"booked", booked}} {
		if p.v > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p.name, p.v))
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	return "peak " + strings.Join(parts, ", "), str > 0 || doom > 0
}

func (s *stack) Plot(c draw.Canvas, p *gplot.Plot) {
	if len(s.samples) == 0 {
		return
	}
	tx, ty := p.Transforms(&c)
	n := len(s.samples)
	below := make([]int64, n)
	for _, l := range layers {
		pts := make([]vg.Point, 0, 2*n)
		for i := range s.samples {
			pts = append(pts, vg.Point{X: tx(s.ta.x(s.samples[i].TMS)), Y: ty(float64(below[i] + l.of(&s.samples[i])))})
		}
		for i := n - 1; i >= 0; i-- {
			pts = append(pts, vg.Point{X: tx(s.ta.x(s.samples[i].TMS)), Y: ty(float64(below[i]))})
			below[i] += l.of(&s.samples[i])
		}
		if n == 1 {
			// One sample is an instant: give it a sliver of width.
			pts = []vg.Point{pts[0], {X: pts[0].X + 1, Y: pts[0].Y}, {X: pts[1].X + 1, Y: pts[1].Y}, pts[1]}
		}
		c.FillPolygon(l.color, c.ClipPolygonXY(pts))
	}
	for _, o := range overlays {
		line := make([]vg.Point, n)
		drawn := false
		for i := range s.samples {
			line[i] = vg.Point{X: tx(s.ta.x(s.samples[i].TMS)), Y: ty(float64(o.of(&s.samples[i])))}
			drawn = drawn || o.of(&s.samples[i]) != 0
		}
		if drawn {
			c.StrokeLines(draw.LineStyle{Color: o.color, Width: vg.Points(1.2), Dashes: o.dashes}, c.ClipLinesXY(line)...)
		}
	}
	if s.peaks != "" {
		ts := textStyle(7.5, s.warn)
		ts.Color = rgb(0x404040)
		if s.warn {
			ts.Color = colStranded
		}
		ts.XAlign, ts.YAlign = draw.XRight, draw.YTop
		c.FillText(ts, vg.Point{X: c.Max.X - vg.Points(4), Y: c.Max.Y - vg.Points(3)}, s.peaks)
	}
}

// blockPanel is one worker's stacked block chart over [lo, hi] ms.
func blockPanel(ws *sim.WorkerSeries, ta timeAxis, lo, hi float64) *gplot.Plot {
	p := newPlot(workerTitle(ws))
	p.X.Label.Text = ta.label
	p.Y.Label.Text = "KV blocks"
	ss := thin(ws.Samples)
	note, warn := peakNote(ws.Samples)
	p.Add(&stack{samples: ss, ta: ta, peaks: note, warn: warn})
	p.X.Min, p.X.Max = ta.x(lo), ta.x(hi)
	top := float64(ws.Capacity)
	for i := range ss {
		sum := ss[i].Free + ss[i].Cached + ss[i].Active + ss[i].Pinned + ss[i].Reserved
		// The router's booking may run far beyond the capacity (requests
		// booked while they wait): it is clipped at the top, and its peak
		// is in the corner's note.
		top = math.Max(top, float64(max(sum, ss[i].Stranded, ss[i].StrandedSource)))
	}
	if top <= 0 {
		top = 1
	}
	p.Y.Min, p.Y.Max = 0, top
	return p
}

// Blocks shows each worker's KV blocks by category over time, one panel
// per worker in a grid (prefill workers first, as the simulator numbers
// them). Each panel stacks pinned, reserved, active, cached and free, so
// the top is the worker's capacity, draws its stranded source KV as a
// dark line and the blocks it holds for doomed attempts as a dashed one,
// and notes in its corner the peak pinned, reserved, stranded source and
// doomed counts, which a capacity-sized axis can make too thin to read.
func Blocks(tl *sim.Timeline) (*Figure, error) {
	if err := checkWorkers(tl); err != nil {
		return nil, err
	}
	lo, hi := sampleSpan(tl)
	ta := newTimeAxis(hi - lo)
	n := len(tl.Workers)
	cols := min(n, 2)
	rows := (n + cols - 1) / cols
	panels := make([][]*gplot.Plot, rows)
	for r := range panels {
		panels[r] = make([]*gplot.Plot, cols)
	}
	for i := range tl.Workers {
		panels[i/cols][i%cols] = blockPanel(&tl.Workers[i], ta, lo, hi)
	}
	return gridFigure("blocks", "KV blocks per worker: "+label(tl), blocksKey(), 11*vg.Inch, vg.Length(rows)*2.5*vg.Inch, panels), nil
}

// CompareBlocks puts two runs' block charts side by side, a's workers in
// the left column and b's in the right, one row per worker, on one time
// axis so the same moment lines up across the columns.
func CompareBlocks(a, b *sim.Timeline) (*Figure, error) {
	if err := checkWorkers(a, b); err != nil {
		return nil, err
	}
	lo, hi := sampleSpan(a, b)
	ta := newTimeAxis(hi - lo)
	rows := max(len(a.Workers), len(b.Workers))
	panels := make([][]*gplot.Plot, rows)
	for r := range panels {
		panels[r] = make([]*gplot.Plot, 2)
		for col, tl := range []*sim.Timeline{a, b} {
			if r < len(tl.Workers) {
				panels[r][col] = blockPanel(&tl.Workers[r], ta, lo, hi)
			}
		}
	}
	key := blocksKey()
	w := 12 * vg.Inch
	hh := headerHeight(key, w)
	title := "KV blocks per worker: " + label(a) + " vs " + label(b)
	return &Figure{
		Name: "compare-blocks", Title: title, Width: w, Height: hh + 24 + vg.Length(rows)*2.2*vg.Inch,
		draw: func(c draw.Canvas) {
			grid(columnTitles(drawHeader(c, title, key), []string{label(a), label(b)}), panels)
		},
	}, nil
}
