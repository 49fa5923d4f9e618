package main

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// dockerfile is what the tests read of the repository's Dockerfile: its
// stages in order, and the final stage's entrypoint.
type dockerfile struct {
	stages     []dockerStage
	entrypoint []string
}

type dockerStage struct {
	from, name string
	runs       []string
	copies     []dockerCopy
}

type dockerCopy struct{ from, src, dst string }

// readDockerfile reads the few instructions the Dockerfile uses (FROM,
// RUN, COPY, ENTRYPOINT in its exec form), with continuation lines joined.
func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatalf("no Dockerfile: nothing builds the image the Kubernetes manifest names: %v", err)
	}
	var d dockerfile
	var logical []string
	cur := ""
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if cur == "" && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if s, ok := strings.CutSuffix(l, `\`); ok {
			cur += s + " "
			continue
		}
		logical = append(logical, cur+l)
		cur = ""
	}
	for _, l := range logical {
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			f := strings.Fields(rest)
			s := dockerStage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			d.stages = append(d.stages, s)
		case "RUN":
			d.stages[len(d.stages)-1].runs = append(d.stages[len(d.stages)-1].runs, rest)
		case "COPY":
			var c dockerCopy
			f := strings.Fields(rest)
			for len(f) > 0 && strings.HasPrefix(f[0], "--") {
				if v, ok := strings.CutPrefix(f[0], "--from="); ok {
					c.from = v
				}
				f = f[1:]
			}
			if len(f) == 2 {
				c.src, c.dst = f[0], f[1]
			}
			d.stages[len(d.stages)-1].copies = append(d.stages[len(d.stages)-1].copies, c)
		case "ENTRYPOINT":
			d.entrypoint = nil
			if err := json.Unmarshal([]byte(rest), &d.entrypoint); err != nil {
				t.Fatalf("Dockerfile: ENTRYPOINT %s: want the exec form, a JSON array (a shell form needs a shell the static image lacks): %v", rest, err)
			}
		}
	}
	if len(d.stages) == 0 {
		t.Fatal("Dockerfile: no FROM")
	}
	return d
}

// The image the Kubernetes Job names is the one `make image` builds from
// the Dockerfile, and the command its container runs is the Dockerfile's
// entrypoint, the handoffcheck binary built from ./cmd/handoffcheck, with
// the manifest's arguments (TestDeploy_ManifestIsTheLocalShardCommand runs
// that command here, shard by shard). Before the Dockerfile, the manifest
// named handoffcheck:latest and nothing built it.
func TestDeploy_ImageRunsTheManifestCommand(t *testing.T) {
	d := readDockerfile(t)
	j, cmd := readJob(t)
	c := j.Spec.Template.Spec.Containers[0]

	// make image tags what the manifest names.
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+)\s*$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no IMAGE ?= NAME: make image tags nothing the manifest can name")
	}
	if c.Image != string(m[1]) {
		t.Errorf("the manifest runs image %q, make image builds %q", c.Image, m[1])
	}
	recipe := regexp.MustCompile(`(?m)^image:.*\n((?:\t.*\n)+)`).FindSubmatch(mk)
	if recipe == nil || !strings.Contains(string(recipe[1]), "-t $(IMAGE)") || !strings.Contains(string(recipe[1]), "build") {
		t.Errorf("Makefile: the image target does not build and tag $(IMAGE):\n%s", mk)
	}

	// The final stage is a static base holding the binary the build stage
	// made from ./cmd/handoffcheck, and its entrypoint is that binary.
	final := d.stages[len(d.stages)-1]
	if !strings.HasPrefix(final.from, "gcr.io/distroless/static") && final.from != "scratch" {
		t.Errorf("the image's base is %s, want a static one (distroless/static or scratch)", final.from)
	}
	if len(d.entrypoint) == 0 {
		t.Fatal("Dockerfile: no ENTRYPOINT")
	}
	var bin *dockerCopy
	for i, cp := range final.copies {
		if cp.dst == d.entrypoint[0] {
			bin = &final.copies[i]
		}
	}
	if bin == nil || bin.from == "" {
		t.Fatalf("the entrypoint %s is copied from no build stage", d.entrypoint[0])
	}
	built := false
	for _, s := range d.stages[:len(d.stages)-1] {
		if s.name != bin.from {
			continue
		}
		for _, r := range s.runs {
			if strings.Contains(r, "go build") && strings.Contains(r, "-o "+bin.src+" ") && strings.HasSuffix(r, " ./cmd/handoffcheck") &&
				strings.Contains(r, "CGO_ENABLED=0") {
				built = true
			}
		}
	}
	if !built {
		t.Errorf("stage %q does not build %s from ./cmd/handoffcheck with CGO_ENABLED=0 (a static base has no C library)", bin.from, bin.src)
	}

	// The container runs the entrypoint: the manifest gives no command of
	// its own (which would replace it), only the arguments of a check.
	if len(c.Command) != 0 {
		t.Errorf("the manifest's command %v replaces the image's entrypoint %v", c.Command, d.entrypoint)
	}
	if path.Base(d.entrypoint[0]) != "handoffcheck" || len(cmd) < 2 || cmd[0] != "handoffcheck" || cmd[1] != "check" {
		t.Errorf("the container runs %v (entrypoint %v), want handoffcheck check", cmd, d.entrypoint)
	}

	// A nonroot image writes its reports through the pod's fsGroup.
	if strings.HasSuffix(final.from, ":nonroot") {
		data, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		var pod struct {
			Spec struct {
				Template struct {
					Spec struct {
						SecurityContext struct {
							RunAsNonRoot *bool `json:"runAsNonRoot"`
							FSGroup      *int  `json:"fsGroup"`
						} `json:"securityContext"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &pod); err != nil {
			t.Fatal(err)
		}
		sc := pod.Spec.Template.Spec.SecurityContext
		if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.FSGroup == nil || *sc.FSGroup != 65532 {
			t.Errorf("the image runs as distroless's nonroot user 65532, but the pod does not give its volumes fsGroup 65532 (runAsNonRoot true): the shard could not write its report")
		}
	}

	// The build stage's Go is the one go.mod asks for (major.minor).
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gv := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if gv == nil || d.stages[0].from != "golang:"+string(gv[1]) {
		t.Errorf("the build stage is %s, want golang:%s (go.mod's)", d.stages[0].from, gv[1])
	}
}
