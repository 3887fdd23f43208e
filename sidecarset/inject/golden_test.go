package inject

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the want.yaml golden files")

// now is the clock every golden case injects at.
var now = metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))

// goldenCase is one directory of testdata: the pod being created (pod.yaml), the cluster's SidecarSets
// (sidecarsets.yaml, YAML documents) and, optionally, the pod's namespace (namespace.yaml).
type goldenCase struct {
	pod       *corev1.Pod
	sets      []*kruiseappsv1alpha1.SidecarSet
	namespace *corev1.Namespace
}

// goldenResult is what want.yaml holds: the SidecarSets Select picked, then what Inject made of the pod.
type goldenResult struct {
	Selected []string    `json:"selected"`
	Changed  bool        `json:"changed"`
	Error    string      `json:"error,omitempty"`
	Pod      *corev1.Pod `json:"pod,omitempty"`
}

func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "pod.yaml")); err != nil {
			continue // not a case (testdata/fuzz, say)
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := run(loadCase(t, dir))
			compareGolden(t, filepath.Join(dir, "want.yaml"), got)
		})
	}
}

// run plays the webhook: select the SidecarSets, resolve each to its latest revision, inject.
func run(c goldenCase) goldenResult {
	res := goldenResult{Selected: []string{}}
	var labels map[string]string
	if c.namespace != nil {
		labels = c.namespace.Labels
	}
	selected, err := Select(c.sets, c.pod, labels)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	var sources []Source
	for _, s := range selected {
		res.Selected = append(res.Selected, s.Name)
		sources = append(sources, Source{Set: s, Revision: s.Status.LatestRevision})
	}
	pod := c.pod.DeepCopy()
	res.Changed, err = Inject(pod, sources, now)
	if err != nil {
		res.Error = err.Error()
		if !res.Changed && equalPods(pod, c.pod) {
			return res
		}
		res.Error += " (and the pod was changed)"
	}
	res.Pod = pod
	return res
}

func equalPods(a, b *corev1.Pod) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return bytes.Equal(x, y)
}

func loadCase(t testing.TB, dir string) goldenCase {
	t.Helper()
	var c goldenCase
	c.pod = &corev1.Pod{}
	readYAML(t, filepath.Join(dir, "pod.yaml"), c.pod)
	raw, err := os.ReadFile(filepath.Join(dir, "sidecarsets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		set := &kruiseappsv1alpha1.SidecarSet{}
		if err := yaml.UnmarshalStrict([]byte(doc), set); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		c.sets = append(c.sets, set)
	}
	if _, err := os.Stat(filepath.Join(dir, "namespace.yaml")); err == nil {
		c.namespace = &corev1.Namespace{}
		readYAML(t, filepath.Join(dir, "namespace.yaml"), c.namespace)
	}
	return c
}

func readYAML(t testing.TB, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func compareGolden(t *testing.T, path string, got goldenResult) {
	t.Helper()
	out, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("%s differs:\ngot:\n%s\nwant:\n%s", path, out, want)
	}
}
