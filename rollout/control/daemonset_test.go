package control

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/revision"
)

const (
	dsControlAnn  = rolloutsv1beta1.DaemonSetAdvancedControlAnnotation
	dsRevisionAnn = rolloutsv1beta1.DaemonSetRevisionAnnotation
	dsOriginalAnn = rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation
)

func testDaemonSet(strategy appsv1.DaemonSetUpdateStrategyType, desired int32, annotations map[string]string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds-uid", Generation: 3, Annotations: annotations},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: strategy},
		},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: desired, ObservedGeneration: 3},
	}
}

func annPatch(kv ...any) map[string]any {
	ann := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		ann[kv[i].(string)] = kv[i+1]
	}
	return map[string]any{"metadata": map[string]any{"annotations": ann}}
}

func withStrategy(patch map[string]any, strategy string) map[string]any {
	patch["spec"] = map[string]any{"updateStrategy": map[string]any{"type": strategy}}
	return patch
}

func TestDaemonSetInitPatch(t *testing.T) {
	info := ControlInfo(testOwner)
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		want map[string]any
	}{
		{"rolling update", testDaemonSet(appsv1.RollingUpdateDaemonSetStrategyType, 2, nil),
			withStrategy(annPatch(stsAnn, info, dsOriginalAnn, "RollingUpdate"), "OnDelete")},
		{"empty type saved as the default", testDaemonSet("", 2, nil),
			withStrategy(annPatch(stsAnn, info, dsOriginalAnn, "RollingUpdate"), "OnDelete")},
		{"user's OnDelete is remembered as such", testDaemonSet(appsv1.OnDeleteDaemonSetStrategyType, 2, nil),
			annPatch(stsAnn, info, dsOriginalAnn, "OnDelete")},
		{"saved type is never overwritten", testDaemonSet(appsv1.OnDeleteDaemonSetStrategyType, 2,
			map[string]string{dsOriginalAnn: "RollingUpdate"}), annPatch(stsAnn, info)},
		{"already initialised", testDaemonSet(appsv1.OnDeleteDaemonSetStrategyType, 2,
			map[string]string{dsOriginalAnn: "RollingUpdate", stsAnn: info}), map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, daemonSetInitPatch(tt.ds, Target{Owner: testOwner})); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDaemonSetBatchPatch(t *testing.T) {
	revs := `{"canary-revision":"new","stable-revision":"old"}`
	tests := []struct {
		name    string
		ds      *appsv1.DaemonSet
		desired int32
		update  string
		want    map[string]any
	}{
		{"first batch", testDaemonSet("OnDelete", 4, nil), 1, "new",
			annPatch(dsControlAnn, `{"partition":"3","batch-revision":"new"}`, dsRevisionAnn, revs)},
		{"next batch", testDaemonSet("OnDelete", 4, map[string]string{
			dsControlAnn: `{"partition":"3","batch-revision":"new"}`, dsRevisionAnn: revs}), 3, "new",
			annPatch(dsControlAnn, `{"partition":"1","batch-revision":"new"}`)},
		{"never backwards within a revision", testDaemonSet("OnDelete", 4, map[string]string{
			dsControlAnn: `{"partition":"1","batch-revision":"new"}`, dsRevisionAnn: revs}), 2, "new", map[string]any{}},
		{"a node joined: the partition does not grow", testDaemonSet("OnDelete", 5, map[string]string{
			dsControlAnn: `{"partition":"3","batch-revision":"new"}`, dsRevisionAnn: revs}), 1, "new", map[string]any{}},
		{"a new revision starts over", testDaemonSet("OnDelete", 4, map[string]string{
			dsControlAnn: `{"partition":"0","batch-revision":"older"}`}), 1, "new",
			annPatch(dsControlAnn, `{"partition":"3","batch-revision":"new"}`, dsRevisionAnn, revs)},
		{"garbage annotation is rewritten", testDaemonSet("OnDelete", 4, map[string]string{
			dsControlAnn: `{"partition":"x"`, dsRevisionAnn: revs}), 2, "new",
			annPatch(dsControlAnn, `{"partition":"2","batch-revision":"new"}`)},
		{"desired beyond the nodes", testDaemonSet("OnDelete", 2, nil), 7, "new",
			annPatch(dsControlAnn, `{"partition":"0","batch-revision":"new"}`, dsRevisionAnn, revs)},
		{"no update revision yet", testDaemonSet("OnDelete", 2, nil), 1, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := daemonSetBatchPatch(tt.ds, "old", tt.update, tt.desired)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDaemonSetFinalizePatch(t *testing.T) {
	inRelease := map[string]string{
		stsAnn: ControlInfo(testOwner), dsControlAnn: `{"partition":"1","batch-revision":"new"}`,
		dsRevisionAnn: `{}`, dsOriginalAnn: "RollingUpdate",
	}
	dropped := func() map[string]any { return annPatch(stsAnn, nil, dsControlAnn, nil, dsRevisionAnn, nil) }
	restored := func(strategy string) map[string]any {
		p := dropped()
		p["metadata"].(map[string]any)["annotations"].(map[string]any)[dsOriginalAnn] = nil
		if strategy != "" {
			p = withStrategy(p, strategy)
		}
		return p
	}
	cancelled := rolloutsv1beta1.ReleasePlan{BatchPartition: ptr.To[int32](0)}
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		t    Target
		want map[string]any
	}{
		{"complete", testDaemonSet("OnDelete", 2, inRelease), Target{Owner: testOwner}, restored("RollingUpdate")},
		{"original OnDelete", testDaemonSet("OnDelete", 2, map[string]string{dsOriginalAnn: "OnDelete"}),
			Target{Owner: testOwner}, annPatch(dsOriginalAnn, nil)},
		{"cancelled at a batch and kept frozen", testDaemonSet("OnDelete", 2, inRelease),
			Target{Owner: testOwner, Plan: cancelled}, dropped()},
		{"done already", testDaemonSet("RollingUpdate", 2, nil), Target{Owner: testOwner}, map[string]any{}},
		{"another release's", testDaemonSet("OnDelete", 2, map[string]string{stsAnn: `{"name":"x","uid":"x"}`}),
			Target{Owner: testOwner}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, daemonSetFinalizePatch(tt.ds, tt.t)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func dsPod(name, revision string, ready bool) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "agent", "controller-revision-hash": revision}},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

func TestDaemonSetInfo(t *testing.T) {
	pods := []corev1.Pod{dsPod("a", "old", true), dsPod("b", "new", true), dsPod("c", "new", false), dsPod("d", "older", true)}
	ds := testDaemonSet("OnDelete", 4, map[string]string{stsAnn: ControlInfo(testOwner)})
	got := daemonSetInfo(dsObservation{ds: ds, update: "new", current: true, pods: pods}, Target{Owner: testOwner})
	if got.UpdatedPods.String() != "app=agent,controller-revision-hash=new" {
		t.Errorf("UpdatedPods = %q", got.UpdatedPods)
	}
	got.Object, got.UpdatedPods = nil, nil
	want := WorkloadInfo{Replicas: 4, UpdatedReplicas: 2, UpdatedReadyReplicas: 1, StableRevision: "old", UpdateRevision: "new",
		RevisionLabelKey: "controller-revision-hash", Consistent: true, Controlled: true}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
}

func TestDaemonSetInfoConsistent(t *testing.T) {
	tests := []struct {
		name     string
		observed int64
		current  bool
		want     bool
	}{
		{"generation observed, revision of the template cached", 3, true, true},
		{"generation not observed", 2, true, false},
		// The status observed the change before the ControllerRevision informer delivered its revision.
		{"newest cached revision records an older template", 3, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := testDaemonSet("OnDelete", 1, nil)
			ds.Status.ObservedGeneration = tt.observed
			if got := daemonSetInfo(dsObservation{ds: ds, update: "v1", current: tt.current}, Target{}).Consistent; got != tt.want {
				t.Errorf("Consistent = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDaemonSetStableRevision(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		pods        []corev1.Pod
		want        string
	}{
		{"most common old revision", nil,
			[]corev1.Pod{dsPod("a", "v1", true), dsPod("b", "v2", true), dsPod("c", "v2", true), dsPod("d", "v3", true)}, "v2"},
		{"ties go to the first name", nil, []corev1.Pod{dsPod("a", "v2", true), dsPod("b", "v1", true)}, "v1"},
		{"recorded stable revision of this update wins", map[string]string{dsRevisionAnn: `{"canary-revision":"v3","stable-revision":"v1"}`},
			[]corev1.Pod{dsPod("a", "v3", true)}, "v1"},
		{"a record for another update is ignored", map[string]string{dsRevisionAnn: `{"canary-revision":"v9","stable-revision":"v1"}`},
			[]corev1.Pod{dsPod("a", "v2", true)}, "v2"},
		{"all updated, nothing recorded", nil, []corev1.Pod{dsPod("a", "v3", true)}, "v3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := testDaemonSet("OnDelete", 4, tt.annotations)
			if got := daemonSetStableRevision(ds, tt.pods, "v3"); got != tt.want {
				t.Errorf("stable revision = %q, want %q", got, tt.want)
			}
		})
	}
}

// dsTemplate is the pod template of image.
func dsTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: image}}},
	}
}

func TestDaemonSetUpdateRevision(t *testing.T) {
	ds := testDaemonSet("OnDelete", 2, nil)
	ds.Spec.Template = dsTemplate("agent:v2")
	own := []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: ptr.To(true)}}
	other := []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", UID: "old-uid", Controller: ptr.To(true)}}
	cr := func(name, hash string, rev int64, refs []metav1.OwnerReference, image string) appsv1.ControllerRevision {
		c := appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}, Revision: rev}
		if hash != "" {
			c.Labels = map[string]string{"controller-revision-hash": hash}
		}
		tmpl := dsTemplate(image)
		data, err := revision.TemplatePatch(&tmpl)
		if err != nil {
			t.Fatal(err)
		}
		c.Data.Raw = data
		return c
	}
	tests := []struct {
		name        string
		crs         []appsv1.ControllerRevision
		want        string
		wantCurrent bool
	}{
		{"newest by revision", []appsv1.ControllerRevision{cr("agent-aaa", "aaa", 2, own, "agent:v2"), cr("agent-bbb", "bbb", 1, own, "agent:v1")}, "aaa", true},
		{"newest cached revision is of an older template", []appsv1.ControllerRevision{cr("agent-bbb", "bbb", 1, own, "agent:v1")}, "bbb", false},
		{"hash from the history helper's label", []appsv1.ControllerRevision{func() appsv1.ControllerRevision {
			c := cr("agent-ddd", "", 1, own, "agent:v2")
			c.Labels = map[string]string{"controller.kubernetes.io/hash": "ddd"}
			return c
		}()}, "ddd", true},
		{"hash from the name when unlabelled", []appsv1.ControllerRevision{cr("agent-ccc", "", 1, own, "agent:v2")}, "ccc", true},
		{"others' revisions ignored", []appsv1.ControllerRevision{cr("agent-x", "x", 9, other, "agent:v2"), cr("agent-y", "y", 1, own, "agent:v2")}, "y", true},
		{"unreadable data is not the template", []appsv1.ControllerRevision{func() appsv1.ControllerRevision {
			c := cr("agent-eee", "eee", 1, own, "agent:v2")
			c.Data.Raw = []byte("{")
			return c
		}()}, "eee", false},
		{"none", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, current := DaemonSetUpdateRevision(ds, tt.crs)
			if got != tt.want || current != tt.wantCurrent {
				t.Errorf("update revision = %q, current %v; want %q, %v", got, current, tt.want, tt.wantCurrent)
			}
		})
	}
}

func TestParseDaemonSetAdvancedControl(t *testing.T) {
	tests := []struct {
		raw     string
		want    int32
		wantErr bool
	}{
		{`{"partition":"3","batch-revision":"abc"}`, 3, false},
		{`{"partition":"-1","batch-revision":"abc"}`, 0, true},
		{`{"partition":"99999999999","batch-revision":"abc"}`, 0, true},
		{`{"partition":3}`, 0, true},
		{``, 0, true},
	}
	for _, tt := range tests {
		_, got, err := ParseDaemonSetAdvancedControl(tt.raw)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, error %v", tt.raw, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestDaemonSetResumed(t *testing.T) {
	rolled := testDaemonSet("RollingUpdate", 2, nil)
	rolled.Status.UpdatedNumberScheduled, rolled.Status.NumberAvailable = 2, 2
	halfway := rolled.DeepCopy()
	halfway.Status.UpdatedNumberScheduled = 1
	unobserved := rolled.DeepCopy()
	unobserved.Generation = 4
	onDelete := testDaemonSet("OnDelete", 2, nil)
	for name, tt := range map[string]struct {
		ds   *appsv1.DaemonSet
		want bool
	}{
		"rolled out": {rolled, true}, "half way": {halfway, false}, "not observed": {unobserved, false}, "OnDelete never rolls": {onDelete, true},
	} {
		if got := daemonSetResumed(tt.ds); got != tt.want {
			t.Errorf("%s: daemonSetResumed = %v, want %v", name, got, tt.want)
		}
	}
}
