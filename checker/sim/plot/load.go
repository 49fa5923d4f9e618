package plot

import (
	"image/color"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// Tokens and requests differ by orders of magnitude and gonum has no
// second y axis, so each worker gets two panels, one above the other on
// the same time axis: the tokens its router weighs, then its requests.

var loadKey = []keyItem{
	{label: "compute load (prefill tokens)", color: colCompute, line: 1.4},
	{label: "headroom in use (decode tokens)", color: colHeadroom, line: 1.4},
	{label: "in flight (requests)", color: colInFlight, line: 1.2},
	{label: "slots used", color: colSlots, line: 1.2, dashes: []vg.Length{4, 2}},
	{label: "slot limit", color: colLimit, line: 1, dashes: []vg.Length{1, 2}},
}

// loadShows says which series a worker's panels draw: a prefill
// worker's compute load, a decode worker's headroom and slots, and
// whichever of them is non-zero on a worker of another role.
type loadShows struct{ compute, headroom, slots bool }

func shows(ws *sim.WorkerSeries) loadShows {
	sh := loadShows{compute: ws.Role == "prefill", headroom: ws.Role == "decode", slots: ws.Slots > 0}
	for i := range ws.Samples {
		s := &ws.Samples[i]
		sh.compute = sh.compute || s.ComputeLoad != 0
		sh.headroom = sh.headroom || s.Headroom != 0
		sh.slots = sh.slots || s.Slots != 0
	}
	return sh
}

// loadTop is the largest value each of a worker's two panels must show.
func loadTop(ws *sim.WorkerSeries) (tokens, requests float64) {
	sh := shows(ws)
	var tok, req int64 = 1, 1
	if sh.slots {
		req = max(req, int64(ws.Slots))
	}
	for i := range ws.Samples {
		s := &ws.Samples[i]
		if sh.compute {
			tok = max(tok, s.ComputeLoad)
		}
		if sh.headroom {
			tok = max(tok, s.Headroom)
		}
		req = max(req, s.InFlight)
		if sh.slots {
			req = max(req, s.Slots)
		}
	}
	return float64(tok) * 1.05, float64(req) * 1.05
}

func stepLine(ss []sim.Sample, ta timeAxis, of func(*sim.Sample) int64, col color.Color, width vg.Length, dashes []vg.Length) (*plotter.Line, error) {
	xys := make(plotter.XYs, len(ss))
	for i := range ss {
		xys[i] = plotter.XY{X: ta.x(ss[i].TMS), Y: float64(of(&ss[i]))}
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	// A counter keeps its sampled value until the next sample.
	l.StepStyle = plotter.PostStep
	l.LineStyle = draw.LineStyle{Color: col, Width: width, Dashes: dashes}
	return l, nil
}

// loadPanels are a worker's two load panels over [lo, hi] ms, with the
// y ranges given so that compared workers share a scale.
func loadPanels(ws *sim.WorkerSeries, ta timeAxis, lo, hi, tokTop, reqTop float64, xLabel bool) (top, bottom *gplot.Plot, err error) {
	sh := shows(ws)
	ss := thin(ws.Samples)
	top = newPlot(workerTitle(ws))
	top.Y.Label.Text = "tokens"
	bottom = newPlot("")
	bottom.Y.Label.Text = "requests"
	if xLabel {
		bottom.X.Label.Text = ta.label
	}
	add := func(p *gplot.Plot, on bool, of func(*sim.Sample) int64, k keyItem) {
		if !on || err != nil || len(ss) == 0 {
			return
		}
		var l *plotter.Line
		l, err = stepLine(ss, ta, of, k.color, k.line, k.dashes)
		if err == nil {
			p.Add(l)
		}
	}
	add(top, sh.headroom, func(s *sim.Sample) int64 { return s.Headroom }, loadKey[1])
	add(top, sh.compute, func(s *sim.Sample) int64 { return s.ComputeLoad }, loadKey[0])
	// Slots used often equal the requests in flight: the dashed line goes
	// on top, so both stay visible.
	add(bottom, true, func(s *sim.Sample) int64 { return s.InFlight }, loadKey[2])
	add(bottom, sh.slots, func(s *sim.Sample) int64 { return s.Slots }, loadKey[3])
	if err != nil {
		return nil, nil, err
	}
	if ws.Slots > 0 {
		limit := plotter.NewFunction(func(float64) float64 { return float64(ws.Slots) })
		limit.LineStyle = draw.LineStyle{Color: colLimit, Width: 1, Dashes: loadKey[4].dashes}
		bottom.Add(limit)
	}
	for _, p := range []*gplot.Plot{top, bottom} {
		p.X.Min, p.X.Max = ta.x(lo), ta.x(hi)
		p.Y.Min = 0
	}
	top.Y.Max, bottom.Y.Max = tokTop, reqTop
	return top, bottom, nil
}

// Load shows each worker's load over time: above, the tokens its router
// weighs (a prefill worker's compute load, a decode worker's admission
// headroom in use); below, its in-flight requests and, on decode workers,
// the slots used against the slot limit.
func Load(tl *sim.Timeline) (*Figure, error) {
	if err := checkWorkers(tl); err != nil {
		return nil, err
	}
	lo, hi := sampleSpan(tl)
	ta := newTimeAxis(hi - lo)
	n := len(tl.Workers)
	cols := min(n, 2)
	rows := 2 * ((n + cols - 1) / cols)
	panels := make([][]*gplot.Plot, rows)
	for r := range panels {
		panels[r] = make([]*gplot.Plot, cols)
	}
	for i := range tl.Workers {
		ws := &tl.Workers[i]
		tok, req := loadTop(ws)
		top, bottom, err := loadPanels(ws, ta, lo, hi, tok, req, true)
		if err != nil {
			return nil, err
		}
		r := 2 * (i / cols)
		panels[r][i%cols], panels[r+1][i%cols] = top, bottom
	}
	return gridFigure("load", "Load per worker: "+label(tl), loadKey, 11*vg.Inch, vg.Length(rows)*1.6*vg.Inch, panels), nil
}

// CompareLoad puts two runs' load panels side by side, a on the left and
// b on the right, each worker's panels on one scale across the columns.
func CompareLoad(a, b *sim.Timeline) (*Figure, error) {
	if err := checkWorkers(a, b); err != nil {
		return nil, err
	}
	lo, hi := sampleSpan(a, b)
	ta := newTimeAxis(hi - lo)
	n := max(len(a.Workers), len(b.Workers))
	panels := make([][]*gplot.Plot, 2*n)
	for r := range panels {
		panels[r] = make([]*gplot.Plot, 2)
	}
	for i := range n {
		var tok, req float64
		for _, tl := range []*sim.Timeline{a, b} {
			if i < len(tl.Workers) {
				t, r := loadTop(&tl.Workers[i])
				tok, req = max(tok, t), max(req, r)
			}
		}
		for col, tl := range []*sim.Timeline{a, b} {
			if i >= len(tl.Workers) {
				continue
			}
			top, bottom, err := loadPanels(&tl.Workers[i], ta, lo, hi, tok, req, i == n-1)
			if err != nil {
				return nil, err
			}
			panels[2*i][col], panels[2*i+1][col] = top, bottom
		}
	}
	w := 12 * vg.Inch
	hh := headerHeight(loadKey, w)
	title := "Load per worker: " + label(a) + " vs " + label(b)
	return &Figure{
		Name: "compare-load", Title: title, Width: w, Height: hh + 24 + vg.Length(2*n)*1.4*vg.Inch,
		draw: func(c draw.Canvas) {
			grid(columnTitles(drawHeader(c, title, loadKey), []string{label(a), label(b)}), panels)
		},
	}, nil
}
