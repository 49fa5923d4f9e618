package plot

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/sim"
)

//go:embed report.html.tmpl
var reportSource string

// The report is one file that opens anywhere, offline and sent by mail:
// the charts are embedded as PNG data URIs, the styles and the script are
// inline, and nothing refers to another file or host.
var reportTemplate = template.Must(template.New("report").Parse(reportSource))

// ReportFile is the name of the HTML report WriteDir and WriteCompare
// write.
const ReportFile = "report.html"

type reportData struct {
	Title, Subtitle string
	Compare         bool
	Expect          string
	PhaseNames      []string
	Runs            []reportRun
	Summary         []tableRow
	Figures         []reportFigure
}

type reportRun struct {
	Label       string
	WorkerHeads []string
	Workers     []tableRow
	Handoffs    []handoffRow
}

type tableRow struct {
	Name   string
	Values []string
}

type handoffRow struct {
	Request, Prefill, Decode int
	Arrival, Span            string
	Source, Destination      string
	Phases                   []string
	Bad                      bool
}

type reportFigure struct {
	Name, Title, Heading, Caption string
	Src                           template.URL
	W, H                          int
}

// captions say what each figure is for, under it in the report.
var captions = map[string]string{
	"blocks": "Each worker's KV blocks by category, stacked so the top is its capacity; the dark line is its stranded source KV " +
		"(blocks pinned after prefill compute while decode waits for a route, capacity or a reservation), " +
		"the dashed line the blocks it holds for attempts that can no longer succeed. " +
		"Pinned blocks (orange-red) that keep climbing on a prefill worker are blocks held for handoffs that are not being released.",
	"load": "Above: the tokens each worker's router weighs (compute load on prefill, admission headroom on decode). " +
		"Below: requests in flight, and on decode workers the slots used against the slot limit.",
	"phases": "One row per handoff of the first requests; overlapping phases share the row as thinner bars. " +
		"A row that ends in a long pinned or reserved bar is a handoff whose blocks outlived it.",
}

func caption(name string) string {
	return captions[strings.TrimPrefix(name, "compare-")]
}

var headings = map[string]string{"blocks": "KV blocks", "load": "Load", "phases": "Handoff phases"}

func heading(name string) string {
	h := headings[strings.TrimPrefix(name, "compare-")]
	if strings.HasPrefix(name, "compare-") {
		h += ", side by side"
	}
	return h
}

// num formats a figure the way the summary holds it: shortest exact
// decimal, no exponent, no thousands separators, so the report's numbers
// can be searched for and compared with summary.json.
func num(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

func bytesText(b int64) string {
	s := strconv.FormatInt(b, 10)
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	v, u := float64(b), ""
	for _, n := range units {
		if math.Abs(v) < 1024 {
			break
		}
		v, u = v/1024, n
	}
	if u != "" {
		s += fmt.Sprintf(" (%.2f %s)", v, u)
	}
	return s
}

// summaryRows is the summary table: one row per figure, one column per
// run ("—" where a run has no summary).
func summaryRows(tls []*sim.Timeline) []tableRow {
	type field struct {
		name string
		of   func(s *sim.Summary) string
	}
	itoa := strconv.Itoa
	fields := []field{
		{"requests", func(s *sim.Summary) string { return itoa(s.Requests) }},
		{"succeeded", func(s *sim.Summary) string { return itoa(s.Succeeded) }},
		{"failed", func(s *sim.Summary) string { return itoa(s.Failed) }},
		{"cancelled", func(s *sim.Summary) string { return itoa(s.Cancelled) }},
		{"faults struck", func(s *sim.Summary) string { return itoa(s.FaultsStruck) }},
		{"faults missed", func(s *sim.Summary) string { return itoa(s.FaultsMissed) }},
		{"makespan (ms)", func(s *sim.Summary) string { return num(s.MakespanMS) }},
		{"throughput (requests/s)", func(s *sim.Summary) string { return num(s.ThroughputRPS) }},
		{"output tokens/s", func(s *sim.Summary) string { return num(s.OutputTokensPerS) }},
	}
	for _, d := range []struct {
		name string
		of   func(s *sim.Summary) *sim.Pcts
	}{
		{"TTFT", func(s *sim.Summary) *sim.Pcts { return &s.TTFT }},
		{"E2E", func(s *sim.Summary) *sim.Pcts { return &s.E2E }},
		{"prefill wait", func(s *sim.Summary) *sim.Pcts { return &s.PrefillWait }},
		{"decode wait", func(s *sim.Summary) *sim.Pcts { return &s.DecodeWait }},
	} {
		fields = append(fields,
			field{d.name + " mean (ms)", func(s *sim.Summary) string { return num(d.of(s).Mean) }},
			field{d.name + " p50 (ms)", func(s *sim.Summary) string { return num(d.of(s).P50) }},
			field{d.name + " p90 (ms)", func(s *sim.Summary) string { return num(d.of(s).P90) }},
			field{d.name + " p99 (ms)", func(s *sim.Summary) string { return num(d.of(s).P99) }},
			field{d.name + " samples", func(s *sim.Summary) string { return itoa(d.of(s).N) }})
	}
	fields = append(fields, []field{
		{"transfers", func(s *sim.Summary) string { return itoa(s.Transfers) }},
		{"transfers failed", func(s *sim.Summary) string { return itoa(s.TransfersFailed) }},
		{"transfer bytes", func(s *sim.Summary) string { return bytesText(s.TransferBytes) }},
		{"transfer mean time (ms)", func(s *sim.Summary) string { return num(s.TransferMeanMS) }},
		{"prefix hit tokens", func(s *sim.Summary) string { return strconv.FormatInt(s.PrefixHitTokens, 10) }},
		{"reclaim obligations", func(s *sim.Summary) string { return itoa(s.ReclaimObligated) }},
		{"reclaim max (ms)", func(s *sim.Summary) string { return num(s.ReclaimMaxMS) }},
		{"give-up obligations", func(s *sim.Summary) string { return itoa(s.GiveUpObligated) }},
		{"give-up max (ms)", func(s *sim.Summary) string { return num(s.GiveUpMaxMS) }},
		{"stranded source block-seconds, total", func(s *sim.Summary) string { return num(s.StrandedSourceBlockSeconds) }},
		{"stranded source peak (blocks)", func(s *sim.Summary) string { return strconv.FormatInt(s.StrandedSourcePeak, 10) }},
		{"held for doomed attempts (block-seconds), total", func(s *sim.Summary) string { return num(s.StrandedBlockSeconds) }},
	}...)
	nw := 0
	for _, tl := range tls {
		if tl.Summary != nil {
			nw = max(nw, len(tl.Summary.Workers))
		}
	}
	for w := range nw {
		fields = append(fields, field{fmt.Sprintf("stranded source block-seconds, worker %d", w), func(s *sim.Summary) string {
			if w >= len(s.Workers) {
				return "—"
			}
			return num(s.Workers[w].StrandedSourceBlockSeconds)
		}}, field{fmt.Sprintf("held for doomed attempts (block-seconds), worker %d", w), func(s *sim.Summary) string {
			if w >= len(s.Workers) {
				return "—"
			}
			return num(s.Workers[w].StrandedBlockSeconds)
		}})
	}
	fields = append(fields, field{"events", func(s *sim.Summary) string { return strconv.FormatUint(s.Events, 10) }})
	var rows []tableRow
	for _, f := range fields {
		r := tableRow{Name: f.name}
		for _, tl := range tls {
			v := "—"
			if tl.Summary != nil {
				v = f.of(tl.Summary)
			}
			r.Values = append(r.Values, v)
		}
		rows = append(rows, r)
	}
	return rows
}

// workerTable is a run's per-worker figures: a column per worker, a row
// per series (peak / mean), in sim.Series order.
func workerTable(tl *sim.Timeline) (heads []string, rows []tableRow) {
	if tl.Summary == nil || len(tl.Summary.Workers) == 0 {
		return nil, nil
	}
	ws := tl.Summary.Workers
	capRow := tableRow{Name: "capacity (blocks)"}
	src := tableRow{Name: "stranded source block-seconds"}
	srcPeak := tableRow{Name: "stranded source peak (blocks)"}
	str := tableRow{Name: "held for doomed attempts (block-seconds)"}
	for _, w := range ws {
		heads = append(heads, fmt.Sprintf("worker %d (%s)", w.Worker, w.Role))
		capRow.Values = append(capRow.Values, strconv.FormatInt(w.Capacity, 10))
		src.Values = append(src.Values, num(w.StrandedSourceBlockSeconds))
		srcPeak.Values = append(srcPeak.Values, strconv.FormatInt(w.StrandedSourcePeak, 10))
		str.Values = append(str.Values, num(w.StrandedBlockSeconds))
	}
	rows = append(rows, capRow, src, srcPeak, str)
	for _, name := range sim.Series {
		r := tableRow{Name: name}
		for _, w := range ws {
			pm, ok := w.Series[name]
			if !ok {
				r.Values = append(r.Values, "—")
				continue
			}
			r.Values = append(r.Values, num(pm.Peak)+" / "+num(pm.Mean))
		}
		rows = append(rows, r)
	}
	return heads, rows
}

// handoffRows is a run's per-handoff table: where it ran, how each side
// ended, and the time it spent in each phase (summed over the phase's
// intervals; empty if it never entered it).
func handoffRows(tl *sim.Timeline) []handoffRow {
	var rows []handoffRow
	for i := range tl.Handoffs {
		h := &tl.Handoffs[i]
		dur := map[string]float64{}
		end := h.ArrivalMS
		for _, ph := range h.Phases {
			dur[ph.Name] += ph.EndMS - ph.StartMS
			end = math.Max(end, ph.EndMS)
		}
		r := handoffRow{Request: h.Request, Prefill: h.Prefill, Decode: h.Decode,
			Arrival: num(h.ArrivalMS), Span: num(round3(end - h.ArrivalMS)),
			Source: h.Source, Destination: h.Destination, Bad: outcomeNote(h) != ""}
		for _, n := range sim.PhaseNames {
			d, ok := dur[n]
			if !ok {
				r.Phases = append(r.Phases, "")
				continue
			}
			r.Phases = append(r.Phases, num(round3(d)))
		}
		rows = append(rows, r)
	}
	return rows
}

// round3 keeps a difference of millisecond times (which the simulator
// rounds to microseconds) from printing float noise.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// writeReport renders report.html from the timelines and their figures,
// the PNGs given by figure name.
func writeReport(path, title, subtitle string, tls []*sim.Timeline, figs []*Figure, pngs map[string][]byte) error {
	d := reportData{Title: title, Subtitle: subtitle, Compare: len(tls) > 1, PhaseNames: sim.PhaseNames}
	expect := []string{"summary", "workers"}
	for _, tl := range tls {
		run := reportRun{Label: label(tl), Handoffs: handoffRows(tl)}
		run.WorkerHeads, run.Workers = workerTable(tl)
		d.Runs = append(d.Runs, run)
		if tl.Summary != nil && d.Summary == nil {
			d.Summary = summaryRows(tls)
		}
	}
	for _, f := range figs {
		w, h := f.PixelSize()
		d.Figures = append(d.Figures, reportFigure{
			Name: f.Name, Title: f.Title, Heading: heading(f.Name), Caption: caption(f.Name),
			Src: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(pngs[f.Name])),
			W:   w, H: h,
		})
		expect = append(expect, f.Name)
	}
	d.Expect = strings.Join(append(expect, "handoffs"), " ")
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, &d); err != nil {
		return fmt.Errorf("plot: %s: %w", ReportFile, err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeFigures renders each figure as SVG and PNG into dir; it returns
// the file names written and the PNGs, for the report.
func writeFigures(dir string, figs []*Figure) ([]string, map[string][]byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	var names []string
	pngs := map[string][]byte{}
	for _, f := range figs {
		svg, err := f.SVG()
		if err != nil {
			return names, nil, err
		}
		png, err := f.PNG()
		if err != nil {
			return names, nil, err
		}
		for _, out := range []struct {
			ext string
			b   []byte
		}{{".svg", svg}, {".png", png}} {
			if err := os.WriteFile(filepath.Join(dir, f.Name+out.ext), out.b, 0o644); err != nil {
				return names, nil, err
			}
			names = append(names, f.Name+out.ext)
		}
		pngs[f.Name] = png
	}
	return names, pngs, nil
}

// WriteDir writes a run's charts into dir (created if missing):
// blocks.svg/.png, load.svg/.png, phases.svg/.png and report.html. It
// returns the names of the files written, in that order.
func WriteDir(tl *sim.Timeline, dir string) ([]string, error) {
	var figs []*Figure
	for _, mk := range []func(*sim.Timeline) (*Figure, error){Blocks, Load, Phases} {
		f, err := mk(tl)
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)
	}
	names, pngs, err := writeFigures(dir, figs)
	if err != nil {
		return names, err
	}
	sub := fmt.Sprintf("Policy %s, engine %s, sampled every %s ms; the phase chart and handoff table cover the first %d requests.",
		orDash(tl.Policy), orDash(tl.Engine), num(tl.SampleMS), len(tl.Handoffs))
	if err := writeReport(filepath.Join(dir, ReportFile), "handoffcheck simulation: "+label(tl), sub, []*sim.Timeline{tl}, figs, pngs); err != nil {
		return names, err
	}
	return append(names, ReportFile), nil
}

// WriteCompare writes two runs of the same workload, typically under the
// two policies, side by side into dir: compare-blocks, compare-load and
// compare-phases (each .svg and .png; a in the left column, b in the
// right) and a report.html with both runs' tables. It returns the names
// of the files written, in that order.
func WriteCompare(a, b *sim.Timeline, dir string) ([]string, error) {
	var figs []*Figure
	for _, mk := range []func(a, b *sim.Timeline) (*Figure, error){CompareBlocks, CompareLoad, ComparePhases} {
		f, err := mk(a, b)
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)
	}
	names, pngs, err := writeFigures(dir, figs)
	if err != nil {
		return names, err
	}
	sub := fmt.Sprintf("The same workload run twice: left %s, right %s. Both columns share one time axis and, per worker, one scale.", label(a), label(b))
	if err := writeReport(filepath.Join(dir, ReportFile), "handoffcheck simulation: "+label(a)+" vs "+label(b), sub, []*sim.Timeline{a, b}, figs, pngs); err != nil {
		return names, err
	}
	return append(names, ReportFile), nil
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
