package conform

import (
	"fmt"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

// Canonical blocks adopted at activation. An engine that adopts them
// (model.EngineTraits.Duplicates: vLLM) keeps one block per content: a
// destination that activates a received prompt prefix equal to blocks
// another attempt holds active on the worker keeps those and frees its
// duplicates, and its activated fact says so (adopted_blocks, canonical).
// Each attempt's world still holds its own blocks, as the simulator's
// requests do; the worker's ledger counts the shared ones once, as the
// simulator's worker does (model.SharedActive), until either attempt
// stops holding them: its decode_released (in a log that does not record
// it, an adoption that names a later holder, or that shares another
// number of blocks than an adopter of the same owner: impliedRelease), or the
// worker's restart. When
// the owner of the canonical blocks leaves, its oldest adopter holds
// them in its place, at the cost of one share, and the other adopters
// share them with it.
//
// An adoption is judged when its fact is read, against the rules the
// simulator adopts by: the engine adopts at activation; the adopter and
// the owner received their whole prompt (no prefix hit on the decode
// worker); the owner's destination is active on the same worker and
// holds the canonical blocks itself (it adopted none); at most the whole
// blocks of either prompt are adopted; and every adopter of one owner
// shares as many blocks (in a log without decode_released, those that
// share another number released before: impliedRelease).

// adoption is n blocks an adopter's active KV shares with the owner of
// the canonical blocks on decode process proc.
type adoption struct {
	proc           int
	adopter, owner string
	n              model.Blocks
}

// decoder is an attempt whose destination is active on decode process
// proc: activated, neither released nor restarted since (gen is the
// process's generation at the activation).
type decoder struct {
	proc        int
	gen         int64
	prompt, hit int64
}

// sharing is the judge's account of canonical blocks.
type sharing struct {
	// decoding is the decoders among the open attempts; those of the
	// finished attempts (a log that does not record decode_released
	// never says they released) are in their records (finished.dec),
	// gone counts them, per decode process: the account does not grow
	// with the log in memory.
	decoding map[string]decoder
	gone     map[int]int
	goneN    int
	// shares are the adoptions still shared, oldest first.
	shares []adoption
}

// decoder is the decoder attempt id is, if it is one.
func (j *judge) decoder(id string) (decoder, bool) {
	if d, ok := j.sharing.decoding[id]; ok {
		return d, true
	}
	if j.sharing.goneN == 0 {
		return decoder{}, false
	}
	e, ok, err := j.gone.get(id)
	if err != nil {
		j.failGone(err)
		return decoder{}, false
	}
	if !ok || e.dec.proc < 0 || int64(e.dec.gen) != j.procs[e.dec.proc].gen {
		return decoder{}, false
	}
	return decoder{proc: int(e.dec.proc), gen: int64(e.dec.gen), prompt: int64(e.dec.prompt), hit: int64(e.dec.hit)}, true
}

// failGone keeps the first error of the records of finished attempts,
// which Judge returns.
func (j *judge) failGone(err error) {
	if j.goneErr == nil {
		j.goneErr = err
	}
}

// undecode ends decoder attempt id, open or finished.
func (j *judge) undecode(id string) {
	sh := &j.sharing
	if _, ok := sh.decoding[id]; ok {
		delete(sh.decoding, id)
		return
	}
	if sh.goneN == 0 {
		return
	}
	e, ok, err := j.gone.get(id)
	if err != nil {
		j.failGone(err)
		return
	}
	if !ok || e.dec.proc < 0 || int64(e.dec.gen) != j.procs[e.dec.proc].gen {
		return
	}
	sh.gone[int(e.dec.proc)]--
	sh.goneN--
	e.dec.proc = -1
	j.gone.put(id, e)
}

// retireDecoder moves a finished attempt's decoder, if it is one, to its
// record.
func (j *judge) retireDecoder(id string, e *finished) {
	e.dec.proc = -1
	sh := &j.sharing
	d, ok := sh.decoding[id]
	if !ok {
		return
	}
	delete(sh.decoding, id)
	e.dec = finishedDecoder{proc: int16(d.proc), gen: uint32(d.gen), prompt: int32(d.prompt), hit: int32(d.hit)}
	if sh.gone == nil {
		sh.gone = map[int]int{}
	}
	sh.gone[d.proc]++
	sh.goneN++
}

// shareFact keeps the account of canonical blocks at fact f of attempt a
// (nil: a worker_restarted); it says why an adoption the fact claims is
// not one the rules allow, or "".
func (j *judge) shareFact(a *attempt, f *obslog.Fact) string {
	sh := &j.sharing
	switch f.Kind {
	case obslog.WorkerRestarted:
		if len(sh.decoding) == 0 && sh.goneN == 0 {
			return ""
		}
		for id, d := range sh.decoding {
			if d.proc == f.Proc {
				delete(sh.decoding, id)
			}
		}
		// The finished attempts' decoders on it end with its
		// generation (decoder).
		sh.goneN -= sh.gone[f.Proc]
		delete(sh.gone, f.Proc)
		sh.shares = slices.DeleteFunc(sh.shares, func(x adoption) bool {
			if x.proc == f.Proc {
				j.ledgers[x.proc].shared -= x.n
			}
			return x.proc == f.Proc
		})
	case obslog.DecodeReleased:
		if _, ok := sh.decoding[a.id]; ok {
			delete(sh.decoding, a.id)
			j.unshare(a.id)
		}
	case obslog.Activated:
		if f.AdoptedBlocks > 0 {
			j.impliedRelease(f)
			if why := j.adoptable(a, f); why != "" {
				return why
			}
			n := model.Blocks(f.AdoptedBlocks)
			sh.shares = append(sh.shares, adoption{proc: f.Proc, adopter: a.id, owner: f.Canonical, n: n})
			j.ledgers[f.Proc].shared += n
		}
		if sh.decoding == nil {
			sh.decoding = map[string]decoder{}
		}
		sh.decoding[a.id] = decoder{proc: f.Proc, gen: f.Gen, prompt: a.prompt, hit: a.hit}
	}
	return ""
}

// impliedRelease keeps the account of a log that does not record
// decode_released on the decode process (a log of milestones): it cannot
// say when a sharer of canonical blocks released them, and an adoption
// tells it of two kinds of release. One that names one of the owner's
// adopters as canonical: the owner released before it, and so did every
// older adopter that held the blocks in its place in turn, until that
// adopter was the oldest left. One that shares another number of blocks
// than an adopter of its owner: a new adopter joins the owner's adopters
// only with as many blocks as they share, and the owner still holds
// them, so that adopter's share ended with its own release, before this
// activation.
func (j *judge) impliedRelease(f *obslog.Fact) {
	if j.h.Processes[f.Proc].Records.Has(obslog.DecodeReleased) {
		return
	}
	sh := &j.sharing
	for {
		i := slices.IndexFunc(sh.shares, func(x adoption) bool { return x.adopter == f.Canonical })
		if i < 0 || sh.shares[i].proc != f.Proc {
			break
		}
		owner := sh.shares[i].owner
		j.undecode(owner)
		j.unshare(owner)
	}
	for {
		i := slices.IndexFunc(sh.shares, func(x adoption) bool {
			return x.owner == f.Canonical && x.proc == f.Proc && x.adopter != f.Attempt && x.n != model.Blocks(f.AdoptedBlocks)
		})
		if i < 0 {
			return
		}
		adopter := sh.shares[i].adopter
		j.undecode(adopter)
		j.unshare(adopter)
	}
}

// adoptable says why attempt a may not adopt what its activated fact f
// claims, or "".
func (j *judge) adoptable(a *attempt, f *obslog.Fact) string {
	sh := &j.sharing
	proc := j.h.Processes[f.Proc].Name
	if t := j.h.Engine.Traits(); t.Duplicates != model.AdoptsAtActivation {
		return fmt.Sprintf("the destination claims to adopt %d canonical blocks of %s at activation, but %s does not adopt at activation (its duplicates: %s); want no adopted_blocks",
			f.AdoptedBlocks, f.Canonical, t.Name, t.Duplicates)
	}
	if a.hit > 0 {
		return fmt.Sprintf("the attempt found a prefix hit of %d tokens on %s when it was routed, so it received only the blocks the worker lacked and adopts none; want no adopted_blocks", a.hit, proc)
	}
	bs := int64(j.cfg.BlockSize())
	if a.prompt > 0 && f.AdoptedBlocks > a.prompt/bs {
		return fmt.Sprintf("adopted_blocks %d, but the attempt's prompt of %d tokens has %d whole blocks of %d tokens: want at most the whole blocks of its prompt prefix", f.AdoptedBlocks, a.prompt, a.prompt/bs, bs)
	}
	if slices.ContainsFunc(sh.shares, func(x adoption) bool { return x.adopter == a.id }) {
		return "the attempt adopted canonical blocks already: a destination adopts once, at its activation"
	}
	o, ok := j.decoder(f.Canonical)
	if !ok || o.proc != f.Proc {
		return fmt.Sprintf("canonical %s holds no active blocks on %s (want an attempt activated there and not released since, whose blocks are the canonical ones)", f.Canonical, proc)
	}
	if i := slices.IndexFunc(sh.shares, func(x adoption) bool { return x.adopter == f.Canonical }); i >= 0 {
		return fmt.Sprintf("canonical %s adopted the canonical blocks of %s itself and owns none: want canonical %s", f.Canonical, sh.shares[i].owner, sh.shares[i].owner)
	}
	if o.hit > 0 {
		return fmt.Sprintf("canonical %s found a prefix hit of %d tokens on %s, so it did not receive its whole prompt: want an attempt that holds every block of its prompt prefix", f.Canonical, o.hit, proc)
	}
	if p := o.prompt; p == 0 {
		if oa := j.att[f.Canonical]; oa != nil {
			p = oa.prompt
		}
		o.prompt = p
	}
	if o.prompt > 0 && f.AdoptedBlocks > o.prompt/bs {
		return fmt.Sprintf("adopted_blocks %d, but canonical %s's prompt of %d tokens has %d whole blocks: want at most the whole blocks of the prefix the two prompts share", f.AdoptedBlocks, f.Canonical, o.prompt, o.prompt/bs)
	}
	if i := slices.IndexFunc(sh.shares, func(x adoption) bool { return x.owner == f.Canonical }); i >= 0 && sh.shares[i].n != model.Blocks(f.AdoptedBlocks) {
		return fmt.Sprintf("adopted_blocks %d, but %s shares the canonical blocks of %s for %d blocks: want adopted_blocks %d, as every adopter of one owner shares", f.AdoptedBlocks, sh.shares[i].adopter, f.Canonical, sh.shares[i].n, sh.shares[i].n)
	}
	return ""
}

// unshare ends what attempt id shares once it holds no active blocks:
// its own adoption ends; if it owned canonical blocks, its oldest
// adopter holds them in its place (that adoption ends), and the others
// share them with the heir.
func (j *judge) unshare(id string) {
	sh := &j.sharing
	end := func(i int) {
		j.ledgers[sh.shares[i].proc].shared -= sh.shares[i].n
		sh.shares = slices.Delete(sh.shares, i, i+1)
	}
	if i := slices.IndexFunc(sh.shares, func(x adoption) bool { return x.adopter == id }); i >= 0 {
		end(i)
	}
	if i := slices.IndexFunc(sh.shares, func(x adoption) bool { return x.owner == id }); i >= 0 {
		heir := sh.shares[i].adopter
		end(i)
		for k := range sh.shares {
			if sh.shares[k].owner == id {
				sh.shares[k].owner = heir
			}
		}
	}
}
