package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestSplitPairs(t *testing.T) {
	isPair := func(s string) bool { return strings.Contains(s, "=") }
	res, pairs, err := splitPairs([]string{"cs/a", "cs/b", "web=nginx:2", "*=x"}, isPair, "image")
	if err != nil || !cmp.Equal(res, []string{"cs/a", "cs/b"}) || !cmp.Equal(pairs, []string{"web=nginx:2", "*=x"}) {
		t.Errorf("got %v %v %v", res, pairs, err)
	}
	if _, _, err := splitPairs([]string{"cs/a", "web=nginx", "cs/b"}, isPair, "image"); err == nil ||
		err.Error() != "all resources must be specified before image changes: cs/b" {
		t.Errorf("error = %v", err)
	}
	if !isEnvChange("KEY-") || isEnvChange("-") || isEnvChange("cloneset/x-") || isEnvChange("cs") {
		t.Error("isEnvChange")
	}
}

func TestParseImages(t *testing.T) {
	tests := []struct {
		pairs   []string
		want    map[string]string
		wantErr string
	}{
		{pairs: []string{"web=nginx:2", "init=busybox:2"}, want: map[string]string{"web": "nginx:2", "init": "busybox:2"}},
		{pairs: []string{"*=nginx:2"}, want: map[string]string{"*": "nginx:2"}},
		{wantErr: "at least one image update is required"},
		{pairs: []string{"web="}, wantErr: `invalid image format: "web="`},
		{pairs: []string{"*=a", "web=b"}, wantErr: "all containers are already specified by *"},
	}
	for _, tt := range tests {
		got, err := parseImages(tt.pairs)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error = %v, want %q", tt.pairs, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tt.want) {
			t.Errorf("%v: got %v, %v", tt.pairs, got, err)
		}
	}
}

func images(spec corev1.PodSpec) []string {
	var out []string
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		out = append(out, c.Name+"="+c.Image)
	}
	return out
}

func TestPlanSetImage(t *testing.T) {
	tests := []struct {
		name      string
		images    map[string]string
		want      []string
		wantErr   string
		unchanged bool
	}{
		{name: "one container", images: map[string]string{"web": "nginx:2"}, want: []string{"init=busybox:1", "web=nginx:2", "sidecar=envoy:1"}},
		{name: "init container", images: map[string]string{"init": "busybox:2"}, want: []string{"init=busybox:2", "web=nginx:1", "sidecar=envoy:1"}},
		{name: "all", images: map[string]string{"*": "x:1"}, want: []string{"init=x:1", "web=x:1", "sidecar=x:1"}},
		{name: "unchanged", images: map[string]string{"web": "nginx:1"}, unchanged: true},
		{name: "missing", images: map[string]string{"db": "pg:1", "web": "nginx:2"}, wantErr: `unable to find container named "db"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := planSetImage(testCloneSet(t), tt.images)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.unchanged {
				if e.Patch != nil {
					t.Errorf("patch = %s, want none", e.Patch)
				}
				return
			}
			if diff := cmp.Diff(tt.want, images(containersOf(t, e.Preview))); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetImagePatchKeepsUnknownFields(t *testing.T) {
	obj := testCloneSet(t)
	containers, _, _ := unstructuredSlice(obj, "containers")
	containers[0].(map[string]any)["futureField"] = "kept"
	setSlice(t, obj, "containers", containers)
	e, err := planSetImage(obj, map[string]string{"web": "nginx:2"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"resourceVersion":"7"},"spec":{"template":{"spec":{"containers":[{"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"futureField":"kept","image":"nginx:2","name":"web","resources":{}},{"image":"envoy:1","name":"sidecar","resources":{}}]}}}}`
	if string(e.Patch) != want {
		t.Errorf("patch =\n%s\nwant\n%s", e.Patch, want)
	}
}

func TestParseEnv(t *testing.T) {
	set, remove, err := parseEnv([]string{"A=1", "B=x=y", "C=", "D-"})
	wantSet := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "x=y"}, {Name: "C"}}
	if err != nil || !cmp.Equal(set, wantSet) || !cmp.Equal(remove, []string{"D"}) {
		t.Errorf("got %v %v %v", set, remove, err)
	}
	for arg, want := range map[string]string{"1A=x": `invalid key name "1A"`, "A=1 A-": "can't both modify and remove"} {
		if _, _, err := parseEnv(strings.Fields(arg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error = %v, want %q", arg, err, want)
		}
	}
}

func TestPlanSetEnv(t *testing.T) {
	env := func(pairs ...string) []corev1.EnvVar {
		var out []corev1.EnvVar
		for _, p := range pairs {
			k, v, _ := strings.Cut(p, "=")
			out = append(out, corev1.EnvVar{Name: k, Value: v})
		}
		return out
	}
	tests := []struct {
		name    string
		change  envChange
		want    [][]corev1.EnvVar // init, web, sidecar
		wantErr string
	}{
		{name: "set everywhere", change: envChange{Containers: "*", Set: env("B=3", "C=4"), Overwrite: true},
			want: [][]corev1.EnvVar{env("B=3", "C=4"), env("A=1", "B=3", "C=4"), env("B=3", "C=4")}},
		{name: "one container", change: envChange{Containers: "web", Set: env("C=4"), Remove: []string{"A"}, Overwrite: true},
			want: [][]corev1.EnvVar{nil, env("B=2", "C=4"), nil}},
		{name: "pattern", change: envChange{Containers: "s*", Set: env("C=4"), Overwrite: true},
			want: [][]corev1.EnvVar{nil, env("A=1", "B=2"), env("C=4")}},
		{name: "remove the last variable", change: envChange{Containers: "web", Remove: []string{"A", "B"}, Overwrite: true},
			want: [][]corev1.EnvVar{nil, nil, nil}},
		{name: "same value without overwrite", change: envChange{Containers: "web", Set: env("A=1", "C=4")},
			want: [][]corev1.EnvVar{nil, env("A=1", "B=2", "C=4"), nil}},
		{name: "no overwrite", change: envChange{Containers: "web", Set: env("A=9")},
			wantErr: "'A' already has a value (1), and --overwrite is false"},
		{name: "no container", change: envChange{Containers: "db", Set: env("A=9")}, wantErr: "unable to find container named db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := planSetEnv(testCloneSet(t), tt.change)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			spec := containersOf(t, e.Preview)
			got := [][]corev1.EnvVar{spec.InitContainers[0].Env, spec.Containers[0].Env, spec.Containers[1].Env}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnvFrom(t *testing.T) {
	env, from := envFromKeys("Secret", "creds", "APP_", []string{"db.user", "db-pass", "other"}, []string{"db.user", "db-pass"})
	want := []corev1.EnvVar{
		{Name: "APP_DB_PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "db-pass"}}},
		{Name: "APP_DB_USER", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "db.user"}}},
	}
	if diff := cmp.Diff(want, env); diff != "" || from != nil {
		t.Errorf("env (-want +got):\n%s\nenvFrom %v", diff, from)
	}
	env, from = envFromKeys("ConfigMap", "cfg", "", []string{"a"}, nil)
	wantFrom := []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	if env != nil || !cmp.Equal(from, wantFrom) {
		t.Errorf("whole ConfigMap: env %v, envFrom %v", env, from)
	}
	e, err := planSetEnv(testCloneSet(t), envChange{Containers: "web", EnvFrom: wantFrom, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	again, err := planSetEnv(e.Preview, envChange{Containers: "web", EnvFrom: wantFrom, Overwrite: true})
	if got := containersOf(t, e.Preview).Containers[0].EnvFrom; err != nil || !cmp.Equal(got, wantFrom) || again.Patch != nil {
		t.Errorf("envFrom %v, %v; second patch %s", got, err, again.Patch)
	}
}

func TestParseResourceList(t *testing.T) {
	got, err := parseResourceList("cpu=200m,memory=512Mi")
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"cpu", "cpu=", "cpu=lots"} {
		if _, err := parseResourceList(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestPlanSetResources(t *testing.T) {
	ch := resourceChange{Containers: "web", Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}
	e, err := planSetResources(testCloneSet(t), ch)
	if err != nil {
		t.Fatal(err)
	}
	ch2 := resourceChange{Containers: "*", Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
	e2, err := planSetResources(e.Preview, ch2)
	if err != nil {
		t.Fatal(err)
	}
	web := containersOf(t, e2.Preview).Containers[0].Resources
	wantWeb := corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	if !cmp.Equal(web, wantWeb) {
		t.Errorf("web resources = %v", web)
	}
	if _, err := planSetResources(testCloneSet(t), resourceChange{Containers: "db", Limits: ch.Limits}); err == nil ||
		err.Error() != "unable to find container named db" {
		t.Errorf("error = %v", err)
	}
}
