package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

const manifest = "../../deploy/k8s/walks-job.yaml"

// job is the part of a batch/v1 Job the test reads.
type job struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		CompletionMode       string `json:"completionMode"`
		Completions          *int   `json:"completions"`
		Parallelism          *int   `json:"parallelism"`
		BackoffLimitPerIndex *int   `json:"backoffLimitPerIndex"`
		Template             struct {
			Spec struct {
				RestartPolicy string `json:"restartPolicy"`
				Containers    []struct {
					Name    string   `json:"name"`
					Image   string   `json:"image"`
					Command []string `json:"command"`
					Args    []string `json:"args"`
					Env     []struct {
						Name      string `json:"name"`
						ValueFrom *struct {
							FieldRef *struct {
								FieldPath string `json:"fieldPath"`
							} `json:"fieldRef"`
						} `json:"valueFrom"`
					} `json:"env"`
					VolumeMounts []struct {
						Name      string `json:"name"`
						MountPath string `json:"mountPath"`
					} `json:"volumeMounts"`
				} `json:"containers"`
				Volumes []struct {
					Name string `json:"name"`
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// readJob reads the manifest's Job and the command line its container runs.
func readJob(t *testing.T) (*job, []string) {
	t.Helper()
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var j job
	if err := yaml.Unmarshal(data, &j); err != nil {
		t.Fatalf("%s: %v", manifest, err)
	}
	c := j.Spec.Template.Spec.Containers
	if len(c) != 1 {
		t.Fatalf("%s: %d containers, want one", manifest, len(c))
	}
	// Without a command the container runs the image's entrypoint (the
	// Dockerfile's), named here by its program so that the tests run it.
	command := c[0].Command
	if len(command) == 0 {
		ep := readDockerfile(t).entrypoint
		if len(ep) == 0 {
			t.Fatalf("%s gives no command and the Dockerfile no entrypoint: the container would run nothing", manifest)
		}
		command = append([]string{path.Base(ep[0])}, ep[1:]...)
	}
	return &j, append(append([]string(nil), command...), c[0].Args...)
}

// The manifest is a well-formed batch/v1 Indexed Job: as many completions
// as shards, run at once, never retried (a shard is deterministic); its
// container runs one shard of a walk search, chosen by the completion
// index, which the container's environment declares, and writes the
// shard's JSON report to a mounted volume.
func TestDeploy_ManifestIsAnIndexedJob(t *testing.T) {
	j, cmd := readJob(t)
	s := &j.Spec
	if j.APIVersion != "batch/v1" || j.Kind != "Job" || s.CompletionMode != "Indexed" || s.Completions == nil || s.Parallelism == nil ||
		*s.Parallelism != *s.Completions || s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 || s.Template.Spec.RestartPolicy != "Never" {
		t.Fatalf("not an Indexed Job run at once and never retried: %+v", j)
	}
	if len(cmd) < 2 || cmd[0] != "handoffcheck" || cmd[1] != "check" {
		t.Fatalf("the container runs %v, want handoffcheck check", cmd)
	}
	shard := flagValue(cmd, "--shard")
	if want := "$(JOB_COMPLETION_INDEX)/" + itoa(*s.Completions); shard != want {
		t.Errorf("--shard %q, want %q: one shard per completion index", shard, want)
	}
	if out := flagValue(cmd, "--out"); !strings.Contains(out, "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("--out %q does not name the shard: the shards would write over each other", out)
	}
	if !contains(cmd, "--json") || flagValue(cmd, "--walks") == "" {
		t.Errorf("the command %v is not a walk search writing JSON", cmd)
	}
	c := s.Template.Spec.Containers[0]
	declared := false
	for _, e := range c.Env {
		if e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			declared = true
		}
	}
	if !declared {
		t.Errorf("JOB_COMPLETION_INDEX is not declared from the completion index annotation: $(...) would not expand")
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	volumes := map[string]bool{}
	for _, v := range s.Template.Spec.Volumes {
		volumes[v.Name] = true
	}
	for name, path := range mounts {
		if !volumes[name] {
			t.Errorf("mount %s (%s) has no volume", name, path)
		}
	}
	for _, file := range []string{flagValue(cmd, "--config"), flagValue(cmd, "--spec"), flagValue(cmd, "--out")} {
		inMount := false
		for _, path := range mounts {
			inMount = inMount || strings.HasPrefix(file, path+"/")
		}
		if !inMount {
			t.Errorf("%s is on no mounted volume", file)
		}
	}
}

// The manifest's command, run here as processes (the completion index and
// the mount paths put in), one per shard, and merged, reports what one
// process running every walk reports, on a broken variant: the same first
// failing walk, seed and counterexample, and the same counts up to it.
func TestDeploy_ManifestIsTheLocalShardCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	j, cmd := readJob(t)
	n := *j.Spec.Completions
	reports := t.TempDir()
	paths := strings.NewReplacer("/inputs/config.json", small, "/inputs/spec.json", release, "/reports/", reports+"/")
	var files []string
	for k := 0; k < n; k++ {
		args := make([]string, len(cmd)-1)
		for i, a := range cmd[1:] {
			args[i] = paths.Replace(strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", itoa(k)))
		}
		p := exec.Command(os.Args[0], args...)
		p.Env = append(os.Environ(), "HANDOFFCHECK_CLI=1")
		out, err := p.CombinedOutput()
		if code := p.ProcessState.ExitCode(); code != exitOK && code != exitViolation {
			t.Fatalf("shard %d: exit %d (%v): %s", k, code, err, out)
		}
		files = append(files, filepath.Join(reports, "shard-"+itoa(k)+".json"))
	}
	code, merged, errOut := runCLI(t, append([]string{"merge", "--json"}, files...)...)
	if code != exitViolation {
		t.Fatalf("merge: exit %d: %s%s", code, merged, errOut)
	}
	// One process, every walk: the same command without --shard and --out.
	var one []string
	for i := 1; i < len(cmd); i++ {
		if cmd[i] == "--shard" || cmd[i] == "--out" {
			i++
			continue
		}
		one = append(one, paths.Replace(cmd[i]))
	}
	code, single, errOut := runCLI(t, one...)
	if code != exitViolation {
		t.Fatalf("one process: exit %d: %s", code, errOut)
	}
	type run struct {
		Run       string           `json:"run"`
		Walks     int              `json:"walks"`
		Moves     int64            `json:"moves"`
		Failing   int              `json:"failing_walk"`
		Seed      uint64           `json:"seed"`
		Invariant string           `json:"invariant"`
		Detail    string           `json:"detail"`
		Trace     json.RawMessage  `json:"trace"`
		Reproduce string           `json:"reproduce"`
		Coverage  json.RawMessage  `json:"coverage"`
		Lengths   json.RawMessage  `json:"walk_lengths"`
		Ends      map[string]int   `json:"walk_ends"`
		Kinds     map[string]int64 `json:"move_kinds"`
		Faults    map[string]int64 `json:"faults_committed"`
	}
	var a, b struct {
		Verdict string `json:"verdict"`
		Runs    []run  `json:"runs"`
	}
	if err := json.Unmarshal([]byte(merged), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(single), &b); err != nil {
		t.Fatal(err)
	}
	if a.Verdict != "violation" || len(a.Runs) == 0 {
		t.Fatalf("merged: %s", merged)
	}
	if diff := cmp.Diff(b, a); diff != "" {
		t.Fatalf("the merged shards differ from one process (-one +merged):\n%s", diff)
	}
	// Some run found nothing: its figures are every shard's, summed.
	summed := false
	for _, r := range a.Runs {
		summed = summed || (r.Invariant == "" && r.Walks == 20000)
	}
	if !summed {
		t.Errorf("every run failed: no run's figures were merged over every shard")
	}
}

// merge refuses what is not every shard of one search, naming the file.
func TestCLI_MergeRefusals(t *testing.T) {
	dir := t.TempDir()
	shard := func(k, m int, extra ...string) string {
		f := filepath.Join(dir, "s"+itoa(k)+"of"+itoa(m)+strings.Join(extra, "")+".json")
		args := append([]string{"check", "--config", small, "--run", "sglang", "--walks", "40", "--shard", itoa(k) + "/" + itoa(m), "--json", "--timing=false", "--out", f}, extra...)
		if code, _, errOut := runCLI(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return f
	}
	s0, s1 := shard(0, 2), shard(1, 2)
	other := shard(1, 2, "--swarm")
	plain := filepath.Join(dir, "plain.json")
	runCLI(t, "check", "--config", small, "--run", "sglang", "--walks", "40", "--json", "--out", plain)
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte("{\n  \"mode\": \"walks\",\n  \"steps\": \"many\"\n}\n"), 0o644)
	// A shard's index must be below the count: shard 2 of 2 is no shard.
	past := filepath.Join(dir, "past.json")
	if b, err := os.ReadFile(s1); err != nil || !strings.Contains(string(b), "\"index\": 1,") {
		t.Fatalf("shard 1 of 2: %v\n%s", err, b)
	} else {
		os.WriteFile(past, []byte(strings.Replace(string(b), "\"index\": 1,", "\"index\": 2,", 1)), 0o644)
	}
	if code, out, errOut := runCLI(t, "merge", s1, s0); code != exitOK || !strings.Contains(out, "40 random walks of up to 200 moves in 2 shards") {
		t.Fatalf("two shards in any order: exit %d: %s%s", code, out, errOut)
	}
	// Walks of up to 2^20 moves merge; one move more is refused.
	withSteps := func(f string, n int) string {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), "\"steps\": 200,") {
			t.Fatalf("%s: %v\n%s", f, err, b)
		}
		out := filepath.Join(dir, itoa(n)+filepath.Base(f))
		os.WriteFile(out, []byte(strings.Replace(string(b), "\"steps\": 200,", "\"steps\": "+itoa(n)+",", 1)), 0o644)
		return out
	}
	if code, out, errOut := runCLI(t, "merge", withSteps(s0, 1<<20), withSteps(s1, 1<<20)); code != exitOK || !strings.Contains(out, "of up to 1048576 moves") {
		t.Errorf("walks of up to 2^20 moves: exit %d: %s%s", code, out, errOut)
	}
	long := withSteps(s1, 1<<20+1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", withSteps(s0, 1<<20+1), long}, ":5: merge: 1048577 steps and 40 walks: want steps from 1 to 1048576"},
		{[]string{"merge", s0}, "shards 1 of 2 are missing"},
		{[]string{"merge", s0, s0, s1}, "shard 0 is given twice"},
		{[]string{"merge", s0, other}, other + ":1: merge: a shard of another search"},
		{[]string{"merge", plain}, plain + ":1: merge: not a shard's report"},
		{[]string{"merge", broken}, broken + ":3:"},
		{[]string{"merge", s0, past}, past + ":7: merge: shard 2 of 2"},
		{[]string{"merge"}, "want [--json] SHARD.json..."},
		{[]string{"check", "--walks", "4", "--shard", "2/2"}, "--shard \"2/2\": want K/M with 0 <= K < M"},
		{[]string{"check", "--shard", "0/2"}, "--shard applies to random walks"},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

func flagValue(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}

func contains(args []string, s string) bool {
	for _, a := range args {
		if a == s {
			return true
		}
	}
	return false
}
