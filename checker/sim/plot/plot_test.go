package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// figureMakers builds every figure of the package from two timelines.
var figureMakers = []struct {
	name string
	make func(a, b *sim.Timeline) (*Figure, error)
}{
	{"blocks", func(a, _ *sim.Timeline) (*Figure, error) { return Blocks(a) }},
	{"load", func(a, _ *sim.Timeline) (*Figure, error) { return Load(a) }},
	{"phases", func(a, _ *sim.Timeline) (*Figure, error) { return Phases(a) }},
	{"compare-blocks", CompareBlocks},
	{"compare-load", CompareLoad},
	{"compare-phases", ComparePhases},
}

// checkPNG decodes a PNG and checks it has the figure's pixel size.
func checkPNG(t *testing.T, f *Figure, b []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s.png: %v", f.Name, err)
	}
	w, h := f.PixelSize()
	if got := img.Bounds().Size(); got.X != w || got.Y != h {
		t.Fatalf("%s.png is %dx%d, want %dx%d", f.Name, got.X, got.Y, w, h)
	}
	if w < 800 || h < 200 {
		t.Fatalf("%s.png is %dx%d: too small to read", f.Name, w, h)
	}
}

// checkSVG parses an SVG document as XML and checks its root.
func checkSVG(t *testing.T, name string, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s.svg is not XML: %v", name, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("%s.svg: root element %q", name, root)
	}
}

// Each figure renders to the same bytes every time, from a timeline
// built anew, and the renderings are a valid PNG of the stated size and
// well-formed SVG.
func TestFigures_DeterministicAndValid(t *testing.T) {
	for _, fm := range figureMakers {
		t.Run(fm.name, func(t *testing.T) {
			t.Parallel()
			var svgs, pngs [2][]byte
			for i := range 2 {
				f, err := fm.make(handMade("source-first", 0), handMade("destination-first", 30))
				if err != nil {
					t.Fatal(err)
				}
				if f.Name != fm.name {
					t.Fatalf("figure named %q, want %q", f.Name, fm.name)
				}
				if svgs[i], err = f.SVG(); err != nil {
					t.Fatal(err)
				}
				if pngs[i], err = f.PNG(); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					checkPNG(t, f, pngs[0])
					checkSVG(t, f.Name, svgs[0])
				}
			}
			if !bytes.Equal(svgs[0], svgs[1]) {
				t.Errorf("%s.svg differs between two renderings", fm.name)
			}
			if !bytes.Equal(pngs[0], pngs[1]) {
				t.Errorf("%s.png differs between two renderings", fm.name)
			}
		})
	}
}

// The SVG names its fonts rather than embedding them, and holds the
// panel titles as text, so it stays small and searchable.
func TestBlocks_SVGHoldsTitles(t *testing.T) {
	f, err := Blocks(handMade("source-first", 0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.SVG()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"worker 0 (prefill)", "worker 3 (decode)", "Liberation Sans", "pinned",
		"KV blocks per worker: source-first (vllm)",
		"peak pinned 4485, stranded source 2691, doomed 2388", // worker 0's leak, noted in its corner
		"stranded source KV (pinned after compute while decode waits)",
		"held for attempts that cannot succeed",
		"decode router", "booked 3399", // a decode worker's booking, beyond its capacity, noted
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("blocks.svg lacks %q", want)
		}
	}
	if bytes.Contains(b, []byte("@font-face")) {
		t.Error("blocks.svg embeds a font")
	}
	// The pinned category is drawn in its color: the leak on worker 0
	// must be visible.
	if !bytes.Contains(b, []byte(colorHex(colPinned))) {
		t.Errorf("blocks.svg has no fill of the pinned color %s", colorHex(colPinned))
	}
}

func colorHex(c interface{ RGBA() (r, g, b, a uint32) }) string {
	r, g, b, _ := c.RGBA()
	const hex = "0123456789ABCDEF"
	out := []byte{'#'}
	for _, v := range []uint32{r >> 8, g >> 8, b >> 8} {
		out = append(out, hex[v>>4], hex[v&15])
	}
	return string(out)
}

func TestFigures_RefuseWhatTheyCannotDraw(t *testing.T) {
	if _, err := Blocks(nil); err == nil {
		t.Error("Blocks(nil): no error")
	}
	if _, err := Load(&sim.Timeline{}); !errors.Is(err, ErrNoWorkers) {
		t.Errorf("Load of no workers: %v, want ErrNoWorkers", err)
	}
	if _, err := CompareBlocks(handMade("a", 0), &sim.Timeline{}); !errors.Is(err, ErrNoWorkers) {
		t.Errorf("CompareBlocks with no workers: %v, want ErrNoWorkers", err)
	}
	tl := handMade("a", 0)
	tl.Handoffs[2].Phases[1].EndMS = math.NaN()
	if _, err := Phases(tl); err == nil || !strings.Contains(err.Error(), "request 2") {
		t.Errorf("Phases with a NaN time: %v", err)
	}
	tl = handMade("a", 0)
	tl.Workers[1].Samples[5].TMS = math.Inf(1)
	if _, err := WriteDir(tl, t.TempDir()); err == nil {
		t.Error("WriteDir with an infinite sample time: no error")
	}
}

// A timeline without handoffs, or with a single sample per worker, still
// gives charts.
func TestFigures_SparseTimelines(t *testing.T) {
	tl := handMade("source-first", 0)
	tl.Handoffs = nil
	for i := range tl.Workers {
		tl.Workers[i].Samples = tl.Workers[i].Samples[:1]
	}
	tl.Workers = tl.Workers[:3] // an odd count leaves a grid cell empty
	for _, fm := range figureMakers {
		f, err := fm.make(tl, tl)
		if err != nil {
			t.Fatalf("%s: %v", fm.name, err)
		}
		b, err := f.PNG()
		if err != nil {
			t.Fatalf("%s: %v", fm.name, err)
		}
		checkPNG(t, f, b)
	}
}

// Overlapping phases split the row into lanes; phases that touch end to
// start do not overlap and fill the row.
func TestLanes(t *testing.T) {
	bars := lanes([]sim.Phase{
		{Name: "queued", StartMS: 0, EndMS: 10},
		{Name: "computing", StartMS: 10, EndMS: 20},
		{Name: "transferring", StartMS: 25, EndMS: 35},
		{Name: "pinned", StartMS: 20, EndMS: 40},
		{Name: "decoding", StartMS: 50, EndMS: 60},
	}, 0)
	if len(bars) != 5 {
		t.Fatalf("%d bars, want 5", len(bars))
	}
	h := func(b bar) float64 { return math.Round((b.y1-b.y0)*1000) / 1000 }
	full := math.Round(rowHeight*1000) / 1000
	byStart := map[float64]bar{}
	for _, b := range bars {
		byStart[b.x0] = b
	}
	for _, at := range []float64{0, 10, 50} {
		if got := h(byStart[at]); got != full {
			t.Errorf("bar at %v: height %v, want the full row %v", at, got, full)
		}
	}
	pin, xfer := byStart[20], byStart[25]
	if h(pin) != full/2 || h(xfer) != full/2 {
		t.Errorf("overlapping bars: heights %v and %v, want %v", h(pin), h(xfer), full/2)
	}
	if pin.y0 < xfer.y1-1e-9 && xfer.y0 < pin.y1-1e-9 {
		t.Errorf("overlapping bars share a lane: %+v %+v", pin, xfer)
	}
	if pin.color != phaseColors["pinned"] || xfer.color != phaseColors["transferring"] {
		t.Error("bars do not carry their phase's color")
	}
}

func TestNiceTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (niceTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 2990, []string{"0", "500", "1000", "1500", "2000", "2500"}},
		{0, 8192, []string{"0", "2000", "4000", "6000", "8000"}},
		{0, 1.05, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}},
		{-0.5, 0.5, []string{"-0.4", "-0.2", "0", "0.2", "0.4"}},
	} {
		if got := labels(c.lo, c.hi); !slices.Equal(got, c.want) {
			t.Errorf("ticks of [%v, %v]: %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
	if (niceTicks{}).Ticks(1, 1) != nil {
		t.Error("ticks of an empty range")
	}
}

func TestWriteDir_Files(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	tl := handMade("source-first", 0)
	names, err := WriteDir(tl, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"blocks.svg", "blocks.png", "load.svg", "load.png", "phases.svg", "phases.png", "report.html"}
	if !slices.Equal(names, want) {
		t.Fatalf("WriteDir wrote %q, want %q", names, want)
	}
	checkDir(t, dir, names)
	html := readFile(t, filepath.Join(dir, ReportFile))
	checkReport(t, html, tl)
	for _, sec := range []string{`id="summary"`, `id="workers"`, `id="blocks"`, `id="load"`, `id="phases"`, `id="handoffs"`} {
		if !strings.Contains(html, sec) {
			t.Errorf("report lacks %s", sec)
		}
	}
	if got := strings.Count(html, "<img "); got != 3 {
		t.Errorf("report has %d images, want 3", got)
	}
	// Same input, same files, byte for byte.
	again := filepath.Join(t.TempDir(), "again")
	if _, err := WriteDir(handMade("source-first", 0), again); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if readFile(t, filepath.Join(dir, n)) != readFile(t, filepath.Join(again, n)) {
			t.Errorf("%s differs between two writes of the same timeline", n)
		}
	}
}

func TestWriteCompare_Files(t *testing.T) {
	dir := t.TempDir()
	a, b := handMade("source-first", 0), handMade("destination-first", 30)
	b.Summary.TTFT.P99 = 246.813
	names, err := WriteCompare(a, b, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"compare-blocks.svg", "compare-blocks.png", "compare-load.svg", "compare-load.png",
		"compare-phases.svg", "compare-phases.png", "report.html"}
	if !slices.Equal(names, want) {
		t.Fatalf("WriteCompare wrote %q, want %q", names, want)
	}
	checkDir(t, dir, names)
	html := readFile(t, filepath.Join(dir, ReportFile))
	checkReport(t, html, a)
	checkReport(t, html, b)
	// The summary table has one column per run, left a, right b.
	row := regexp.MustCompile(`<tr><th>TTFT p99 \(ms\)</th><td class="n">([^<]*)</td><td class="n">([^<]*)</td></tr>`).FindStringSubmatch(html)
	if row == nil || row[1] != "123.456" || row[2] != "246.813" {
		t.Errorf("TTFT p99 row: %q, want 123.456 then 246.813", row)
	}
	for _, s := range []string{"source-first (vllm)", "destination-first (vllm)", `id="compare-blocks"`, `id="compare-load"`, `id="compare-phases"`} {
		if !strings.Contains(html, s) {
			t.Errorf("compare report lacks %q", s)
		}
	}
}

func checkDir(t *testing.T, dir string, names []string) {
	t.Helper()
	for _, n := range names {
		b := []byte(readFile(t, filepath.Join(dir, n)))
		switch filepath.Ext(n) {
		case ".png":
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Errorf("%s: %v", n, err)
			}
		case ".svg":
			checkSVG(t, n, b)
		case ".html":
			if !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) {
				t.Errorf("%s does not start with a doctype", n)
			}
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// attrURL finds every URL-valued attribute of the report.
var attrURL = regexp.MustCompile(`(?i)\b(src|href|xlink:href|action|poster|srcset)\s*=\s*"([^"]*)"`)

// checkReport checks that a report shows a timeline's figures and refers
// to nothing outside itself.
func checkReport(t *testing.T, html string, tl *sim.Timeline) {
	t.Helper()
	s := tl.Summary
	for _, want := range []string{
		">12<", ">11<", // requests, succeeded
		num(s.TTFT.P50), num(s.TTFT.P90), num(s.TTFT.P99),
		num(s.E2E.P50), num(s.E2E.P90), num(s.E2E.P99),
		num(s.ThroughputRPS), num(s.OutputTokensPerS),
		"1234567890 (1.15 GiB)", num(s.TransferMeanMS),
		"4321.5",            // held for doomed attempts: total and worker 0
		"8765.25", ">2691<", // stranded source KV: block-seconds and peak
		"stranded source block-seconds, worker 0",
		"3037 / 303.25",            // worker 3's peak / mean of pinned (series 3)
		"forgotten</td><td>failed", // request 7's outcomes
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if got := strings.Count(html, `<tr class="bad">`); got < 1 {
		t.Errorf("report marks %d handoffs as not ok, want request 7", got)
	}
	for _, m := range attrURL.FindAllStringSubmatch(html, -1) {
		if !strings.HasPrefix(m[2], "data:image/png;base64,") {
			t.Errorf("report refers outside itself: %s=%q", m[1], trim(m[2]))
		}
	}
	lower := strings.ToLower(html)
	for _, bad := range []string{"http:", "https:", "//cdn", "<link", "<iframe", "@import", "url("} {
		if strings.Contains(lower, bad) {
			i := strings.Index(lower, bad)
			t.Errorf("report contains %q: …%s…", bad, trim(html[max(0, i-40):min(len(html), i+60)]))
		}
	}
}

func trim(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
