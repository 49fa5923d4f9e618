// Package plot draws a simulated run's timeline (sim.Timeline) as charts a
// person can read at a glance: each worker's KV blocks by category, each
// worker's load, and each handoff's phases. Every chart is written as SVG
// and PNG, and report.html puts them in one self-contained page with the
// run's summary and per-handoff tables.
//
// The charts exist to make lifecycle failures visible: blocks that stay
// pinned on prefill workers after their handoff is gone, reservations that
// never fill, stranded blocks, handoffs whose phases never end. Colors are
// the same in every chart (pinned is always orange-red, reserved always
// purple), so a reader learns them once.
//
// Output is deterministic: the same timeline gives byte-identical files,
// so they can be compared and kept as artifacts.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"strconv"

	xfont "golang.org/x/image/font"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// DPI is the resolution of the PNG files: a figure W inches wide is
// W*DPI pixels wide.
const DPI = 96

// ErrNoWorkers is returned for a timeline without worker series: there is
// nothing to draw the block and load charts from.
var ErrNoWorkers = errors.New("plot: timeline has no workers")

// Figure is one chart image. It keeps the plots it was built from, so the
// SVG and the PNG are two renderings of the same drawing. Drawing updates
// those plots' axes, so render a figure from one goroutine at a time.
type Figure struct {
	// Name is the file name stem: blocks, load, phases, compare-blocks...
	Name string
	// Title is what the figure shows, in a sentence.
	Title         string
	Width, Height vg.Length
	draw          func(c draw.Canvas)
}

// SVG renders the figure as an SVG document. Fonts are referred to by
// name (Liberation Sans), not embedded, which keeps the files small.
func (f *Figure) SVG() (b []byte, err error) {
	defer recoverDraw(f, &err)
	c := vgsvg.New(f.Width, f.Height)
	f.render(c)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot: %s.svg: %w", f.Name, err)
	}
	return buf.Bytes(), nil
}

// PNG renders the figure as a PNG image of PixelSize at DPI.
func (f *Figure) PNG() (b []byte, err error) {
	defer recoverDraw(f, &err)
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(DPI))}
	f.render(c)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot: %s.png: %w", f.Name, err)
	}
	return buf.Bytes(), nil
}

// PixelSize is the size of the PNG image, in pixels.
func (f *Figure) PixelSize() (w, h int) {
	px := func(l vg.Length) int { return int(float64(l/vg.Inch)*DPI + 0.5) }
	return px(f.Width), px(f.Height)
}

func (f *Figure) render(c vg.CanvasSizer) {
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	f.draw(dc)
}

// recoverDraw turns a panic inside gonum's drawing code (its answer to
// inputs it cannot draw) into an error, so one bad chart does not take
// down the command that asked for a report.
func recoverDraw(f *Figure, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("plot: drawing %s: %v", f.Name, r)
	}
}

// Colors of the block categories. Pinned is the strong color: pinned
// blocks piling up on a prefill worker is the failure these charts are
// for. Free is pale so that it reads as background.
var (
	colFree     = rgb(0xe8e8e8)
	colCached   = rgb(0x9ecae1)
	colActive   = rgb(0x41ab5d)
	colReserved = rgb(0x807dba)
	colPinned   = rgb(0xe6550d)
	colStranded = rgb(0x67000d)
	colDoomed   = rgb(0x3f007d)
	colBooked   = rgb(0x08306b)
)

// phaseColors colors the phases of a handoff; the phases that hold blocks
// share their category's color.
var phaseColors = map[string]color.RGBA{
	"waiting":      rgb(0xbdbdbd),
	"queued":       rgb(0xc6dbef),
	"computing":    rgb(0x2171b5),
	"pinned":       colPinned,
	"reserved":     colReserved,
	"transferring": rgb(0xf2b701),
	"decoding":     colActive,
}

// Load chart colors.
var (
	colCompute  = rgb(0x2171b5)
	colHeadroom = colReserved
	colInFlight = rgb(0x252525)
	colSlots    = colActive
	colLimit    = rgb(0x969696)
)

func rgb(v uint32) color.RGBA {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// sans is the typeface of every label: the sans-serif face gonum ships,
// so the output does not depend on the fonts installed.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func textStyle(size vg.Length, bold bool) text.Style {
	f := sans
	if bold {
		f.Weight = xfont.WeightBold
	}
	return text.Style{
		Color:   color.Black,
		Font:    font.From(f, size),
		XAlign:  draw.XLeft,
		YAlign:  draw.YBottom,
		Handler: gplot.DefaultTextHandler,
	}
}

// newPlot is a panel with this package's fonts and sizes.
func newPlot(title string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 10)
	p.Title.Padding = vg.Points(3)
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 8.5)
		a.Tick.Label.Font = font.From(sans, 7.5)
		a.Padding = vg.Points(2)
		a.Tick.Marker = niceTicks{}
	}
	p.Legend.TextStyle.Font = font.From(sans, 8)
	return p
}

// timeAxis chooses the time unit: milliseconds for short runs, seconds
// once tick labels in milliseconds would be long.
type timeAxis struct {
	div   float64
	label string
}

func newTimeAxis(spanMS float64) timeAxis {
	if spanMS > 20000 {
		return timeAxis{div: 1000, label: "time (s)"}
	}
	return timeAxis{div: 1, label: "time (ms)"}
}

func (t timeAxis) x(ms float64) float64 { return ms / t.div }

// keyItem is one entry of a figure's color key.
type keyItem struct {
	label string
	color color.Color
	// line draws the entry as a line of this width and dashes instead of
	// a filled swatch.
	line   vg.Length
	dashes []vg.Length
	// note is text alone, without a swatch.
	note bool
}

// width is how much of a key row the entry takes.
func (k keyItem) width(ks text.Style) vg.Length {
	if k.note {
		return ks.Width(k.label) + vg.Points(14)
	}
	return vg.Points(16+4+14) + ks.Width(k.label)
}

// drawHeader draws a figure's title and, under it, its color key, wrapped
// to the figure's width; it returns the canvas left below them.
func drawHeader(c draw.Canvas, title string, key []keyItem) draw.Canvas {
	pad := vg.Points(6)
	ts := textStyle(12, true)
	top := c.Max.Y - pad
	th := ts.Height(title)
	c.FillText(ts, vg.Point{X: c.Min.X + pad, Y: top - th}, title)
	y := top - th - vg.Points(6)
	if len(key) > 0 {
		ks := textStyle(8.5, false)
		h := ks.Height("Mg")
		y -= h
		x := c.Min.X + pad
		sw := vg.Points(16)
		for _, k := range key {
			if x+k.width(ks)-vg.Points(14) > c.Max.X-pad {
				x = c.Min.X + pad
				y -= h + vg.Points(4)
			}
			if k.note {
				ns := ks
				ns.Color = rgb(0x525252)
				c.FillText(ns, vg.Point{X: x, Y: y + ks.FontExtents().Descent}, k.label)
				x += k.width(ks)
				continue
			}
			if k.line > 0 {
				ym := y + h/2
				c.StrokeLine2(draw.LineStyle{Color: k.color, Width: k.line, Dashes: k.dashes}, x, ym, x+sw, ym)
			} else {
				r := vg.Rectangle{Min: vg.Point{X: x, Y: y + 1}, Max: vg.Point{X: x + sw, Y: y + h - 1}}
				c.FillPolygon(k.color, rectPts(r))
				c.StrokeLines(draw.LineStyle{Color: rgb(0x737373), Width: 0.4}, append(rectPts(r), r.Min))
			}
			c.FillText(ks, vg.Point{X: x + sw + 4, Y: y + ks.FontExtents().Descent}, k.label)
			x += k.width(ks)
		}
	}
	y -= vg.Points(4)
	out := c
	out.Max.Y = y
	return out
}

func rectPts(r vg.Rectangle) []vg.Point {
	return []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}
}

// headerHeight is the height drawHeader takes for a key on a figure of
// width w, counting the rows the key wraps into.
func headerHeight(key []keyItem, w vg.Length) vg.Length {
	h := vg.Points(6+16+6) + vg.Points(4)
	if len(key) == 0 {
		return h
	}
	ks := textStyle(8.5, false)
	lh := ks.Height("Mg")
	rows, x := 1, vg.Points(6)
	for _, k := range key {
		kw := k.width(ks)
		if x+kw-vg.Points(14) > w-vg.Points(6) {
			rows++
			x = vg.Points(6)
		}
		x += kw
	}
	return h + vg.Length(rows)*(lh+vg.Points(4))
}

// columnTitles draws one bold title over each column of a grid, for the
// side-by-side comparisons; it returns the canvas left below them.
func columnTitles(c draw.Canvas, titles []string) draw.Canvas {
	ts := textStyle(11, true)
	ts.XAlign = draw.XCenter
	h := ts.Height("Mg") + vg.Points(6)
	w := (c.Max.X - c.Min.X) / vg.Length(len(titles))
	for i, t := range titles {
		x := c.Min.X + w*vg.Length(i) + w/2
		c.FillText(ts, vg.Point{X: x, Y: c.Max.Y - h + vg.Points(3)}, t)
	}
	out := c
	out.Max.Y -= h
	return out
}

// grid lays panels out with gonum's Align, so every panel's data area has
// the same size and the axes line up; nil panels leave their cell empty.
// gridFigure is a figure of panels in a grid under a header: its title
// and key. height is the panels' height.
func gridFigure(name, title string, key []keyItem, w vg.Length, height vg.Length, panels [][]*gplot.Plot) *Figure {
	return &Figure{
		Name: name, Title: title, Width: w, Height: headerHeight(key, w) + height,
		draw: func(c draw.Canvas) { grid(drawHeader(c, title, key), panels) },
	}
}

func grid(c draw.Canvas, panels [][]*gplot.Plot) {
	rows := len(panels)
	if rows == 0 {
		return
	}
	cols := len(panels[0])
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(10),
		PadLeft: vg.Points(4), PadRight: vg.Points(10), PadBottom: vg.Points(4)}
	cs := gplot.Align(panels, t, c)
	for j := range panels {
		for i, p := range panels[j] {
			if p != nil {
				p.Draw(cs[j][i])
			}
		}
	}
}

// finite says whether every value can be placed on an axis.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// label names a timeline in titles: its policy and engine.
func label(tl *sim.Timeline) string {
	switch {
	case tl.Policy != "" && tl.Engine != "":
		return tl.Policy + " (" + tl.Engine + ")"
	case tl.Policy != "":
		return tl.Policy
	}
	return "run"
}

// workerTitle is the panel title of a worker.
func workerTitle(ws *sim.WorkerSeries) string {
	return fmt.Sprintf("worker %d (%s)", ws.Worker, ws.Role)
}

// checkTimeline refuses what the charts cannot place: a nil timeline and
// times or counts that are not finite numbers.
// checkWorkers refuses timelines a worker chart cannot draw: broken ones,
// or ones without workers.
func checkWorkers(tls ...*sim.Timeline) error {
	for _, tl := range tls {
		if err := checkTimeline(tl); err != nil {
			return err
		}
		if len(tl.Workers) == 0 {
			return ErrNoWorkers
		}
	}
	return nil
}

func checkTimeline(tl *sim.Timeline) error {
	if tl == nil {
		return errors.New("plot: nil timeline")
	}
	for _, ws := range tl.Workers {
		for i, s := range ws.Samples {
			if !finite(s.TMS) {
				return fmt.Errorf("plot: worker %d sample %d: time %v", ws.Worker, i, s.TMS)
			}
		}
	}
	for _, h := range tl.Handoffs {
		if !finite(h.ArrivalMS) {
			return fmt.Errorf("plot: request %d: arrival %v", h.Request, h.ArrivalMS)
		}
		for _, ph := range h.Phases {
			if !finite(ph.StartMS, ph.EndMS) {
				return fmt.Errorf("plot: request %d: phase %s [%v, %v]", h.Request, ph.Name, ph.StartMS, ph.EndMS)
			}
		}
	}
	return nil
}

// sampleSpan is the time range of all samples of the timelines.
func sampleSpan(tls ...*sim.Timeline) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, tl := range tls {
		for _, ws := range tl.Workers {
			for _, s := range ws.Samples {
				lo, hi = math.Min(lo, s.TMS), math.Max(hi, s.TMS)
			}
		}
	}
	if lo > hi {
		return 0, 1
	}
	if lo == hi {
		hi = lo + 1
	}
	return lo, hi
}

// maxPoints bounds the points a series puts in a panel: a panel is a few
// hundred pixels wide, and more points only make the SVG larger.
const maxPoints = 1200

// thin keeps every k-th sample (and the last) so at most maxPoints remain.
// Taking whole samples, not per-category extremes, keeps each drawn
// stack summing to the capacity.
func thin(ss []sim.Sample) []sim.Sample {
	if len(ss) <= maxPoints {
		return ss
	}
	k := (len(ss) + maxPoints - 1) / maxPoints
	out := make([]sim.Sample, 0, len(ss)/k+2)
	for i := 0; i < len(ss); i += k {
		out = append(out, ss[i])
	}
	if last := ss[len(ss)-1]; out[len(out)-1].TMS != last.TMS {
		out = append(out, last)
	}
	return out
}

// niceTicks marks an axis at round steps (1, 2 or 5 times a power of
// ten), about six labelled ticks with minor ticks between, and labels
// them without trailing zeros: gonum's default often labels only the two
// ends, with two decimals.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(hi > lo) || !finite(lo, hi) {
		return nil
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = m * mag
	}
	var ticks []gplot.Tick
	minor := step / 5
	if step/mag == 2 {
		minor = step / 4
	}
	for i := math.Ceil(lo / minor); i*minor <= hi+minor*1e-9; i++ {
		v := i * minor
		if math.Abs(v) < minor*1e-9 {
			v = 0
		}
		t := gplot.Tick{Value: v}
		if r := math.Round(v / step); math.Abs(v-r*step) < minor*1e-6 {
			t.Label = strconv.FormatFloat(r*step, 'f', -1, 64)
			if len(t.Label) > 10 {
				t.Label = strconv.FormatFloat(r*step, 'g', 6, 64)
			}
		}
		ticks = append(ticks, t)
	}
	return ticks
}
