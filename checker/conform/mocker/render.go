package mocker

import (
	"fmt"
	"io"
)

// WriteText prints the mocker's bookkeeping next to conform's verdict: how
// many handoffs it converted and where its in-flight counts part from the
// contract's, with the first such event.
func (m *Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "mocker bookkeeping: %d handoffs; its in-flight counts differ from the contract's at %d events", m.Handoffs, len(m.Divergences))
	if len(m.Divergences) == 0 {
		fmt.Fprintln(w)
		return
	}
	d := m.Divergences[0]
	fmt.Fprintf(w, " (the mocker counts a prefill out when its pass completes, the contract while its source is held; first at line %d: %s, mocker %d, contract %d)\n", d.Line, d.Worker, d.Mocker, d.Count)
}
