package control

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	origAnn   = rolloutsv1beta1.OriginalDeploymentStrategyAnnotation
	maxReady  = int64(rolloutsv1beta1.MaxReadySeconds)
	maxProg   = int64(rolloutsv1beta1.MaxProgressSeconds)
	badJSON   = `{"maxSurge":`
	otherInfo = `{"apiVersion":"rollouts.kruise.io/v1beta1","kind":"BatchRelease","name":"other","uid":"other-uid"}`
)

func is(n int32) *intstr.IntOrString  { return ptr.To(intstr.FromInt32(n)) }
func ps(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
func iv(n int32) intstr.IntOrString   { return intstr.FromInt32(n) }
func sv(s string) intstr.IntOrString  { return intstr.FromString(s) }

// ann builds a string map from key/value pairs.
func ann(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// patchOf builds the expected merge patch from path/value pairs ("spec.paused", false).
func patchOf(kv ...any) map[string]any {
	p := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		path := kv[i].(string)
		if strings.HasPrefix(path, "metadata.") {
			// Annotation and label keys contain dots: only the first two segments split.
			parts := strings.SplitN(path, ".", 3)
			setNested(p, kv[i+1], parts...)
			continue
		}
		setNested(p, kv[i+1], strings.Split(path, ".")...)
	}
	return p
}

func bgDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "web-uid", Generation: 3},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: is(3), MaxUnavailable: is(1)}},
			MinReadySeconds:         5,
			ProgressDeadlineSeconds: ptr.To[int32](300),
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3},
	}
}

// bgInitialized is bgDeployment as Initialize leaves it, for this release.
func bgInitialized() *appsv1.Deployment {
	d := bgDeployment()
	d.Annotations = ann(stsAnn, ControlInfo(testOwner),
		origAnn, `{"maxUnavailable":1,"maxSurge":3,"minReadySeconds":5,"progressDeadlineSeconds":300}`)
	d.Labels = ann(rolloutsv1beta1.DeploymentStableRevisionLabel, "abc")
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: is(1), MaxUnavailable: is(0)}
	d.Spec.MinReadySeconds = rolloutsv1beta1.MaxReadySeconds
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](rolloutsv1beta1.MaxProgressSeconds)
	d.Spec.Paused = true
	return d
}

func TestDeploymentBlueGreenInitPatch(t *testing.T) {
	frozen := map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": iv(1), "maxUnavailable": iv(0)}}
	initPatch := func(original string) map[string]any {
		p := patchOf("metadata.annotations."+stsAnn, ControlInfo(testOwner), "spec.strategy", frozen,
			"spec.minReadySeconds", maxReady, "spec.progressDeadlineSeconds", maxProg)
		if original != "" {
			setNested(p, original, originalStrategyPath...)
		}
		return p
	}
	tests := []struct {
		name    string
		mutate  func(*appsv1.Deployment)
		want    map[string]any
		wantErr string
	}{
		{"saves the settings", nil,
			initPatch(`{"maxUnavailable":1,"maxSurge":3,"minReadySeconds":5,"progressDeadlineSeconds":300}`), ""},
		{"API defaults for unset settings", func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			d.Spec.MinReadySeconds, d.Spec.ProgressDeadlineSeconds = 0, nil
		}, initPatch(`{"maxUnavailable":"25%","maxSurge":"25%","progressDeadlineSeconds":600}`), ""},
		{"an inflated minReadySeconds is not the user's", func(d *appsv1.Deployment) {
			d.Spec.MinReadySeconds = rolloutsv1beta1.MaxReadySeconds
		}, initPatch(`{"maxUnavailable":1,"maxSurge":3,"progressDeadlineSeconds":300}`), ""},
		{"settings a former release saved are kept", func(d *appsv1.Deployment) {
			d.Annotations = ann(origAnn, `{"maxSurge":2}`, stsAnn, otherInfo)
		}, initPatch(""), ""},
		{"malformed saved settings", func(d *appsv1.Deployment) { d.Annotations = ann(origAnn, badJSON) }, nil, origAnn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := bgDeployment()
			if tt.mutate != nil {
				tt.mutate(d)
			}
			got, err := deploymentBlueGreenInitPatch(d, testOwner)
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("error = %v, want one naming %q", err, want)
	}
}

func TestDeploymentBlueGreenUpgradePatch(t *testing.T) {
	surge := func(n int32) any { return iv(n) }
	tests := []struct {
		name    string
		mutate  func(*appsv1.Deployment)
		desired int32
		want    map[string]any
		wantErr string
		idle    bool
	}{
		{"first batch resumes", nil, 1, patchOf("spec.paused", false), "", true},
		{"raises the surge", nil, 3, patchOf("spec.strategy.rollingUpdate.maxSurge", surge(3), "spec.paused", false), "", false},
		{"never lowers the surge", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Paused = is(3), false
		}, 2, map[string]any{}, "", false},
		{"an idle new ReplicaSet (a retry after an abort) surges the batch only", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge = is(3)
		}, 2, patchOf("spec.strategy.rollingUpdate.maxSurge", surge(2), "spec.paused", false), "", true},
		{"an idle new ReplicaSet still raises the surge", nil, 3,
			patchOf("spec.strategy.rollingUpdate.maxSurge", surge(3), "spec.paused", false), "", true},
		{"a percentage surge counts rounded up", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Paused = ps("30%"), false
		}, 2, map[string]any{}, "", false},
		{"maxUnavailable back to 0", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable, d.Spec.Paused = ps("0%"), false
		}, 1, patchOf("spec.strategy.rollingUpdate.maxUnavailable", iv(0)), "", false},
		{"not initialized", func(d *appsv1.Deployment) { d.Annotations = nil }, 1, nil, stsAnn, false},
		{"another release", func(d *appsv1.Deployment) { d.Annotations[stsAnn] = otherInfo }, 1, nil, stsAnn, false},
		{"minReadySeconds restored", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 0 }, 1, nil, "spec.minReadySeconds", false},
		{"progressDeadlineSeconds restored", func(d *appsv1.Deployment) {
			d.Spec.ProgressDeadlineSeconds = nil
		}, 1, nil, "spec.progressDeadlineSeconds", false},
		{"Recreate", func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		}, 1, nil, "spec.strategy.type", false},
		{"no rollingUpdate", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate = nil }, 1, nil, "spec.strategy.rollingUpdate", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := bgInitialized()
			if tt.mutate != nil {
				tt.mutate(d)
			}
			got, err := deploymentBlueGreenUpgradePatch(d, testOwner, tt.desired, tt.idle)
			checkErr(t, err, tt.wantErr)
			if tt.wantErr != "" && !errors.Is(err, ErrNotBlueGreenReady) {
				t.Errorf("error %v does not wrap ErrNotBlueGreenReady", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeploymentBlueGreenFinalizePatch(t *testing.T) {
	restored := func(surge, unavailable intstr.IntOrString, minReady int64, deadline any) []any {
		return []any{
			"spec.strategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{
				"maxSurge": surge, "maxUnavailable": unavailable}},
			"spec.minReadySeconds", minReady, "spec.progressDeadlineSeconds", deadline,
			"metadata.annotations." + origAnn, nil, "metadata.annotations." + stsAnn, nil,
			"metadata.labels." + rolloutsv1beta1.DeploymentStableRevisionLabel, nil,
		}
	}
	full := restored(iv(3), iv(1), 5, int64(300))
	cancel := rolloutsv1beta1.ReleasePlan{BatchPartition: ptr.To[int32](1)}
	tests := []struct {
		name    string
		mutate  func(*appsv1.Deployment)
		plan    rolloutsv1beta1.ReleasePlan
		want    map[string]any
		wantErr string
	}{
		{"restores and resumes", nil, rolloutsv1beta1.ReleasePlan{}, patchOf(append(full, "spec.paused", false)...), ""},
		{"a release cancelled at a batch stays paused", func(d *appsv1.Deployment) { d.Spec.Paused = false },
			cancel, patchOf(append(full, "spec.paused", true)...), ""},
		{"unset saved fields get the API defaults", func(d *appsv1.Deployment) {
			d.Annotations[origAnn] = `{}`
		}, rolloutsv1beta1.ReleasePlan{},
			patchOf(append(restored(sv("25%"), sv("25%"), 0, nil), "spec.paused", false)...), ""},
		{"already restored: only resumed", func(d *appsv1.Deployment) {
			d.Annotations, d.Labels = nil, nil
		}, rolloutsv1beta1.ReleasePlan{}, patchOf("spec.paused", false), ""},
		{"already released", func(d *appsv1.Deployment) {
			d.Annotations, d.Labels, d.Spec.Paused = nil, nil, false
		}, rolloutsv1beta1.ReleasePlan{}, map[string]any{}, ""},
		{"another release's Deployment is left alone", func(d *appsv1.Deployment) { d.Annotations[stsAnn] = otherInfo },
			rolloutsv1beta1.ReleasePlan{}, nil, ""},
		{"malformed saved settings", func(d *appsv1.Deployment) { d.Annotations[origAnn] = badJSON },
			rolloutsv1beta1.ReleasePlan{}, nil, origAnn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := bgInitialized()
			if tt.mutate != nil {
				tt.mutate(d)
			}
			got, err := deploymentBlueGreenFinalizePatch(d, Target{Owner: testOwner, Plan: tt.plan})
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStableReplicaSet(t *testing.T) {
	d := bgDeployment()
	d.Spec.Template = corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "v2"}}}}
	rs := func(hash, image string, replicas int32) appsv1.ReplicaSet {
		return appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Labels: ann(rolloutsv1beta1.PodTemplateHashLabelKey, hash),
				OwnerReferences: []metav1.OwnerReference{{UID: d.UID, Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}},
		}
	}
	tests := []struct {
		name  string
		label string
		rss   []appsv1.ReplicaSet
		want  string
	}{
		{"the old ReplicaSet with most pods", "", []appsv1.ReplicaSet{rs("a", "v0", 1), rs("b", "v1", 4), rs("c", "v2", 0)}, "web-b"},
		{"the webhook's label wins", "a", []appsv1.ReplicaSet{rs("a", "v0", 1), rs("b", "v1", 4)}, "web-a"},
		{"before the template changes: the current one", "", []appsv1.ReplicaSet{rs("c", "v2", 4)}, "web-c"},
		{"none", "", nil, ""},
		{"a label naming no ReplicaSet", "zzz", []appsv1.ReplicaSet{rs("b", "v1", 4)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d.Labels = ann(rolloutsv1beta1.DeploymentStableRevisionLabel, tt.label)
			if tt.label == "" {
				d.Labels = nil
			}
			got := ""
			if rs := stableReplicaSet(d, tt.rss); rs != nil {
				got = rs.Name
			}
			if got != tt.want {
				t.Errorf("stable ReplicaSet = %q, want %q", got, tt.want)
			}
		})
	}
}

func bgCloneSet() *kruiseappsv1alpha1.CloneSet {
	cs := testCloneSet(4, ps("100%"))
	cs.Spec.UpdateStrategy.MaxUnavailable = ps("10%")
	cs.Spec.MinReadySeconds = 7
	return cs
}

func bgCloneSetInitialized() *kruiseappsv1alpha1.CloneSet {
	cs := bgCloneSet()
	cs.Annotations = ann(stsAnn, ControlInfo(testOwner), origAnn, `{"maxUnavailable":"10%","maxSurge":"0%","minReadySeconds":7}`)
	us := &cs.Spec.UpdateStrategy
	us.Paused, us.MaxSurge, us.MaxUnavailable = false, is(1), is(0)
	cs.Spec.MinReadySeconds = rolloutsv1beta1.MaxReadySeconds
	return cs
}

func TestCloneSetBlueGreenInitPatch(t *testing.T) {
	strategy := map[string]any{"paused": false, "maxSurge": iv(1), "maxUnavailable": iv(0)}
	want := func(original string) map[string]any {
		p := patchOf("metadata.annotations."+stsAnn, ControlInfo(testOwner), "spec.updateStrategy", strategy,
			"spec.minReadySeconds", maxReady)
		if original != "" {
			setNested(p, original, originalStrategyPath...)
		}
		return p
	}
	tests := []struct {
		name    string
		mutate  func(*kruiseappsv1alpha1.CloneSet)
		want    map[string]any
		wantErr string
	}{
		{"saves the settings with the CloneSet defaults", nil, want(`{"maxUnavailable":"10%","maxSurge":"0%","minReadySeconds":7}`), ""},
		{"unset maxUnavailable is 20%", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.MaxUnavailable, cs.Spec.UpdateStrategy.MaxSurge = nil, is(2)
		}, want(`{"maxUnavailable":"20%","maxSurge":2,"minReadySeconds":7}`), ""},
		{"saved settings are kept", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Annotations = ann(origAnn, `{}`) }, want(""), ""},
		{"malformed saved settings", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Annotations = ann(origAnn, badJSON) }, nil, origAnn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := bgCloneSet()
			if tt.mutate != nil {
				tt.mutate(cs)
			}
			got, err := cloneSetBlueGreenInitPatch(cs, testOwner)
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCloneSetBlueGreenUpgradePatch(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*kruiseappsv1alpha1.CloneSet)
		desired int32
		want    map[string]any
		wantErr string
	}{
		{"first batch clears the partition", nil, 1, patchOf("spec.updateStrategy.partition", nil), ""},
		{"raises the surge", nil, 3, patchOf("spec.updateStrategy.partition", nil, "spec.updateStrategy.maxSurge", iv(3)), ""},
		{"never lowers the surge", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Partition, cs.Spec.UpdateStrategy.MaxSurge = nil, is(3)
		}, 2, map[string]any{}, ""},
		{"ReCreate named", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.RecreateCloneSetUpdateStrategyType
		}, 1, patchOf("spec.updateStrategy.partition", nil), ""},
		{"in-place update refused", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		}, 1, nil, "spec.updateStrategy.type"},
		{"minReadySeconds restored", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.MinReadySeconds = 0 }, 1, nil, "spec.minReadySeconds"},
		{"not initialized", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Annotations = nil }, 1, nil, stsAnn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := bgCloneSetInitialized()
			if tt.mutate != nil {
				tt.mutate(cs)
			}
			got, err := cloneSetBlueGreenUpgradePatch(cs, testOwner, tt.desired)
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCloneSetBlueGreenFinalizePatch(t *testing.T) {
	restored := []any{
		"spec.updateStrategy.maxSurge", sv("0%"), "spec.updateStrategy.maxUnavailable", sv("10%"),
		"spec.minReadySeconds", int64(7), "metadata.annotations." + origAnn, nil, "metadata.annotations." + stsAnn, nil,
	}
	cancel := rolloutsv1beta1.ReleasePlan{BatchPartition: ptr.To[int32](0)}
	tests := []struct {
		name    string
		mutate  func(*kruiseappsv1alpha1.CloneSet)
		plan    rolloutsv1beta1.ReleasePlan
		want    map[string]any
		wantErr string
	}{
		{"restores after the batches", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = nil },
			rolloutsv1beta1.ReleasePlan{}, patchOf(restored...), ""},
		{"a partition left by the webhook is cleared", nil, rolloutsv1beta1.ReleasePlan{},
			patchOf(append(restored, "spec.updateStrategy.partition", nil)...), ""},
		{"a release cancelled at a batch is paused", nil, cancel,
			patchOf(append(restored, "spec.updateStrategy.paused", true)...), ""},
		{"unset saved fields are removed", func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.Annotations[origAnn], cs.Spec.UpdateStrategy.Partition = `{}`, nil
		}, rolloutsv1beta1.ReleasePlan{}, patchOf(
			"spec.updateStrategy.maxSurge", nil, "spec.updateStrategy.maxUnavailable", nil, "spec.minReadySeconds", int64(0),
			"metadata.annotations."+origAnn, nil, "metadata.annotations."+stsAnn, nil), ""},
		{"another release's CloneSet is left alone", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Annotations[stsAnn] = otherInfo },
			rolloutsv1beta1.ReleasePlan{}, nil, ""},
		{"malformed saved settings", func(cs *kruiseappsv1alpha1.CloneSet) { cs.Annotations[origAnn] = badJSON },
			rolloutsv1beta1.ReleasePlan{}, nil, origAnn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := bgCloneSetInitialized()
			if tt.mutate != nil {
				tt.mutate(cs)
			}
			got, err := cloneSetBlueGreenFinalizePatch(cs, Target{Owner: testOwner, Plan: tt.plan})
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHPATargetPatch(t *testing.T) {
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	hpa := func(apiVersion, kind, name any) map[string]any {
		return map[string]any{"spec": map[string]any{"scaleTargetRef": map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name}}}
	}
	rename := func(name string) map[string]any { return patchOf("spec.scaleTargetRef.name", name) }
	tests := []struct {
		name     string
		hpa      map[string]any
		disabled bool
		want     map[string]any
	}{
		{"disables", hpa("apps/v1", "Deployment", "web"), true, rename("web-DisableByRollout")},
		{"already disabled", hpa("apps/v1", "Deployment", "web-DisableByRollout"), true, nil},
		{"restores", hpa("apps/v1", "Deployment", "web-DisableByRollout"), false, rename("web")},
		{"already restored", hpa("apps/v1", "Deployment", "web"), false, nil},
		{"any version of the group", hpa("apps/v1beta2", "Deployment", "web"), true, rename("web-DisableByRollout")},
		{"another workload", hpa("apps/v1", "Deployment", "api"), true, nil},
		{"a name that only starts alike", hpa("apps/v1", "Deployment", "web-DisableByRollout-x"), false, nil},
		{"another kind", hpa("apps/v1", "StatefulSet", "web"), true, nil},
		{"another group", hpa("apps.kruise.io/v1alpha1", "Deployment", "web"), true, nil},
		{"malformed apiVersion", hpa("a/b/c", "Deployment", "web"), true, nil},
		{"wrong types", hpa(1, true, 2.5), true, nil},
		{"no scaleTargetRef", map[string]any{"spec": "x"}, true, nil},
		{"empty", nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, hpaTargetPatch(tt.hpa, deploy, "web", tt.disabled)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRaisedSurge(t *testing.T) {
	tests := []struct {
		name     string
		current  *intstr.IntOrString
		replicas int32
		desired  int32
		want     intstr.IntOrString
		raise    bool
	}{
		{"unset", nil, 4, 1, iv(1), true},
		{"higher", is(1), 4, 3, iv(3), true},
		{"equal", is(3), 4, 3, intstr.IntOrString{}, false},
		{"percent rounds up", ps("30%"), 4, 2, intstr.IntOrString{}, false},
		{"percent below", ps("25%"), 4, 2, iv(2), true},
		{"unreadable counts as none", ps("lots"), 4, 1, iv(1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, raise := raisedSurge(tt.current, tt.replicas, tt.desired)
			if got != tt.want || raise != tt.raise {
				t.Errorf("raisedSurge = %v, %v; want %v, %v", got, raise, tt.want, tt.raise)
			}
		})
	}
}

func TestRegistryPicksDeploymentBlueGreen(t *testing.T) {
	r := NewRegistry()
	if err := RegisterNative(r, false); err != nil {
		t.Fatal(err)
	}
	ctl, err := r.For(nil, Target{
		Ref:  rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		Plan: rolloutsv1beta1.ReleasePlan{RollingStyle: rolloutsv1beta1.BlueGreenRollingStyle},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ctl.(*deploymentBlueGreen); !ok {
		t.Errorf("control = %T, want the blue-green Deployment control", ctl)
	}
}

// bgFakeClient holds a CloneSet and an autoscaling/v2 HPA targeting it.
func bgFakeClient(t *testing.T, cs *kruiseappsv1alpha1.CloneSet) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kruiseappsv1alpha1.AddToScheme, autoscalingv2.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
			MaxReplicas:    10,
		},
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(cs, hpa).Build()
}

func hpaTarget(t *testing.T, c client.Client) string {
	t.Helper()
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "web"}, hpa); err != nil {
		t.Fatal(err)
	}
	return hpa.Spec.ScaleTargetRef.Name
}

// TestCloneSetBlueGreenRelease walks a CloneSet through a blue-green release on a fake client and checks its
// spec and its HPA after each step.
func TestCloneSetBlueGreenRelease(t *testing.T) {
	ctx := context.Background()
	c := bgFakeClient(t, bgCloneSet())
	plan := rolloutsv1beta1.ReleasePlan{FinalizingPolicy: rolloutsv1beta1.WaitResumeFinalizingPolicyType}
	ctl := NewCloneSetBlueGreen(c, cloneSetTarget(plan))

	if err := ctl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	assertCloneSetSettings(t, c, "after Initialize", iv(1), iv(0), rolloutsv1beta1.MaxReadySeconds, true)
	assertHPATarget(t, c, "web-DisableByRollout")

	for _, step := range []struct{ desired, surge int32 }{{2, 2}, {1, 2}, {4, 4}} {
		if err := ctl.UpgradeBatch(ctx, Batch{DesiredUpdated: step.desired}); err != nil {
			t.Fatal(err)
		}
		us := getCloneSet(t, c).Spec.UpdateStrategy
		if us.Partition != nil || *us.MaxSurge != iv(step.surge) {
			t.Fatalf("after UpgradeBatch(%d): partition %v maxSurge %v, want none and %d", step.desired, us.Partition, us.MaxSurge, step.surge)
		}
	}
	if err := ctl.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	assertCloneSetSettings(t, c, "after a repeated Initialize", iv(4), iv(0), rolloutsv1beta1.MaxReadySeconds, true)

	if done, err := ctl.Finalize(ctx); err != nil || done {
		t.Fatalf("first Finalize = %v, %v; want not done yet", done, err)
	}
	assertCloneSetSettings(t, c, "after Finalize", sv("0%"), sv("10%"), 7, false)
	assertHPATarget(t, c, "web-DisableByRollout") // not before the CloneSet has rolled out

	cs := getCloneSet(t, c)
	cs.Status.UpdatedReplicas, cs.Status.UpdatedReadyReplicas = 4, 4
	if err := c.Update(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if done, err := ctl.Finalize(ctx); err != nil || !done {
		t.Fatalf("Finalize after the roll-out = %v, %v; want done", done, err)
	}
	assertHPATarget(t, c, "web")
}

// assertCloneSetSettings checks the settings a blue-green release changes, and whether it is marked.
func assertCloneSetSettings(t *testing.T, c client.Client, when string, surge, unavailable intstr.IntOrString, minReady int32, marked bool) {
	t.Helper()
	cs := getCloneSet(t, c)
	us := cs.Spec.UpdateStrategy
	got := []any{ptr.Deref(us.MaxSurge, sv("unset")), ptr.Deref(us.MaxUnavailable, sv("unset")), cs.Spec.MinReadySeconds,
		releaseMarked(cs.Annotations) && ControlledBy(cs.Annotations, testOwner), us.Paused}
	want := []any{surge, unavailable, minReady, marked, false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s: maxSurge, maxUnavailable, minReadySeconds, marked, paused (-want +got):\n%s", when, diff)
	}
}

func assertHPATarget(t *testing.T, c client.Client, want string) {
	t.Helper()
	if got := hpaTarget(t, c); got != want {
		t.Fatalf("HPA scaleTargetRef.name = %q, want %q", got, want)
	}
}

func TestCloneSetBlueGreenGone(t *testing.T) {
	ctx := context.Background()
	cs := bgCloneSet()
	cs.Name = "other"
	c := bgFakeClient(t, cs)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "web"}, hpa); err != nil {
		t.Fatal(err)
	}
	mustPatchFake(t, c, hpa, `{"spec":{"scaleTargetRef":{"name":"web-DisableByRollout"}}}`)
	ctl := NewCloneSetBlueGreen(c, cloneSetTarget(rolloutsv1beta1.ReleasePlan{}))
	if _, err := ctl.Read(ctx); !errors.Is(err, ErrWorkloadGone) {
		t.Errorf("Read error = %v, want ErrWorkloadGone", err)
	}
	if done, err := ctl.Finalize(ctx); err != nil || !done {
		t.Errorf("Finalize = %v, %v; want done", done, err)
	}
	if got := hpaTarget(t, c); got != "web" {
		t.Errorf("HPA target after finalising a gone workload = %q, want web", got)
	}
}

func mustPatchFake(t *testing.T, c client.Client, obj client.Object, patch string) {
	t.Helper()
	if err := c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func TestCloneSetBlueGreenUpgradeRefused(t *testing.T) {
	cs := bgCloneSetInitialized()
	cs.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
	c := bgFakeClient(t, cs)
	err := NewCloneSetBlueGreen(c, cloneSetTarget(rolloutsv1beta1.ReleasePlan{})).UpgradeBatch(context.Background(), Batch{DesiredUpdated: 2})
	if !errors.Is(err, ErrNotBlueGreenReady) || !strings.Contains(err.Error(), "spec.updateStrategy.type") {
		t.Fatalf("UpgradeBatch error = %v, want one naming spec.updateStrategy.type", err)
	}
	if got := getCloneSet(t, c).Spec.UpdateStrategy; got.Partition == nil || *got.MaxSurge != iv(1) {
		t.Errorf("a refused batch changed the CloneSet: %+v", got)
	}
}
