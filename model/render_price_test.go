package model

import (
	"strings"
	"testing"
)

// The price report renders itself: the text `handoffcheck price` prints for
// a linear profile with a hit and a bandwidth, from the quote alone.
func TestPriceReport_WriteText(t *testing.T) {
	q, err := LinearProfile{BytesPerToken: 10, BlockSize: 16}.Price(100, 32)
	if err != nil {
		t.Fatal(err)
	}
	gbps := 1.0
	ms := q.TransferMillis(gbps)
	o := PriceReport{Profile: "linear", RequestedHitTokens: 32, BandwidthGbps: &gbps, TransferMs: &ms}
	o.SetQuote(q, false)
	var b strings.Builder
	o.WriteText(&b, "")
	want := `profile:      linear
prompt:       100 tokens
transferred:  100 tokens
hit:          32 tokens asked, 2 whole pages reused (32 tokens)
moved:        68 tokens
  group   kind    computed  checkpoint  kept  offered  moved  bytes
  linear  linear  7         0           7     7        5      680
payload:      680 bytes
source:       computes 7 blocks and keeps them all pinned; offers 7
destination:  reserves 5 blocks, locks 2 cached blocks
transfer:     0.0006799999999999999 ms at 1 GB/s
`
	if b.String() != want {
		t.Errorf("got\n%swant\n%s", b.String(), want)
	}
}
