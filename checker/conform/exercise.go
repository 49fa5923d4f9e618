package conform

import (
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// The built-in invariants the logs exercised (cluster.Exercise): the
// triggers fired by the steps of each attempt's final explanation (the
// attempt finished, or the logs ended), never by those of the branches
// the search tried and left, which say nothing of the run.

// exercise notes the triggers the steps of attempt a's final explanation
// n fired (node.fired, kept when the search took each step, so nothing is
// stepped again). done: n finished the attempt, a state Quiescence
// judged. A step is at the time stamp of the fact it explains, else of
// the next fact along the explanation (by then it had happened), else of
// the attempt's last fact. An explanation followed greedily noted its
// steps up to a.cur as it went (advance, a.ex): only those beyond are
// walked.
func (j *judge) exercise(a *attempt, n *node, done bool) {
	last := int64(-1)
	if a.last != nil {
		last = j.at(a.last)
	}
	noted := false
	if done {
		noted = j.ex.Note(model.TrigQuiescent, last, a.seq)
	}
	var from *node
	if !a.full && a.cur != nil {
		from = a.cur
	}
	at := last
	x := n
	for ; x != nil && x != from && x.parent != nil; x = x.parent {
		at = j.stepAt(x, at)
		if j.ex.Note(x.fired, at, a.seq) {
			noted = true
		}
	}
	// An n that does not go through cur had its whole explanation walked.
	if from != nil && x == from && j.ex.Merge(a.ex) {
		noted = true
	}
	if noted && j.exIDs[a.seq] == "" {
		// A copy: the record must not keep what the id was cut from.
		j.exIDs[a.seq] = strings.Clone(a.id)
	}
}

// stepAt is the time of node x's step, walking an explanation back from
// its end: its fact's time stamp, else at (the next fact's).
func (j *judge) stepAt(x *node, at int64) int64 {
	if x.fact != nil && x.fact.TUS >= 0 {
		return j.at(x.fact)
	}
	return at
}

// invariantsReport is the built-in invariants the logs' final
// explanations exercised; up to the rejection, if any.
func (j *judge) invariantsReport() *cluster.InvariantsReport {
	violated := ""
	if r := j.rep.Rejection; r != nil {
		violated = r.Invariant
		if violated == "" {
			violated = "(rejected)"
		}
	}
	r := j.ex.Report(cluster.TimedInvariants(false), &j.tmpl, violated, func(i int) string {
		if id := j.exIDs[i]; id != "" {
			return "attempt " + id
		}
		return fmt.Sprintf("attempt #%d", i)
	})
	r.StoppedBy = "the fact the verdict rests on"
	for i := range r.Invariants {
		if x := &r.Invariants[i]; x.Invariant == model.NameAttemptIsolation && !x.Exercised {
			// The search never takes a delivery no row acts on (steps):
			// a simulator's run of the same logs may have judged one.
			x.Why = staleNotTaken
		}
	}
	return r
}

// staleNotTaken is why conform's explanations seldom exercise
// AttemptIsolation.
const staleNotTaken = "no explanation delivered a fact to a finished record: the search leaves a fact in flight where no row would act on it, which explains every log its delivery would"
