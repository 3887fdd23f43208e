package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func TestPlanWorkloadPause(t *testing.T) {
	pausedCS := testCloneSet(t, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Paused = true })
	tests := []struct {
		name      string
		kind      *workloadKind
		obj       *unstructured.Unstructured
		paused    bool
		wantPatch string
		wantErr   string
	}{
		{name: "pause cloneset", kind: kindCloneSet, obj: testCloneSet(t), paused: true,
			wantPatch: `{"spec":{"updateStrategy":{"paused":true}}}`},
		{name: "resume cloneset", kind: kindCloneSet, obj: pausedCS, wantPatch: `{"spec":{"updateStrategy":{"paused":false}}}`},
		{name: "cloneset already paused", kind: kindCloneSet, obj: pausedCS, paused: true, wantErr: "is already paused"},
		{name: "cloneset not paused", kind: kindCloneSet, obj: testCloneSet(t), wantErr: "is not paused"},
		{name: "pause deployment", kind: kindDeployment, obj: testDeployment(t), paused: true, wantPatch: `{"spec":{"paused":true}}`},
		{name: "pause advanced statefulset", kind: kindAdvancedStatefulSet, obj: testAdvancedStatefulSet(t, false), paused: true,
			wantPatch: `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":true}}}}`},
		{name: "resume advanced daemonset", kind: kindAdvancedDaemonSet, obj: testAdvancedDaemonSet(t, ptr.To(true)),
			wantPatch: `{"spec":{"updateStrategy":{"rollingUpdate":{"paused":false}}}}`},
		{name: "advanced daemonset paused unset", kind: kindAdvancedDaemonSet, obj: testAdvancedDaemonSet(t, nil), wantErr: "is not paused"},
		{name: "native statefulset", kind: kindStatefulSet, obj: testStatefulSet(t), paused: true, wantErr: "pausing is not supported"},
		{name: "native statefulset resume", kind: kindStatefulSet, obj: testStatefulSet(t), wantErr: "resuming is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := planWorkloadPause(tt.kind, tt.obj, tt.paused)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(e.Patch) != tt.wantPatch {
				t.Errorf("patch = %s, want %s", e.Patch, tt.wantPatch)
			}
			if got, _, _ := unstructured.NestedBool(e.Preview.Object, tt.kind.PausePath...); got != tt.paused {
				t.Errorf("preview paused = %v, want %v", got, tt.paused)
			}
		})
	}
}

func TestPlanRestart(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const stamp = "2026-03-01T12:00:00Z"
	t.Run("native kinds get the template annotation", func(t *testing.T) {
		for _, k := range []*workloadKind{kindDeployment, kindStatefulSet, kindDaemonSet} {
			e, err := planRestart(k, testDeployment(t), now)
			want := `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"` + stamp + `"}}}}}`
			if err != nil || string(e.Patch) != want {
				t.Errorf("%s: patch %s, %v; want %s", k.Kind, e.Patch, err, want)
			}
		}
	})
	t.Run("kruise kinds get RESTARTED_AT in every container", func(t *testing.T) {
		e, err := planRestart(kindCloneSet, testCloneSet(t), now)
		if err != nil {
			t.Fatal(err)
		}
		spec := containersOf(t, e.Preview)
		restarted := corev1.EnvVar{Name: restartedAtEnv, Value: stamp}
		want := [][]corev1.EnvVar{{restarted}, {{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, restarted}, {restarted}}
		got := [][]corev1.EnvVar{spec.InitContainers[0].Env, spec.Containers[0].Env, spec.Containers[1].Env}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("env (-want +got):\n%s", diff)
		}
		wantPrefix := `{"metadata":{"resourceVersion":"7"},"spec":{"template":{"metadata":{"annotations":{"kubectl.kruise.io/restartedAt":"` +
			stamp + `"}},"spec":{"containers":[`
		if !strings.HasPrefix(string(e.Patch), wantPrefix) {
			t.Errorf("patch = %s", e.Patch)
		}
		if at := e.Preview.GetAnnotations(); at != nil {
			t.Errorf("object annotations changed: %v", at)
		}
		if at, _, _ := unstructured.NestedString(e.Preview.Object, "spec", "template", "metadata", "annotations", kruiseRestartedAtAnnotation); at != stamp {
			t.Errorf("preview template annotation = %q", at)
		}
	})
	t.Run("a second restart replaces the variable", func(t *testing.T) {
		first, _ := planRestart(kindAdvancedStatefulSet, testAdvancedStatefulSet(t, false), now)
		second, err := planRestart(kindAdvancedStatefulSet, first.Preview, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		env := containersOf(t, second.Preview).Containers[1].Env
		if len(env) != 1 || env[0].Value != "2026-03-01T13:00:00Z" {
			t.Errorf("env = %v", env)
		}
	})
	t.Run("paused deployment", func(t *testing.T) {
		_, err := planRestart(kindDeployment, testDeployment(t, func(d *appsv1.Deployment) { d.Spec.Paused = true }), now)
		if err == nil || err.Error() != "can't restart paused deployment (run rollout resume first)" {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("rollout", func(t *testing.T) {
		if _, err := planRestart(kindRollout, testDeployment(t), now); err == nil || err.Error() != "restarting is not supported" {
			t.Errorf("error = %v", err)
		}
	})
}
