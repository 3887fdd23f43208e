package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func cloneSet(image string) *kruiseappsv1alpha1.CloneSet {
	return &kruiseappsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "ns", UID: "cs-uid"},
		Spec:       kruiseappsv1alpha1.CloneSetSpec{Replicas: ptr.To[int32](4), Template: podTemplate(image)},
		Status:     kruiseappsv1alpha1.CloneSetStatus{Replicas: 4, UpdatedReplicas: 4},
	}
}

func cloneSetRollout(routed bool) *rolloutsv1beta1.Rollout {
	r := canaryRollout()
	r.Spec.WorkloadRef = rolloutsv1beta1.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "echo"}
	if routed {
		r.Spec.Strategy.Canary.TrafficRoutings = []rolloutsv1beta1.TrafficRoutingRef{ingressRouting()}
	}
	return r
}

// checkFreeze compares a freeze result with the expected object (nil: no change) and makes sure the
// input was left alone.
func checkFreeze[T any](t *testing.T, before, cur, got, want *T) {
	t.Helper()
	if diff := cmp.Diff(before, cur); diff != "" {
		t.Errorf("the input was modified (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// expect applies change to a fresh copy; a nil change expects no result.
func expect[T any](deepCopy func() *T, change func(*T)) *T {
	if change == nil {
		return nil
	}
	want := deepCopy()
	change(want)
	return want
}

func TestFreezeCloneSet(t *testing.T) {
	frozenCloneSet := func(cs *kruiseappsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("100%"))
		setAnnotation(cs, rolloutsv1beta1.InProgressingAnnotation, `{"rolloutName":"demo"}`)
	}
	zero := cloneSet("echo:v2")
	zero.Spec.Replicas = ptr.To[int32](0)
	mixed := cloneSet("echo:v2")
	mixed.Status.UpdatedReplicas = 2
	noUID := cloneSet("echo:v2")
	noUID.UID = ""
	idBump := cloneSet("echo:v1")
	idBump.Annotations = map[string]string{rolloutsv1beta1.RolloutIDLabel: "r2"}
	cases := []struct {
		name    string
		cur     *kruiseappsv1alpha1.CloneSet
		rollout *rolloutsv1beta1.Rollout
		want    func(*kruiseappsv1alpha1.CloneSet)
	}{
		{name: "new template", cur: cloneSet("echo:v2"), rollout: cloneSetRollout(false), want: frozenCloneSet},
		{name: "rollout-id", cur: idBump, rollout: cloneSetRollout(false), want: frozenCloneSet},
		{name: "no Rollout", cur: cloneSet("echo:v2")},
		{name: "no change", cur: cloneSet("echo:v1"), rollout: cloneSetRollout(false)},
		{name: "no replicas", cur: zero, rollout: cloneSetRollout(false)},
		{name: "two revisions with traffic routing", cur: mixed, rollout: cloneSetRollout(true)},
		{name: "two revisions without traffic routing", cur: mixed, rollout: cloneSetRollout(false), want: frozenCloneSet},
		{name: "empty UID", cur: noUID, rollout: cloneSetRollout(false), want: func(cs *kruiseappsv1alpha1.CloneSet) {
			cs.UID = "cs-uid"
			frozenCloneSet(cs)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, want := tc.cur.DeepCopy(), expect(tc.cur.DeepCopy, tc.want)
			checkFreeze(t, before, tc.cur, FreezeCloneSet(cloneSet("echo:v1"), tc.cur, tc.rollout), want)
		})
	}
}

func advancedDaemonSet(image string) *kruiseappsv1alpha1.DaemonSet {
	return &kruiseappsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds-uid"},
		Spec:       kruiseappsv1alpha1.DaemonSetSpec{Template: podTemplate(image)},
	}
}

func TestFreezeAdvancedDaemonSet(t *testing.T) {
	frozenDS := func(ds *kruiseappsv1alpha1.DaemonSet) {
		if ds.Spec.UpdateStrategy.RollingUpdate == nil {
			ds.Spec.UpdateStrategy.RollingUpdate = &kruiseappsv1alpha1.RollingUpdateDaemonSet{}
		}
		ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(32767))
		setAnnotation(ds, rolloutsv1beta1.InProgressingAnnotation, `{"rolloutName":"demo"}`)
	}
	withSettings := advancedDaemonSet("agent:v2")
	withSettings.Spec.UpdateStrategy.RollingUpdate = &kruiseappsv1alpha1.RollingUpdateDaemonSet{
		MaxUnavailable: ptr.To(intstr.FromInt32(2)), Partition: ptr.To(intstr.FromInt32(0)),
	}
	cases := []struct {
		name    string
		cur     *kruiseappsv1alpha1.DaemonSet
		rollout *rolloutsv1beta1.Rollout
		want    func(*kruiseappsv1alpha1.DaemonSet)
	}{
		{name: "new template", cur: advancedDaemonSet("agent:v2"), rollout: canaryRollout(), want: frozenDS},
		{name: "keeps rolling update settings", cur: withSettings, rollout: canaryRollout(), want: frozenDS},
		{name: "no change", cur: advancedDaemonSet("agent:v1"), rollout: canaryRollout()},
		{name: "no Rollout", cur: advancedDaemonSet("agent:v2")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, want := tc.cur.DeepCopy(), expect(tc.cur.DeepCopy, tc.want)
			checkFreeze(t, before, tc.cur, FreezeAdvancedDaemonSet(advancedDaemonSet("agent:v1"), tc.cur, tc.rollout), want)
		})
	}
}

func nativeDaemonSet(image string, strategy appsv1.DaemonSetUpdateStrategyType) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds-uid"},
		Spec: appsv1.DaemonSetSpec{
			Template:       podTemplate(image),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: strategy},
		},
	}
}

func TestFreezeNativeDaemonSet(t *testing.T) {
	frozenDS := func(original string) func(*appsv1.DaemonSet) {
		return func(ds *appsv1.DaemonSet) {
			setAnnotation(ds, rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation, original)
			ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
			setAnnotation(ds, rolloutsv1beta1.InProgressingAnnotation, `{"rolloutName":"demo"}`)
		}
	}
	continued := nativeDaemonSet("agent:v3", appsv1.OnDeleteDaemonSetStrategyType)
	continued.Annotations = map[string]string{
		rolloutsv1beta1.DaemonSetOriginalUpdateStrategyAnnotation: "RollingUpdate",
		rolloutsv1beta1.InProgressingAnnotation:                   `{"rolloutName":"demo"}`,
	}
	rolling := nativeDaemonSet("agent:v2", appsv1.RollingUpdateDaemonSetStrategyType)
	rolling.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	cases := []struct {
		name    string
		cur     *appsv1.DaemonSet
		rollout *rolloutsv1beta1.Rollout
		want    func(*appsv1.DaemonSet)
	}{
		{name: "rolling update", cur: rolling, rollout: canaryRollout(), want: frozenDS("RollingUpdate")},
		{name: "unset strategy counts as RollingUpdate", cur: nativeDaemonSet("agent:v2", ""), rollout: canaryRollout(), want: frozenDS("RollingUpdate")},
		{name: "OnDelete", cur: nativeDaemonSet("agent:v2", appsv1.OnDeleteDaemonSetStrategyType), rollout: canaryRollout(), want: frozenDS("OnDelete")},
		{name: "a release in progress keeps the saved strategy", cur: continued, rollout: canaryRollout()},
		{name: "no change", cur: nativeDaemonSet("agent:v1", appsv1.RollingUpdateDaemonSetStrategyType), rollout: canaryRollout()},
		{name: "no Rollout", cur: rolling},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, want := tc.cur.DeepCopy(), expect(tc.cur.DeepCopy, tc.want)
			old := nativeDaemonSet("agent:v1", appsv1.RollingUpdateDaemonSetStrategyType)
			checkFreeze(t, before, tc.cur, FreezeNativeDaemonSet(old, tc.cur, tc.rollout), want)
		})
	}
}

func TestFreezeNilInputs(t *testing.T) {
	if FreezeCloneSet(nil, cloneSet("a"), canaryRollout()) != nil ||
		FreezeAdvancedDaemonSet(advancedDaemonSet("a"), nil, canaryRollout()) != nil ||
		FreezeNativeDaemonSet(nil, nil, nil) != nil {
		t.Error("a freeze with a nil input changed something")
	}
	if got, err := FreezeStatefulSetLike(nil, nil, canaryRollout()); got != nil || err != nil {
		t.Errorf("FreezeStatefulSetLike(nil) = %v, %v", got, err)
	}
}
