package obslog

import "github.com/handoffcheck/handoffcheck/model"

// plainFact reads a fact line exactly as a writer writes it straight into
// f, in one pass: the keys proc, gen, attempt and kind first, without
// blanks, then the figures a line of that kind may carry, each once, and
// nothing the judgement of a fact would refuse. That is nearly every
// line of a long log; for anything else (blanks, another order, a
// restart, a timer, an adoption, any value fact would refuse) it reports
// false, with f undefined, and the reader reads the line the general way
// (fastLine, then fact), which takes it or names what is wrong with it.
// A line it takes, the general way takes too and reads the same
// (TestPlainFact_AsRead, FuzzPlainFact).
func (r *Reader) plainFact(text []byte, f *Fact) bool {
	n := len(text)
	if !lit(text, 0, `{"proc":`) {
		return false
	}
	proc, i, ok := scanStr(text, len(`{"proc":`))
	if !ok || !lit(text, i, `,"gen":`) {
		return false
	}
	gen, i, ok := scanNum(text, i+len(`,"gen":`))
	if !ok || gen < 0 || gen > 1<<31 || !lit(text, i, `,"attempt":`) {
		return false
	}
	att, i, ok := scanStr(text, i+len(`,"attempt":`))
	if !ok || att == "" || len(att) > 256 || !lit(text, i, `,"kind":`) {
		return false
	}
	kind, i, ok := scanStr(text, i+len(`,"kind":`))
	if !ok {
		return false
	}
	kn, ok := kindTable.get(kind)
	if !ok {
		return false
	}
	k := Kind(kn)
	p, ok := r.procs.get(proc)
	if !ok || k == WorkerRestarted {
		return false
	}
	h := &r.header
	role := h.Processes[p].Role
	switch Kinds[k].Who {
	case ByRouter:
		ok = role == RoleRouter
	case BySource:
		ok = role == RolePrefill
	case ByDestination:
		ok = role == RoleDecode
	case BySide:
		ok = role != RoleRouter
	}
	if !ok {
		return false
	}
	// Cleared in place, then set: a literal is built on the stack and
	// copied over, twice the stores.
	*f = Fact{}
	f.File, f.Line, f.Proc, f.Gen, f.Kind, f.TUS, f.To = r.name, r.line, p, gen, k, -1, -1
	// seen marks the keys read, a bit each, so that none comes twice.
	var seen uint32
	var stage, to string
	for {
		if i >= n {
			return false
		}
		if text[i] == '}' {
			if i+1 != n {
				return false
			}
			break
		}
		if text[i] != ',' || i+2 >= n || text[i+1] != '"' {
			return false
		}
		i++
		var key plainKey
		switch text[i+1] {
		case 't':
			switch {
			case lit(text, i, `"t_us":`):
				key, i = keyTUS, i+len(`"t_us":`)
			case lit(text, i, `"to":`):
				key, i = keyTo, i+len(`"to":`)
			case lit(text, i, `"tokens":`):
				key, i = keyTokens, i+len(`"tokens":`)
			default:
				return false
			}
		case 'b':
			if !lit(text, i, `"blocks":`) {
				return false
			}
			key, i = keyBlocks, i+len(`"blocks":`)
		case 'p':
			switch {
			case lit(text, i, `"pages":`):
				key, i = keyPages, i+len(`"pages":`)
			case lit(text, i, `"prompt_tokens":`):
				key, i = keyPrompt, i+len(`"prompt_tokens":`)
			case lit(text, i, `"prefix_hit_tokens":`):
				key, i = keyHit, i+len(`"prefix_hit_tokens":`)
			default:
				return false
			}
		case 's':
			switch {
			case lit(text, i, `"stage":`):
				key, i = keyStage, i+len(`"stage":`)
			case lit(text, i, `"slot":`):
				key, i = keySlot, i+len(`"slot":`)
			default:
				return false
			}
		case 'h':
			if !lit(text, i, `"headroom":`) {
				return false
			}
			key, i = keyHeadroom, i+len(`"headroom":`)
		case 'o':
			if !lit(text, i, `"outcome":`) {
				return false
			}
			key, i = keyOutcome, i+len(`"outcome":`)
		default:
			return false
		}
		if seen&(1<<key) != 0 {
			return false
		}
		seen |= 1 << key
		if key >= keyStage {
			// A string.
			v, j, ok := scanStr(text, i)
			if !ok {
				return false
			}
			i = j
			switch key {
			case keyStage:
				stage = v
			case keyTo:
				to = v
			case keyOutcome:
				if k != OutcomeReported {
					return false
				}
				switch v {
				case "ok":
					f.Outcome = model.OutcomeOK
				case "failed":
					f.Outcome = model.OutcomeFailed
				default:
					return false
				}
				f.Has |= 1 << FigOutcome
			}
			continue
		}
		v, j, ok := scanNum(text, i)
		if !ok || v < 0 {
			return false
		}
		i = j
		switch key {
		case keyTUS:
			f.TUS = v
		case keyBlocks, keyPages, keySlot, keyHeadroom, keyTokens:
			g := Figure(key - keyBlocks)
			if kindFigures[k]&(1<<g) == 0 || v > 1<<40 {
				return false
			}
			*figureOf(f, g) = v
			f.Has |= 1 << g
		case keyPrompt:
			if v < 1 || v > 1<<30 {
				return false
			}
			f.PromptTokens = v
		case keyHit:
			if v > 1<<30 {
				return false
			}
			f.PrefixHitTokens = v
		}
	}
	if k == Routed {
		switch stage {
		case "prefill":
		case "decode":
			f.Stage = model.DestinationSide
		default:
			return false
		}
		if seen&(1<<keyTo) == 0 {
			return false
		}
		t, ok := r.procs.get(to)
		want := RolePrefill
		if f.Stage == model.DestinationSide {
			want = RoleDecode
		}
		if !ok || h.Processes[t].Role != want {
			return false
		}
		f.To = t
		f.Has |= 1 << FigStage
	} else if seen&(1<<keyStage|1<<keyTo) != 0 {
		return false
	}
	if k == OutcomeReported && seen&(1<<keyOutcome) == 0 {
		return false
	}
	if seen&(1<<keyHit) != 0 && (k != Routed || f.Stage != model.DestinationSide) {
		return false
	}
	f.Attempt = r.intern(att)
	return true
}

// plainKey is a key plainFact reads: the figures first, in Figure's
// order, then the other numbers, then the strings.
type plainKey uint8

const (
	keyBlocks plainKey = iota
	keyPages
	keySlot
	keyHeadroom
	keyTokens
	keyTUS
	keyPrompt
	keyHit
	keyStage
	keyTo
	keyOutcome
)

// figureOf is the field of f that holds figure g, one of the counts.
func figureOf(f *Fact, g Figure) *int64 {
	switch g {
	case FigBlocks:
		return &f.Blocks
	case FigPages:
		return &f.Pages
	case FigSlot:
		return &f.Slot
	case FigHeadroom:
		return &f.Headroom
	}
	return &f.Tokens
}

// kindFigures is, per kind, its Figures as a bit per Figure.
var kindFigures = func() (m [NumKinds]uint16) {
	for k := range NumKinds {
		for _, g := range Kinds[k].Figures {
			m[k] |= 1 << g
		}
	}
	return m
}()
