package explore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/conform/mocker"
)

// JudgeMockerLogs reads logs of the dynamo mocker's offline replay
// bookkeeping, converts and judges them as conform --from mocker does
// (the contract's judgement of the facts they mean, then the mocker's own
// bookkeeping rules, whose first broken one is the verdict when the
// contract explained every fact), and lays them out for the page with
// the mocker's line numbers. An aggregated replay hands nothing off, so
// it has no lanes to draw and is refused; a log the conversion cannot
// read is an error naming its file and line.
func JudgeMockerLogs(in []LogInput, opt conform.Options) (*Logs, error) {
	obs := make([]LogInput, len(in))
	lineOf := make([]func(int) int, len(in))
	results := make([]*mocker.Result, len(in))
	for i, x := range in {
		r, aggregated := mocker.Sniff(bytes.NewReader(x.Data))
		if aggregated {
			return nil, fmt.Errorf("%s: an aggregated replay hands nothing off, so it has no handoff to draw; conform --from mocker judges its books", x.Name)
		}
		var buf bytes.Buffer
		lines := &mocker.Lines{}
		res, err := mocker.Convert(r, x.Name, &buf, lines)
		if err != nil {
			return nil, err
		}
		obs[i], lineOf[i], results[i] = LogInput{Name: x.Name, Data: buf.Bytes()}, lines.Of, res
	}
	books := mocker.Merge(results...)
	theirs := false
	l, err := judgeLogs(obs, lineOf, opt, func(rep *conform.Report) {
		// The contract's rejection stands when there is one (Fold).
		theirs = rep.Rejection == nil && books.Rejection != nil
		books.Fold(rep)
	})
	if err != nil {
		return nil, err
	}
	l.From = "mocker"
	l.Mocker = &MockerBooks{Handoffs: books.Handoffs, Divergences: len(books.Divergences), Rejections: books.Rejections, RejectionIsTheirs: theirs}
	if r := l.Rejection; r != nil && !slices.ContainsFunc(l.Facts, func(f LogFact) bool { return f.Rejected }) {
		l.lineWithoutFact(r, in)
	}
	if theirs {
		l.Furthest, l.FurthestWhy = nil, "the contract explained every fact; the mocker broke a rule of its own books, which no state of the tables judges"
	}
	return l, nil
}

// lineWithoutFact draws a rejected line that made no fact (a request's
// phase, which no process logs) on a lane of its own, named by the
// record the rejection names ("request h1"), at the line's time stamp.
func (l *Logs) lineWithoutFact(r *conform.Rejection, in []LogInput) {
	name, _, _ := strings.Cut(r.Fact, ":")
	f := LogFact{File: r.File, Line: r.Line, Proc: len(l.Processes), Attempt: r.Attempt, Kind: "no fact", Text: r.Fact, Rejected: true}
	f.At = l.placeOf(r, in)
	l.Processes = append(l.Processes, LogProcess{Name: name, Role: "no process"})
	l.Facts = append(l.Facts, f)
}

// placeOf is where a line goes on the axis: its time stamp (t_ms, in
// microseconds as the converted facts' are) on a time axis; on an order
// axis, just after the facts of the lines before it.
func (l *Logs) placeOf(r *conform.Rejection, in []LogInput) int64 {
	if l.Axis == "time" {
		for _, x := range in {
			if x.Name != r.File {
				continue
			}
			lines := bytes.Split(x.Data, []byte("\n"))
			var e struct {
				TMS *float64 `json:"t_ms"`
			}
			if r.Line >= 1 && r.Line <= len(lines) && json.Unmarshal(lines[r.Line-1], &e) == nil && e.TMS != nil {
				return int64(*e.TMS * 1000)
			}
		}
	}
	var at int64
	for _, f := range l.Facts {
		if f.File == r.File && f.Line <= r.Line && f.At > at {
			at = f.At
		}
	}
	return at
}
