package plot

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/internal/browser"
	"github.com/handoffcheck/handoffcheck/checker/sim"
)

// dumpDOM loads a file in headless Chromium and returns the DOM as it is
// after the page's load handlers ran, and what the browser logged. The
// logging flags make the browser copy the page's console, uncaught
// errors included, to stderr.
func dumpDOM(t *testing.T, bin, path string) (dom, logged string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox",
		"--enable-logging=stderr", "--v=0", "--user-data-dir="+t.TempDir(),
		"--dump-dom", "file://"+path)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v (after %v)\n%s", bin, err, time.Since(start).Round(time.Millisecond), stderr.String())
	}
	t.Logf("%s loaded in %v", filepath.Base(path), time.Since(start).Round(time.Millisecond))
	return stdout.String(), stderr.String()
}

var bodyTag = regexp.MustCompile(`<body[^>]*>`)

// pageErrors is what the browser logged about the page itself: uncaught
// errors and console messages (the report logs none).
func pageErrors(logged string) []string {
	var out []string
	for _, l := range strings.Split(logged, "\n") {
		if strings.Contains(l, "Uncaught") || strings.Contains(l, ":CONSOLE") {
			out = append(out, l)
		}
	}
	return out
}

// The report renders in a real browser: its script finds every section
// and every chart decoded, and nothing on the page throws. The first
// subtest checks the harness itself: a page that throws is caught.
func TestReport_RendersInChromium(t *testing.T) {
	bin := browser.Find()
	if bin == "" {
		t.Skip("chromium not found: run make chromium (or set HANDOFFCHECK_CHROMIUM)")
	}
	t.Run("harness-sees-errors", func(t *testing.T) {
		page := filepath.Join(t.TempDir(), "broken.html")
		html := `<!DOCTYPE html><html><body data-rendered="pending"><script>` +
			`window.addEventListener("load", function () { document.body.dataset.rendered = "ok"; noSuchFunction(); });` +
			`</script></body></html>`
		if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
		dom, logged := dumpDOM(t, bin, page)
		if !strings.Contains(bodyTag.FindString(dom), `data-rendered="ok"`) {
			t.Errorf("the load handler's change is not in the dumped DOM: %s", bodyTag.FindString(dom))
		}
		if !strings.Contains(logged, "Uncaught ReferenceError") {
			t.Errorf("an uncaught error was not logged; the check below would miss errors:\n%s", logged)
		}
	})
	t.Run("report-sees-breakage", func(t *testing.T) {
		// The report's own check is what the subtests below rely on: a
		// chart that does not decode and a missing section must fail it.
		dir := t.TempDir()
		if _, err := WriteDir(handMade("source-first", 0), dir); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, ReportFile)
		html := readFile(t, path)
		html = strings.Replace(html, "data:image/png;base64,", "data:image/png;base64,AAAA", 1)
		html = strings.Replace(html, `<section id="load">`, `<section id="not-load">`, 1)
		if err := os.WriteFile(path, []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
		dom, _ := dumpDOM(t, bin, path)
		body := bodyTag.FindString(dom)
		for _, want := range []string{"missing section load", "image not decoded"} {
			if !strings.Contains(body, want) {
				t.Errorf("the report's check did not report %q: %s", want, body)
			}
		}
	})
	for _, c := range []struct {
		name  string
		write func(dir string) ([]string, error)
		ids   []string
	}{
		{"report", func(dir string) ([]string, error) { return WriteDir(handMade("source-first", 0), dir) },
			[]string{"summary", "workers", "blocks", "load", "phases", "handoffs"}},
		{"compare", func(dir string) ([]string, error) {
			return WriteCompare(handMade("source-first", 0), handMade("destination-first", 30), dir)
		}, []string{"summary", "workers", "compare-blocks", "compare-load", "compare-phases", "handoffs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := c.write(dir); err != nil {
				t.Fatal(err)
			}
			dom, logged := dumpDOM(t, bin, filepath.Join(dir, ReportFile))
			body := bodyTag.FindString(dom)
			if !strings.Contains(body, `data-rendered="ok"`) {
				t.Errorf("the report's own check did not pass: %s", body)
			}
			for _, id := range c.ids {
				if !strings.Contains(dom, `id="`+id+`"`) {
					t.Errorf("rendered DOM lacks section %s", id)
				}
			}
			if n := strings.Count(dom, "<img "); n != 3 {
				t.Errorf("rendered DOM has %d images, want 3", n)
			}
			if errs := pageErrors(logged); len(errs) > 0 {
				t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
			}
		})
	}
}

// scenarioTimeline runs a named scenario under a policy and returns its
// timeline, summary included.
func scenarioTimeline(t *testing.T, name, policy string) *sim.Timeline {
	t.Helper()
	sc, err := sim.LookupScenario(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, reqs, faults, err := sc.Setup(policy)
	if err != nil {
		t.Fatal(err)
	}
	rec := sim.NewRecorder(nil)
	res, err := sim.Run(context.Background(), cfg, &sim.SliceSource{Reqs: reqs}, sim.Options{Faults: faults, Timeline: rec, FaultFree: sc.FaultFree})
	if err != nil || res.Violation != nil {
		t.Fatalf("%s %s: %v %v", name, policy, err, res.Violation)
	}
	return rec.Timeline()
}

// The stranding the handoff design is about, as a reader of the compare
// report sees it in a browser: the source-first run strands its computed
// prefill KV while decode is full, the destination-first run does not.
func TestReport_StrandedSourceInChromium(t *testing.T) {
	bin := browser.Find()
	if bin == "" {
		t.Skip("chromium not found: run make chromium (or set HANDOFFCHECK_CHROMIUM)")
	}
	src := scenarioTimeline(t, "stranded-source", "source-first")
	dst := scenarioTimeline(t, "stranded-source", "destination-first")
	dir := t.TempDir()
	if _, err := WriteCompare(src, dst, dir); err != nil {
		t.Fatal(err)
	}
	dom, _ := dumpDOM(t, bin, filepath.Join(dir, ReportFile))
	row := regexp.MustCompile(`<tr><th>stranded source block-seconds, total</th><td class="n">([0-9.]+)</td><td class="n">([0-9.]+)</td></tr>`).FindStringSubmatch(dom)
	if row == nil {
		t.Fatal("the rendered report has no row of stranded source block-seconds for both runs")
	}
	a, errA := strconv.ParseFloat(row[1], 64)
	b, errB := strconv.ParseFloat(row[2], 64)
	if errA != nil || errB != nil || a <= 0 || a < 10*b {
		t.Errorf("rendered stranded source block-seconds: source-first %s, destination-first %s: want the first above 0 and at least 10 times the second", row[1], row[2])
	}
	if a != src.Summary.StrandedSourceBlockSeconds || b != dst.Summary.StrandedSourceBlockSeconds {
		t.Errorf("rendered %v and %v, the runs measured %v and %v", a, b, src.Summary.StrandedSourceBlockSeconds, dst.Summary.StrandedSourceBlockSeconds)
	}
}
