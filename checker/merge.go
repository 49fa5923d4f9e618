package checker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/spec/jsonfile"
)

// Randomized and swarm search split into shards of consecutive walks
// (Limits.Shards), which any batch system can run apart: each shard
// writes its JSON report, and MergeWalks makes of them the report of the
// one search they are. Walk i keeps seed Seed+i in whichever shard runs it,
// so the merged report finds the same first failure, with the same trace,
// as one process running every walk, and counts the same walks up to it.

// errMerge is a set of shard reports that cannot be merged.
var errMerge = errors.New("merge")

// maxMergeSteps bounds the walk length a merged report accepts: walk
// lengths are counted in an array of that size.
const maxMergeSteps = 1 << 20

// shardReport is one shard's JSON report, named by its file.
type shardReport struct {
	File string
	Data []byte
}

// mergedWalks is the report of a search merged from its shards.
type mergedWalks struct {
	r jsonWalkReport
}

// violated reports whether some run found a violation.
func (m *mergedWalks) violated() bool { return m.r.Verdict == "violation" }

// marshal renders the merged report in the walk report's form; its shard
// says merged, and distinct_states is the sum of the shards' (walks in two
// shards may visit the same state, so it bounds the distinct states from
// above).
func (m *mergedWalks) marshal() ([]byte, error) { return json.MarshalIndent(m.r, "", "  ") }

// MergeWalks merges the reports of every shard of one search, read from
// files by read, and renders the merged report, as JSON in the walk
// report's form or as text for people; violated says whether some run
// found a violation. Merging is all a merged report is made for, so it is
// rendered where it is made.
func MergeWalks(files []string, read func(file string) ([]byte, error), asJSON bool) (out []byte, violated bool, err error) {
	reports := make([]shardReport, len(files))
	for i, f := range files {
		data, err := read(f)
		if err != nil {
			return nil, false, err
		}
		reports[i] = shardReport{File: f, Data: data}
	}
	m, err := mergeWalks(reports)
	if err != nil {
		return nil, false, err
	}
	if asJSON {
		out, err = m.marshal()
	} else {
		out = []byte(m.text())
	}
	return out, m.violated(), err
}

// mergeWalks merges the reports of every shard of one search.
func mergeWalks(reports []shardReport) (*mergedWalks, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("%w: no report given", errMerge)
	}
	shards := make([]jsonWalkReport, len(reports))
	for i, rep := range reports {
		dec := json.NewDecoder(bytes.NewReader(rep.Data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&shards[i]); err != nil {
			return nil, jsonfile.DecodeError(rep.File, rep.Data, err, errMerge, "the JSON report of one shard (check --walks N --shard K/M --json)")
		}
		s := &shards[i]
		line := func(key string) int { return jsonfile.LineOfKey(rep.Data, key, 0) }
		switch {
		case s.Shard == nil:
			return nil, fmt.Errorf("%s:1: %w: not a shard's report: give the reports of check --walks N --shard K/M --json", rep.File, errMerge)
		case s.Shard.Merged:
			return nil, fmt.Errorf("%s:%d: %w: already a merged report", rep.File, line("merged"), errMerge)
		case s.Shard.Count <= 0 || s.Shard.Index < 0 || s.Shard.Index >= s.Shard.Count:
			return nil, fmt.Errorf("%s:%d: %w: shard %d of %d", rep.File, line("shard"), errMerge, s.Shard.Index, s.Shard.Count)
		case s.Verdict == "interrupted" || len(s.NotRun) > 0:
			return nil, fmt.Errorf("%s:%d: %w: shard %d was interrupted: its report does not cover its walks", rep.File, line("verdict"), errMerge, s.Shard.Index)
		case s.Steps < 1 || s.Steps > maxMergeSteps || s.Shard.Walks < 0:
			return nil, fmt.Errorf("%s:%d: %w: %d steps and %d walks: want steps from 1 to %d and walks from 0", rep.File, line("steps"), errMerge, s.Steps, s.Shard.Walks, maxMergeSteps)
		}
		lo, hi := shardRange(s.Shard.Walks, s.Shard.Index, s.Shard.Count)
		for j := range s.Runs {
			r := &s.Runs[j]
			sum := 0
			for _, c := range r.LengthCounts {
				if c < 0 || c > hi-lo {
					sum = -1
					break
				}
				sum += c
			}
			if r.Walks < 0 || r.Walks > hi-lo || r.FirstWalk != lo || len(r.LengthCounts) > s.Steps+1 || sum != r.Walks || r.Moves < 0 ||
				(r.Failing >= 0 && (r.Failing < lo || r.Failing >= hi)) {
				return nil, fmt.Errorf("%s:%d: %w: run %s's figures do not fit shard %d (walks %d-%d)", rep.File, jsonfile.LineOfKey(rep.Data, "runs", 0), errMerge, r.Run, s.Shard.Index, lo, hi-1)
			}
		}
		first := &shards[0]
		same := s.Mode == first.Mode && s.Schedule == first.Schedule && s.Steps == first.Steps && s.Seed == first.Seed &&
			s.Shard.Count == first.Shard.Count && s.Shard.Walks == first.Shard.Walks && len(s.Runs) == len(first.Runs)
		for j := 0; same && j < len(s.Runs); j++ {
			same = s.Runs[j].Run == first.Runs[j].Run && s.Runs[j].Policy == first.Runs[j].Policy && s.Runs[j].Engine == first.Runs[j].Engine
		}
		if !same {
			return nil, fmt.Errorf("%s:1: %w: a shard of another search than %s's (mode, schedule, steps, seed, walks, shard count or runs differ)",
				rep.File, errMerge, reports[0].File)
		}
	}
	count := shards[0].Shard.Count
	byIndex := make([]*jsonWalkReport, count)
	for i := range shards {
		k := shards[i].Shard.Index
		if byIndex[k] != nil {
			return nil, fmt.Errorf("%w: shard %d is given twice", errMerge, k)
		}
		byIndex[k] = &shards[i]
	}
	var missing []string
	for k, s := range byIndex {
		if s == nil {
			missing = append(missing, fmt.Sprint(k))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: shards %s of %d are missing: a merged report covers every walk", errMerge, strings.Join(missing, ", "), count)
	}
	first := byIndex[0]
	out := jsonWalkReport{Mode: first.Mode, Schedule: first.Schedule, Verdict: "pass", Steps: first.Steps, Seed: first.Seed,
		Shard: &jsonShard{Count: count, Walks: first.Shard.Walks, Merged: true}}
	for j := range first.Runs {
		parts := make([]*jsonWalk, count)
		for k := range byIndex {
			parts[k] = &byIndex[k].Runs[j]
		}
		mw := mergeRun(parts, first.Steps)
		if mw.Invariant != "" {
			out.Verdict = "violation"
		}
		out.Runs = append(out.Runs, mw)
	}
	return &mergedWalks{r: out}, nil
}

// mergeRun merges one run's shards, in shard order, up to the first that
// failed: the walks one process would have counted.
func mergeRun(parts []*jsonWalk, steps int) jsonWalk {
	m := jsonWalk{Run: parts[0].Run, Policy: parts[0].Policy, Engine: parts[0].Engine, Failing: -1, FaultHorizon: parts[0].FaultHorizon,
		Ends: map[string]int{}, MoveKinds: map[string]int64{}, Committed: map[string]int64{}}
	lengths := make([]int, steps+1)
	dead := map[string][]string{}
	for k, p := range parts {
		m.Walks += p.Walks
		m.Moves += p.Moves
		m.Distinct += p.Distinct
		for e, n := range p.Ends {
			m.Ends[e] += n
		}
		for kind, n := range p.MoveKinds {
			m.MoveKinds[kind] += n
		}
		for f, n := range p.Committed {
			m.Committed[f] += n
		}
		for n, c := range p.LengthCounts {
			if n < len(lengths) {
				lengths[n] += c
			}
		}
		for _, c := range p.Coverage {
			if k == 0 {
				dead[c.Role] = slices.Clone(c.Dead)
				m.Coverage = append(m.Coverage, jsonCoverage{Role: c.Role, Total: c.Total})
				continue
			}
			// A row fired in the merged search if it fired in any shard.
			dead[c.Role] = slices.DeleteFunc(dead[c.Role], func(row string) bool { return !slices.Contains(c.Dead, row) })
		}
		m.Vacuity = mergeVacuity(m.Vacuity, p.Vacuity, k == 0)
		if p.Failing >= 0 {
			m.Failing, m.Seed, m.Faults = p.Failing, p.Seed, p.Faults
			m.Invariant, m.Detail, m.Trace, m.Reproduce, m.FaultSchedule = p.Invariant, p.Detail, p.Trace, p.Reproduce, p.FaultSchedule
			break
		}
	}
	for i := range m.Coverage {
		d := dead[m.Coverage[i].Role]
		if d == nil {
			d = []string{}
		}
		m.Coverage[i].Dead, m.Coverage[i].Fired = d, m.Coverage[i].Total-len(d)
	}
	var all []int
	for n, c := range lengths {
		for ; c > 0; c-- {
			all = append(all, n)
		}
	}
	if len(all) > 0 {
		ws := walkStats{Lengths: all}
		m.Lengths = jsonLengths(ws.lengthSummary())
	}
	return m
}

// mergeVacuity adds a shard's vacuity to the merged one: an invariant
// was exercised in the merged search if it was in any shard.
func mergeVacuity(m, p []jsonExercise, first bool) []jsonExercise {
	if first {
		return slices.Clone(p)
	}
	for i := range m {
		j := slices.IndexFunc(p, func(x jsonExercise) bool { return x.Invariant == m[i].Invariant })
		if j >= 0 && m[i].Exercised != nil && !*m[i].Exercised && p[j].Exercised != nil && *p[j].Exercised {
			m[i].Exercised, m[i].Why = p[j].Exercised, ""
		}
	}
	return m
}

// text renders the merged report for people.
func (m *mergedWalks) text() string {
	var b strings.Builder
	r := &m.r
	mode := "random walks"
	if r.Mode == "swarm" {
		mode = "swarm walks"
	}
	for _, x := range r.Runs {
		verdict := "no violation"
		if x.Invariant != "" {
			verdict = "VIOLATION " + x.Invariant
		}
		fmt.Fprintf(&b, "run %s (%s, engine %s): %d %s of up to %d moves in %d shards (seed %d, schedule %s): %s\n",
			x.Run, x.Policy, x.Engine, r.Shard.Walks, mode, r.Steps, r.Shard.Count, r.Seed, r.Schedule, verdict)
		fmt.Fprintf(&b, "  %s moves", commas(x.Moves))
		if x.Walks < r.Shard.Walks {
			fmt.Fprintf(&b, " in walks 0-%d", x.Walks-1)
		}
		fmt.Fprintf(&b, "; at most %s distinct states (the shards' sum)\n", commas(int64(x.Distinct)))
		var parts []string
		for _, c := range x.Coverage {
			parts = append(parts, fmt.Sprintf("%s rows %d/%d fired", c.Role, c.Fired, c.Total))
		}
		fmt.Fprintf(&b, "  coverage: %s\n", strings.Join(parts, ", "))
		fmt.Fprintf(&b, "  walk lengths: min %d, median %d, p90 %d, max %d\n", x.Lengths.Min, x.Lengths.Median, x.Lengths.P90, x.Lengths.Max)
		if x.Invariant == "" {
			var ex []exercise
			for _, v := range x.Vacuity {
				ex = append(ex, exercise{Name: v.Invariant, Unconditional: v.Unconditional, Exercised: v.Exercised == nil || *v.Exercised, Why: v.Why})
			}
			if len(ex) > 0 {
				// A shard report written before vacuity was recorded has none.
				b.WriteString(vacuityText(ex, walksLead))
			}
			continue
		}
		fmt.Fprintf(&b, "  walk %d failed (seed %d; faults: %s); shrunk to %d steps\n", x.Failing, x.Seed, strings.Join(x.Faults, ", "), len(x.Trace))
		if x.Reproduce != "" {
			fmt.Fprintf(&b, "  reproduce: %s\n", x.Reproduce)
		}
		fmt.Fprintf(&b, "  VIOLATION %s\n    %s\n", x.Invariant, x.Detail)
		for i, st := range x.Trace {
			fmt.Fprintf(&b, "    %d. %s\n", i+1, st.Move)
			for _, f := range st.Fired {
				fmt.Fprintf(&b, "        fired %s\n", f)
			}
		}
	}
	return b.String()
}
