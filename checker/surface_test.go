package checker

import (
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/internal/surface"
)

// maxExported is how many names the package exports: package-level names
// and methods. Names nothing outside the package uses are unexported, so
// that what the package offers is what its users need; a change that
// must export more raises this with the reason in its message.
// 71: Checker.Initial names where a search started after a trace's steps
// begins (check --from-trace); Checker.FormatWitness prints a sometimes
// property's witness (check --props).
// 74: Obligation and FairVerdict are what Limits.Fair asks and
// Result.Fair answers (leads_to under weak fairness, check --props), and
// Checker.Unfair lets replay judge a loop's fairness.
// 60: a session is its state (the checker's DescribeState, Moves and
// Drained read it); a walk's schedule is named by ScheduleNames and
// ParseSchedule; a walk result's schedule and statistics are the report's
// to render; DefaultConfig and TraceSchemaV1, which nothing outside
// used, unexported.
// 61: Checker.Initial stays exported although only the reproductions use
// it: unexported, a call on a *Checker would still compile and reach the
// embedded System.Initial, silently ignoring a started-after-trace start.
// 56: the types of what the package returns and takes (bitstate report,
// search statistics, walk schedule, walk result, merged walks), which no
// user names, unexported; their fields and methods stay as they were.
// 55: one run is searched through Check (Checker.Explore, which only a
// test outside called, unexported: Check adds what a report needs).
// 54: the default of --max-memory (three quarters of the machine's
// memory), which only the command line read, is the command's
// (DefaultMaxMemory moved).
// 51: a merged walk report is rendered where it is made (MergeWalks
// returns the rendering and whether a run was violated; the merged
// report's JSON, Text and Violated, which only merge asked, together).
// 49: a run of mutants is reported in one call (MutationReport: the
// JSON or the summary, and whether an interrupt left some unchecked; was
// MutationJSON, MutationSummary and MutationInterrupted, which mutate
// asked together).
// 47: a check report renders itself in the form asked (Report.Render
// and WalkReport.Render; was Text and JSON on each, which check called
// one or the other of).
// 46: a walk's schedule is named by ParseSchedule alone (its error lists
// the names; the command's default is the zero schedule, which its tests
// hold equal); ScheduleNames folded.
// 45: MergeWalks reads the shards' reports itself, through the
// caller's reader (ShardReport, a file and its bytes paired only for the
// call, unexported).
// 44: the speed-up over one worker is measured by Check when
// Limits.Speedup asks (was the command's second Check and
// Report.SetBaseline).
// 42: check tells whether a run found a violation from the runs it reads
// anyway, to save each one's trace (Report.Violated and
// WalkReport.Violated, which only it asked, unexported).
// 40: the embedded configurations are asked by the name a report gives
// them (ConfigJSON; was DefaultConfigJSON and MutationConfigJSON); a
// walk's schedule is named in WalkOptions.Schedule, which CheckWalks
// refuses when it names none (ParseSchedule, which only turned the
// command's --schedule into the options' value, unexported).
// 37: a run is stepped by hand with the checker (Checker.Apply on a
// state the caller holds, Checker.FormatStep), not through a Session
// that only wrapped the state: Session, NewSession, Session.State,
// Session.Apply and Session.FormatStep fold into two methods.
// 29: random walks are a form of Check (Limits.Walks and the walk fields
// beside it ask for them, and the one Report renders either form; was
// CheckWalks, WalkOptions and WalkReport with its Checker and Render);
// Check writes the search's progress lines where Limits.Progress says, as
// check printed them (Progress, which only check formatted, unexported);
// Mutate's results render themselves (was MutationReport and
// MutantResult, which mutate asked together).
const maxExported = 29

// exportedNames lists the exported package-level names and methods
// (Type.Method) of the package's non-test files.
func exportedNames(t *testing.T) []string {
	t.Helper()
	names, err := surface.Exported(".")
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// The package exports no more than maxExported names (241 before the
// names nothing outside it used were unexported, 200 before the composed
// system moved to checker/system; 70 since Checker.Initial names where a
// search started after a trace's steps begins).
func TestSurface_ExportsAtMostTheCeiling(t *testing.T) {
	names := exportedNames(t)
	if len(names) > maxExported {
		t.Errorf("checker exports %d names, more than %d", len(names), maxExported)
	}
	t.Logf("checker exports %d names", len(names))
}
