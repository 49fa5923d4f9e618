// Package browser finds and drives the headless Chromium that the tests of
// pages (the simulator's report, the explorer) check them in. Tests that
// need it skip, saying so, when no browser is installed (make chromium).
package browser

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Find is the browser of the headless tests: HANDOFFCHECK_CHROMIUM if
// set, else the first of the usual names on PATH ("" when none).
func Find() string {
	if p := os.Getenv("HANDOFFCHECK_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Tab starts a headless browser for a test and returns a tab's context,
// bounded generously: a browser starting on a busy machine takes seconds,
// and the tests wait on the page's state, never on time. It skips the
// test when no browser is installed. Everything ends with the test.
func Tab(t testing.TB) context.Context {
	t.Helper()
	bin := Find()
	if bin == "" {
		t.Skip("chromium not found: run make chromium (or set HANDOFFCHECK_CHROMIUM)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(func() {
		cancel()
		cancelBrowser()
		cancelAlloc()
	})
	return ctx
}
