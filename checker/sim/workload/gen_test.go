package workload

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

var rewrite = flag.Bool("rewrite", false, "rewrite default.jsonl from DefaultGen instead of comparing")

func generate(t fataler, cfg GenConfig, name string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := NewWriter(&b, cfg.Header(name))
	if err != nil {
		t.Fatal(err)
	}
	if err := Generate(cfg, w); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDefault: the embedded default workload is what DefaultGen generates
// today, and reads back whole.
func TestDefault(t *testing.T) {
	want := generate(t, DefaultGen(), "default")
	if *rewrite {
		if err := os.WriteFile("default.jsonl", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(DefaultJSONL(), want) {
		t.Fatalf("default.jsonl is not what DefaultGen generates (run: go test ./checker/sim/workload -run TestDefault -rewrite)")
	}
	r := Default()
	h := r.Header()
	wantGen := DefaultGen()
	if h.Name != "default" || !h.HasSeed || h.Seed != 1 || h.Generator == nil || *h.Generator != wantGen {
		t.Errorf("header %+v, generator %+v", h, h.Generator)
	}
	n, groups, cancels, grouped := 0, map[string]bool{}, 0, 0
	var last int64
	for {
		req, err := r.Next()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatal(err)
			}
			break
		}
		n++
		last = req.ArrivalUS
		if req.PrefixGroup != "" {
			groups[req.PrefixGroup] = true
			grouped++
		}
		if req.HasCancel {
			cancels++
		}
	}
	// 200 requests at 40 per second last about 5 s; about half share a
	// prefix, and about 3% are cancelled.
	if n != 200 || len(groups) != 8 || grouped < 70 || grouped > 130 || cancels < 1 || cancels > 15 || last < 3e6 || last > 7e6 {
		t.Errorf("default workload: %d requests over %d us, %d groups, %d grouped, %d cancels", n, last, len(groups), grouped, cancels)
	}
}

// TestGenerate_Deterministic: the same configuration gives the same bytes;
// another seed gives others.
func TestGenerate_Deterministic(t *testing.T) {
	for _, arrival := range []string{"poisson", "bursty"} {
		cfg := DefaultGen()
		cfg.Arrival = arrival
		cfg.Requests = 500
		a, b := generate(t, cfg, "x"), generate(t, cfg, "x")
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: two runs differ", arrival)
		}
		cfg.Seed++
		if bytes.Equal(a, generate(t, cfg, "x")) {
			t.Fatalf("%s: seeds %d and %d give the same workload", arrival, cfg.Seed-1, cfg.Seed)
		}
	}
}

// arrivalStats generates cfg and measures the mean rate (per second) and
// the coefficient of variation of the gaps between arrivals.
func arrivalStats(t *testing.T, cfg GenConfig) (rate, cv float64) {
	_, reqs, err := readAll("g.jsonl", generate(t, cfg, ""))
	if err != nil {
		t.Fatal(err)
	}
	var sum, sum2 float64
	prev := int64(0)
	for _, r := range reqs {
		gap := float64(r.ArrivalUS - prev)
		sum += gap
		sum2 += gap * gap
		prev = r.ArrivalUS
	}
	n := float64(len(reqs))
	mean := sum / n
	return 1e6 / mean, math.Sqrt(sum2/n-mean*mean) / mean
}

// TestGenerate_Rates: both arrival processes keep the long-run mean rate;
// Poisson gaps vary as much as their mean (an exponential's), bursty ones
// more.
func TestGenerate_Rates(t *testing.T) {
	cfg := DefaultGen()
	cfg.Requests = 40000
	rate, cv := arrivalStats(t, cfg)
	if math.Abs(rate-40)/40 > 0.03 || math.Abs(cv-1) > 0.05 {
		t.Errorf("poisson: rate %.2f/s (want 40), gaps' coefficient of variation %.3f (want 1)", rate, cv)
	}
	cfg.Arrival = "bursty"
	rate, cv = arrivalStats(t, cfg)
	if math.Abs(rate-40)/40 > 0.05 || cv < 1.15 {
		t.Errorf("bursty: rate %.2f/s (want 40), gaps' coefficient of variation %.3f (want above 1)", rate, cv)
	}
	// A rate far below one arrival per burst cycle still arrives (the
	// generator skips whole cycles) at the mean rate.
	cfg.RatePerSec, cfg.BurstOnMS, cfg.BurstOffMS, cfg.Requests = 0.01, 0.001, 0.001, 2000
	rate, _ = arrivalStats(t, cfg)
	if math.Abs(rate-0.01)/0.01 > 0.1 {
		t.Errorf("bursty with tiny phases: rate %.4f/s, want 0.01", rate)
	}
}

// TestGenerate_Bursts: with bursty arrivals, requests crowd into the
// bursts: BurstFactor times as many per millisecond as between them.
func TestGenerate_Bursts(t *testing.T) {
	cfg := DefaultGen()
	cfg.Arrival, cfg.Requests = "bursty", 40000
	_, reqs, err := readAll("g.jsonl", generate(t, cfg, ""))
	if err != nil {
		t.Fatal(err)
	}
	in := 0
	for _, r := range reqs {
		if r.ArrivalUS%1_000_000 < 200_000 {
			in++
		}
	}
	// On 200 ms at 4x, off 800 ms at 1x: 800 of every 1600 arrivals in
	// a burst.
	if frac := float64(in) / float64(len(reqs)); math.Abs(frac-0.5) > 0.03 {
		t.Errorf("%.3f of arrivals in bursts, want 0.5", frac)
	}
}

// TestGenerate_Distributions: token counts stay in their ranges, groups
// share one prefix length, cancels come within their window.
func TestGenerate_Distributions(t *testing.T) {
	cfg := DefaultGen()
	cfg.Requests = 5000
	_, reqs, err := readAll("g.jsonl", generate(t, cfg, ""))
	if err != nil {
		t.Fatal(err)
	}
	prefix := map[string]int{}
	var prompt, output float64
	cancels := 0
	for _, r := range reqs {
		prompt += float64(r.PromptTokens)
		output += float64(r.OutputTokens)
		if r.PromptTokens < 64 || r.PromptTokens > 8192 || r.OutputTokens < 8 || r.OutputTokens > 1024 {
			t.Fatalf("request %d out of range: %+v", r.Index, r)
		}
		// A group's prefix is one length, cut to each prompt: a prefix
		// shorter than its prompt is the group's whole length.
		if r.PrefixGroup != "" && r.PrefixTokens < r.PromptTokens {
			if p, seen := prefix[r.PrefixGroup]; seen && p != r.PrefixTokens {
				t.Fatalf("group %s: prefixes of %d and %d tokens", r.PrefixGroup, p, r.PrefixTokens)
			}
			prefix[r.PrefixGroup] = r.PrefixTokens
		}
		if r.HasCancel {
			cancels++
			if after := r.CancelUS - r.ArrivalUS; after < 5000 || after > 200000 {
				t.Fatalf("request %d cancelled %d us after arrival, want 5 to 200 ms", r.Index, after)
			}
		}
	}
	for _, r := range reqs {
		if p, seen := prefix[r.PrefixGroup]; seen && r.PrefixTokens != min(p, r.PromptTokens) {
			t.Fatalf("request %d of group %s: prefix of %d tokens, want min(%d, prompt %d)", r.Index, r.PrefixGroup, r.PrefixTokens, p, r.PromptTokens)
		}
	}
	if len(prefix) != 8 {
		t.Errorf("%d groups, want 8", len(prefix))
	}
	n := float64(len(reqs))
	if math.Abs(prompt/n-2048)/2048 > 0.05 || math.Abs(output/n-128)/128 > 0.08 || math.Abs(float64(cancels)/n-0.03) > 0.01 {
		t.Errorf("mean prompt %.1f (2048), output %.1f (128), cancel fraction %.3f (0.03)", prompt/n, output/n, float64(cancels)/n)
	}
}

// genConfig draws a valid generator configuration.
func genConfig(t *rapid.T) GenConfig {
	tokens := func(label string) Dist {
		switch rapid.IntRange(0, 2).Draw(t, label+" kind") {
		case 0:
			return Dist{Kind: "fixed", Mean: float64(rapid.IntRange(1, MaxTokens).Draw(t, label))}
		case 1:
			lo := rapid.IntRange(1, 5000).Draw(t, label+" min")
			return Dist{Kind: "uniform", Min: float64(lo), Max: float64(rapid.IntRange(lo, MaxTokens).Draw(t, label+" max"))}
		}
		mean := rapid.Float64Range(1, 10000).Draw(t, label+" mean")
		return Dist{Kind: "lognormal", Mean: mean, Sigma: rapid.Float64Range(0, 3).Draw(t, label+" sigma"), Min: 1, Max: float64(MaxTokens)}
	}
	cfg := GenConfig{
		Seed:       rapid.Uint64().Draw(t, "seed"),
		Requests:   rapid.IntRange(1, 50).Draw(t, "requests"),
		RatePerSec: rapid.Float64Range(0.01, 1e5).Draw(t, "rate"),
		Arrival:    rapid.SampledFrom([]string{"poisson", "bursty"}).Draw(t, "arrival"),
		Prompt:     tokens("prompt"),
		Output:     tokens("output"),
	}
	if cfg.Arrival == "bursty" && rapid.Bool().Draw(t, "burst params") {
		cfg.BurstFactor = rapid.Float64Range(1, 100).Draw(t, "factor")
		cfg.BurstOnMS = rapid.Float64Range(0.001, 1e4).Draw(t, "on")
		cfg.BurstOffMS = rapid.Float64Range(0.001, 1e4).Draw(t, "off")
	}
	if rapid.Bool().Draw(t, "prefixes") {
		cfg.PrefixGroups = rapid.IntRange(1, 20).Draw(t, "groups")
		cfg.PrefixShare = rapid.Float64Range(0.01, 1).Draw(t, "share")
		cfg.PrefixTokens = tokens("prefix")
	}
	if rapid.Bool().Draw(t, "cancels") {
		cfg.CancelFraction = rapid.Float64Range(0.01, 1).Draw(t, "cancel fraction")
		cfg.CancelAfter = Dist{Kind: "uniform", Min: 0, Max: rapid.Float64Range(0, 1e6).Draw(t, "cancel max")}
	}
	return cfg
}

// TestGenerate_Rapid: whatever valid configuration, the workload reads
// back with as many requests as asked, and its header records the
// configuration.
func TestGenerate_Rapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("drawn configuration refused: %v", err)
		}
		data := generate(t, cfg, "r")
		h, reqs, err := readAll("g.jsonl", data)
		if err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		if len(reqs) != cfg.Requests {
			t.Fatalf("%d requests, want %d", len(reqs), cfg.Requests)
		}
		if d := cmp.Diff(cfg.withDefaults(), *h.Generator); d != "" || h.Seed != cfg.Seed {
			t.Fatalf("header generator (-want +got):\n%s", d)
		}
		// The header's record regenerates the same workload.
		if again := generate(t, *h.Generator, "r"); !bytes.Equal(again, data) {
			t.Fatal("the header's generator gives another workload")
		}
	})
}

func TestGenConfig_Refusals(t *testing.T) {
	d := DefaultGen
	cases := []struct {
		name  string
		cfg   func() GenConfig
		field string
		want  string
	}{
		{"no requests", func() GenConfig { c := d(); c.Requests = 0; return c }, "requests", "0, want 1 or more"},
		{"zero rate", func() GenConfig { c := d(); c.RatePerSec = 0; return c }, "rate_per_sec", "0, want a positive number of requests per second"},
		{"infinite rate", func() GenConfig { c := d(); c.RatePerSec = math.Inf(1); return c }, "rate_per_sec", "+Inf, want"},
		{"NaN rate", func() GenConfig { c := d(); c.RatePerSec = math.NaN(); return c }, "rate_per_sec", "NaN, want"},
		{"no arrival", func() GenConfig { c := d(); c.Arrival = ""; return c }, "arrival", `"", want poisson or bursty`},
		{"burst with poisson", func() GenConfig { c := d(); c.BurstFactor = 2; return c }, "burst_factor", "2 applies to bursty arrivals only"},
		{"burst factor below 1", func() GenConfig { c := d(); c.Arrival, c.BurstFactor = "bursty", 0.5; return c }, "burst_factor", "0.5, want 1 to 1000000"},
		{"negative burst", func() GenConfig { c := d(); c.Arrival, c.BurstOnMS = "bursty", -1; return c }, "burst_on_ms", "-1, want 0.001 to"},
		{"no prompt", func() GenConfig { c := d(); c.Prompt = Dist{}; return c }, "prompt", "missing, want fixed:V"},
		{"zero prompt", func() GenConfig { c := d(); c.Prompt = Dist{Kind: "fixed"}; return c }, "prompt", "fixed:0 gives 0 tokens, want 1 to 1048576"},
		{"prompt too long", func() GenConfig { c := d(); c.Prompt = Dist{Kind: "uniform", Min: 1, Max: 2e6}; return c }, "prompt", "uniform:1-2000000, want whole token counts within 1 to 1048576"},
		{"prompt no whole count", func() GenConfig { c := d(); c.Prompt = Dist{Kind: "uniform", Min: 1.2, Max: 1.5}; return c }, "prompt", "uniform:1.2-1.5, want whole token counts"},
		{"output bad kind", func() GenConfig { c := d(); c.Output = Dist{Kind: "normal", Mean: 3}; return c }, "output", `kind "normal"`},
		{"lognormal max", func() GenConfig { c := d(); c.Output.Max = 2e6; return c }, "output", "lognormal:mean=128,sigma=0.8,min=8,max=2000000, want min and max within 1 to 1048576 tokens"},
		{"groups negative", func() GenConfig { c := d(); c.PrefixGroups = -1; return c }, "prefix_groups", "-1, want 0 to 65536"},
		{"share without groups", func() GenConfig { c := d(); c.PrefixGroups = 0; c.PrefixTokens = Dist{}; return c }, "prefix_share", "0.5 needs prefix_groups above 0"},
		{"prefix without groups", func() GenConfig { c := d(); c.PrefixGroups, c.PrefixShare = 0, 0; return c }, "prefix_tokens", "lognormal:mean=512,sigma=0.5,min=16,max=4096 needs prefix_groups above 0"},
		{"share zero", func() GenConfig { c := d(); c.PrefixShare = 0; return c }, "prefix_share", "0, want a probability above 0, at most 1"},
		{"share above 1", func() GenConfig { c := d(); c.PrefixShare = 1.5; return c }, "prefix_share", "1.5, want a probability"},
		{"no prefix dist", func() GenConfig { c := d(); c.PrefixTokens = Dist{}; return c }, "prefix_tokens", "missing"},
		{"cancel fraction", func() GenConfig { c := d(); c.CancelFraction = 2; return c }, "cancel_fraction", "2, want a probability from 0 to 1"},
		{"cancel after without cancels", func() GenConfig { c := d(); c.CancelFraction = 0; return c }, "cancel_after", "uniform:5-200 needs cancel_fraction above 0"},
		{"no cancel after", func() GenConfig { c := d(); c.CancelAfter = Dist{}; return c }, "cancel_after", "missing, want the distribution"},
		{"bad cancel after", func() GenConfig { c := d(); c.CancelAfter = Dist{Kind: "uniform", Min: 5, Max: 1}; return c }, "cancel_after", "min 5 above max 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg().Validate()
			var ge *GenError
			if !errors.As(err, &ge) || !errors.Is(err, ErrWorkload) {
				t.Fatalf("got %v, want a *GenError wrapping ErrWorkload", err)
			}
			if ge.Field != tc.field || !strings.HasPrefix(ge.Problem, tc.want) {
				t.Fatalf("got %q %q, want %q %q...", ge.Field, ge.Problem, tc.field, tc.want)
			}
			if err := Generate(tc.cfg(), nil); !errors.As(err, &ge) {
				t.Fatalf("Generate ran a refused configuration: %v", err)
			}
		})
	}
}

// TestGenerate_PastTheEnd: a workload that would last past MaxMillis is
// refused, not cut short.
func TestGenerate_PastTheEnd(t *testing.T) {
	cfg := DefaultGen()
	cfg.RatePerSec = 1e-9
	var b bytes.Buffer
	w, err := NewWriter(&b, Header{})
	if err != nil {
		t.Fatal(err)
	}
	err = Generate(cfg, w)
	if err == nil || !errors.Is(err, ErrWorkload) || !strings.Contains(err.Error(), "past the 100000000000 ms a workload may last") {
		t.Fatalf("got %v", err)
	}
}

func TestParseDist(t *testing.T) {
	good := []struct {
		text string
		want Dist
	}{
		{"fixed:512", Dist{Kind: "fixed", Mean: 512}},
		{"fixed:0.5", Dist{Kind: "fixed", Mean: 0.5}},
		{"uniform:128-4096", Dist{Kind: "uniform", Min: 128, Max: 4096}},
		{"uniform:5-5", Dist{Kind: "uniform", Min: 5, Max: 5}},
		{"lognormal:mean=1024,sigma=0.8,min=16,max=8192", Dist{Kind: "lognormal", Mean: 1024, Sigma: 0.8, Min: 16, Max: 8192}},
		{"lognormal:sigma=0,mean=3", Dist{Kind: "lognormal", Mean: 3}},
		{"lognormal:mean=3,sigma=1,max=4", Dist{Kind: "lognormal", Mean: 3, Sigma: 1, Max: 4}},
	}
	for _, tc := range good {
		d, err := ParseDist(tc.text)
		if err != nil || d != tc.want {
			t.Errorf("ParseDist(%q) = %+v, %v; want %+v", tc.text, d, err, tc.want)
			continue
		}
		if back, err := ParseDist(d.String()); err != nil || back != d {
			t.Errorf("%q prints as %q, which reads back as %+v, %v", tc.text, d.String(), back, err)
		}
	}
	bad := []struct{ text, want string }{
		{"", `distribution "": want fixed:V, uniform:MIN-MAX or lognormal:mean=M,sigma=S[,min=A][,max=B]`},
		{"512", `distribution "512": want fixed:V`},
		{"normal:5", `distribution "normal:5": kind "normal", want fixed:V`},
		{"fixed:", `distribution "fixed:": value "", want a number, 0 or more`},
		{"fixed:-1", `value "-1", want a number, 0 or more`},
		{"fixed:NaN", `value "NaN", want a number, 0 or more`},
		{"fixed:Inf", `value "Inf", want a number, 0 or more`},
		{"fixed:1e999", `value "1e999", want a number, 0 or more`},
		{"uniform:5", `want uniform:MIN-MAX`},
		{"uniform:9-5", `min 9 above max 5`},
		{"uniform:a-5", `min "a", want a number`},
		{"uniform:1-b", `max "b", want a number`},
		{"lognormal:mean=5", `want mean and sigma`},
		{"lognormal:mean=5,sigma=1,mode=3", `unknown key "mode"`},
		{"lognormal:mean=5,mean=6,sigma=1", `mean given twice`},
		{"lognormal:mean=5,sigma", `"sigma", want key=value`},
		{"lognormal:mean=0,sigma=1", `mean 0, want a positive mean`},
		{"lognormal:mean=5,sigma=11", `sigma 11, want 0 to 10`},
		{"lognormal:mean=5,sigma=1,min=9,max=8", `min 9 above max 8`},
		{"lognormal:mean=50,sigma=1,min=1,max=8", `mean 50 outside min 1 to max 8`},
	}
	for _, tc := range bad {
		_, err := ParseDist(tc.text)
		if err == nil || !errors.Is(err, ErrWorkload) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDist(%q): %v, want %q", tc.text, err, tc.want)
		}
	}
}

// TestParseDist_Rapid: every distribution ParseDist accepts prints back
// to itself.
func TestParseDist_Rapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringMatching(`(fixed|uniform|lognormal):[0-9.,=a-z-]{0,30}`)).Draw(t, "text")
		d, err := ParseDist(s)
		if err != nil {
			return
		}
		if back, err := ParseDist(d.String()); err != nil || back != d {
			t.Fatalf("%q reads as %+v, prints as %q, reads back as %+v, %v", s, d, d.String(), back, err)
		}
	})
}
