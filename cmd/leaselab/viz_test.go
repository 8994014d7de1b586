package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/spec"
)

// The seed's double leaders under a pause: a replay line check printed.
var vizSeedArgs = []string{"-variant", "seed", "-procs", "0", "-faults", "stop", "-scheduler", "random", "-seed", "10451216379200822465", "-expect", "fd4c14cc9e"}

func viz(t *testing.T, out string, args ...string) string {
	t.Helper()
	var so, se bytes.Buffer
	if code := run(append(append([]string{"viz"}, args...), "-o", out), &so, &se); code != 0 {
		t.Fatalf("viz: exit %d: %s", code, se.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A violating run's timeline has a row per process, the store row, fault
// markers, the violation's span and its description, and every drawn
// element carries its trace line; a clean run is drawn and says so.
func TestVizTimeline(t *testing.T) {
	dir := t.TempDir()
	page := viz(t, filepath.Join(dir, "bad.html"), vizSeedArgs...)
	for _, want := range []string{`class="proc"`, `class="violation"`, `<b>exclusive-leadership</b>`, `class="fault stop"`,
		`class="leader"`, `class="paused"`, `<g class="store">`, fmt.Sprintf("1 of %d properties violated", len(spec.Properties))} {
		if !strings.Contains(page, want) {
			t.Errorf("timeline lacks %s", want)
		}
	}
	if n := strings.Count(page, `<g class="proc"`); n != 3 {
		t.Errorf("%d process rows, want 3", n)
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) ||
		regexp.MustCompile(`<(script|link|img)[^>]+(src|href)=`).MatchString(page) {
		t.Error("the page fetches something: it must open offline")
	}
	for _, m := range regexp.MustCompile(`<rect [^>]*>`).FindAllString(page, -1) {
		if !strings.Contains(m, "data-line=") {
			t.Errorf("element without its trace line: %s", m)
		}
	}
	clean := viz(t, filepath.Join(dir, "ok.html"), "-variant", "reference", "-procs", "3", "-faults", "kill", "-seed", "7")
	if !strings.Contains(clean, "No violation") || strings.Contains(clean, `class="violation"`) {
		t.Error("a clean run's timeline does not say it is clean")
	}
	var so, se bytes.Buffer
	if code := run(append(append([]string{"viz"}, vizSeedArgs...), "-o", filepath.Join(dir, "missing", "x.html")), &so, &se); code != 2 ||
		!strings.Contains(se.String(), "cannot write the timeline") {
		t.Errorf("unwritable -o: exit %d, %q", code, se.String())
	}
	if code := run(append([]string{"viz"}, vizSeedArgs...), &so, &se); code != 2 {
		t.Errorf("viz without -o: exit %d", code)
	}
}

// The store row labels each record by its fields: the seed's by holder
// and expiry, a versioned store's by holder and version.
func TestVizStoreLabels(t *testing.T) {
	dir := t.TempDir()
	labels := func(page string) []string {
		store := page[strings.Index(page, `<g class="store">`):]
		store = store[:strings.Index(store, "</g>")]
		var ls []string
		for _, m := range regexp.MustCompile(`<title>((?:[^:<]|:\d)*): `).FindAllStringSubmatch(store, -1) {
			ls = append(ls, m[1])
		}
		return ls
	}
	seed := labels(viz(t, filepath.Join(dir, "seed.html"), "-variant", "seed", "-seed", "5"))
	ref := labels(viz(t, filepath.Join(dir, "ref.html"), "-variant", "reference", "-seed", "3"))
	for _, c := range []struct {
		name   string
		labels []string
		want   *regexp.Regexp
	}{
		{"seed", seed, regexp.MustCompile(`^\d+ until \d\d:\d\d:\d\d$`)},
		{"reference", ref, regexp.MustCompile(`^\d+ v[1-9]\d*$`)},
	} {
		records := 0
		for _, l := range c.labels {
			if l == "no record" || l == "released" {
				continue
			}
			records++
			if !c.want.MatchString(l) {
				t.Errorf("%s: store label %q, want %v", c.name, l, c.want)
			}
		}
		if records == 0 {
			t.Errorf("%s: no record drawn in the store row (labels %q)", c.name, c.labels)
		}
	}
}

// A linearizable-store violation links porcupine's view of the store
// history, written beside the timeline.
func TestVizLinksPorcupine(t *testing.T) {
	dir := t.TempDir()
	page := viz(t, filepath.Join(dir, "lin.html"), "-variant", "seed", "-procs", "0", "-faults", "kill", "-scheduler", "random",
		"-seed", "13757245211066428519", "-expect", "ff4ad335da")
	if !strings.Contains(page, `<a href="lin-porcupine.html">`) {
		t.Fatal("no link to porcupine's view")
	}
	b, err := os.ReadFile(filepath.Join(dir, "lin-porcupine.html"))
	if err != nil || !bytes.Contains(b, []byte("<html")) {
		t.Errorf("porcupine's view not written: %v", err)
	}
}

// The timeline renders in a real browser: headless Chromium loads the
// page, its DOM has the process rows and the violation, and its
// screenshot shows the leaders' green and the violation's red. Outside CI
// a missing chromium skips; in CI (CI set, .ci/run installs it) it fails.
func TestVizInBrowser(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs Debian's chromium")
		}
		t.Skip("chromium not installed (apt-get install chromium)")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "run.html")
	viz(t, page, vizSeedArgs...)
	// Each run has a profile of its own (a browser still exiting may hold
	// the last one's lock) and two minutes.
	chromium := func(profile string, args ...string) *exec.Cmd {
		flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + filepath.Join(dir, profile)}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t.Cleanup(cancel)
		return exec.CommandContext(ctx, bin, append(flags, args...)...)
	}
	dom, err := chromium("profile-dom", "--dump-dom", "file://"+page).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if n := strings.Count(string(dom), `<g class="proc"`); n != 3 || !strings.Contains(string(dom), `class="violation"`) {
		t.Errorf("rendered DOM: %d process rows, violation marker present: %v", n, strings.Contains(string(dom), `class="violation"`))
	}
	shot := filepath.Join(dir, "run.png")
	if out, err := chromium("profile-shot", "--window-size=1300,450", "--screenshot="+shot, "file://"+page).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	green, red := 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			switch {
			case r < 70 && g > 100 && g < 150 && bl < 80: // the leader's #2e7d32
				green++
			case r > 240 && g > 190 && g < 225 && bl > 190 && bl < 225: // the violation's red over white
				red++
			}
		}
	}
	if green < 1000 || red < 1000 {
		t.Errorf("screenshot: %d leader pixels, %d violation pixels; want the bars and the violation drawn", green, red)
	}
	if os.Getenv("LEASELAB_SCREENSHOT") != "" {
		data, _ := os.ReadFile(shot)
		os.WriteFile(os.Getenv("LEASELAB_SCREENSHOT"), data, 0o644)
	}
}
