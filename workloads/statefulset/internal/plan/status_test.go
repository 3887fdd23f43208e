package plan

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

func TestCount(t *testing.T) {
	other := pod(9, updated)
	other.Name = "stranger"
	in := input(4, pods(
		pod(0, current),
		pod(1, updated),
		pod(2, updated, readySince(2*time.Second)),
		pod(3, updated, state(kruiseappspub.LifecycleStatePreparingUpdate)),
		pod(4, current, terminating),
		pod(5, updated, notReady),
		other,
	), minReady(5))
	got := Count(in)
	want := Counts{Replicas: 6, Ready: 5, Available: 3, Current: 1, Updated: 4, UpdatedReady: 3, UpdatedAvailable: 1,
		CurrentRevision: current, Wait: 3 * time.Second}
	if got != want {
		t.Errorf("Count = %+v\nwant    %+v", got, want)
	}
}

func TestCountCompletesTheUpdate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{name: "every pod updated and Ready", in: input(2, pods(pod(0, updated), pod(1, updated))), want: updated},
		{name: "one pod not Ready", in: input(2, pods(pod(0, updated), pod(1, updated, notReady))), want: current},
		{name: "one pod on the current revision", in: input(2, pods(pod(0, current), pod(1, updated))), want: current},
		{name: "no pods at all", in: input(0, nil), want: updated},
		{name: "OnDelete never completes", in: input(1, pods(pod(0, updated)), func(s *Strategy) { s.OnDelete = true }), want: current},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Count(tc.in)
			if c.CurrentRevision != tc.want {
				t.Errorf("currentRevision %s, want %s", c.CurrentRevision, tc.want)
			}
			if c.CurrentRevision == updated && c.Current != c.Updated {
				t.Errorf("currentReplicas %d, want updatedReplicas %d", c.Current, c.Updated)
			}
		})
	}
}

func claim(name, request, capacity string, changes ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}},
	}}
	if capacity != "" {
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	}
	for _, ch := range changes {
		ch(c)
	}
	return c
}

func TestCompatibleAndReady(t *testing.T) {
	tmpl := claim("data", "2Gi", "")
	for _, tc := range []struct {
		name              string
		claim             *corev1.PersistentVolumeClaim
		compatible, ready bool
		expand            bool
	}{
		{name: "bigger and bound", claim: claim("c", "3Gi", "3Gi"), compatible: true, ready: true},
		{name: "equal, capacity not reached", claim: claim("c", "2Gi", "1Gi"), compatible: true},
		{name: "smaller", claim: claim("c", "1Gi", "1Gi"), ready: true, expand: true},
		{name: "another class", claim: claim("c", "2Gi", "2Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("x") }),
			compatible: true, ready: true},
		{name: "other access modes", claim: claim("c", "2Gi", "2Gi", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compatible, ready := CompatibleAndReady(tc.claim, tmpl)
			if compatible != tc.compatible || ready != tc.ready && tc.compatible {
				t.Errorf("compatible %v ready %v, want %v %v", compatible, ready, tc.compatible, tc.ready)
			}
			if NeedsExpand(tc.claim, tmpl) != tc.expand {
				t.Errorf("NeedsExpand %v", !tc.expand)
			}
		})
	}
	classed := claim("data", "2Gi", "", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("y") })
	if ok, _ := CompatibleAndReady(claim("c", "2Gi", "2Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To("x") }), classed); ok {
		t.Error("claims of another storage class than the template's are not compatible")
	}
}

func TestClaimsOf(t *testing.T) {
	tmpl := []*corev1.PersistentVolumeClaim{claim("a", "1Gi", ""), claim("b", "2Gi", "")}
	pendingResize := func(c *corev1.PersistentVolumeClaim) {
		c.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
	}
	gone := func(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = &metav1.Time{Time: now} }
	for _, tc := range []struct {
		name   string
		claims []*corev1.PersistentVolumeClaim
		want   ClaimState
	}{
		{name: "both ready", claims: pvcs(claim("a", "1Gi", "1Gi"), claim("b", "2Gi", "2Gi")), want: ClaimState{true, true, true}},
		{name: "one resizing its file system", claims: pvcs(claim("a", "1Gi", "1Gi"), claim("b", "2Gi", "1Gi", pendingResize)),
			want: ClaimState{Compatible: true, Completed: true}},
		{name: "one expanding", claims: pvcs(claim("a", "1Gi", "1Gi"), claim("b", "2Gi", "1Gi")), want: ClaimState{Compatible: true}},
		{name: "one too small", claims: pvcs(claim("a", "1Gi", "1Gi"), claim("b", "1Gi", "1Gi")), want: ClaimState{}},
		{name: "missing and terminating claims are left out", claims: pvcs(nil, claim("b", "1Gi", "1Gi", gone)), want: ClaimState{true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClaimsOf(tc.claims, tmpl); got != tc.want {
				t.Errorf("ClaimsOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func pvcs(cs ...*corev1.PersistentVolumeClaim) []*corev1.PersistentVolumeClaim { return cs }

func TestVolumeClaims(t *testing.T) {
	templates := []corev1.PersistentVolumeClaim{*claim("data", "2Gi", ""), *claim("logs", "1Gi", "")}
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for _, c := range pvcs(claim("data-web-0", "2Gi", "2Gi"), claim("data-web-1", "2Gi", "1Gi"), claim("data-web-2", "1Gi", "1Gi"),
		claim("logs-web-0", "1Gi", "1Gi")) {
		claims[c.Name] = c
	}
	got := VolumeClaims(set, templates, []int32{0, 1, 2, 3}, claims)
	want := []kruiseappsv1beta1.VolumeClaimStatus{
		{VolumeClaimName: "data", CompatibleReplicas: 2, CompatibleReadyReplicas: 1},
		{VolumeClaimName: "logs", CompatibleReplicas: 1, CompatibleReadyReplicas: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("VolumeClaims = %+v, want %+v", got, want)
	}
	if got := VolumeClaims(set, nil, []int32{0}, claims); got == nil || len(got) != 0 {
		t.Errorf("no templates: %v, want an empty list", got)
	}
}

func TestClaimOwners(t *testing.T) {
	policy := func(deleted, scaled kruiseappsv1beta1.PersistentVolumeClaimRetentionPolicyType) *kruiseappsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy {
		return &kruiseappsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: deleted, WhenScaled: scaled}
	}
	const retain, del = kruiseappsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType, kruiseappsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType
	for _, tc := range []struct {
		name      string
		policy    *kruiseappsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy
		condemned bool
		set, pod  bool
	}{
		{name: "no policy"},
		{name: "retain both", policy: policy(retain, retain)},
		{name: "retain both, scaled away", policy: policy(retain, retain), condemned: true},
		{name: "deleted with the set", policy: policy(del, retain), set: true},
		{name: "deleted with the set, scaled away: kept", policy: policy(del, retain), condemned: true, set: true},
		{name: "deleted when scaled, still wanted", policy: policy(retain, del)},
		{name: "deleted when scaled, scaled away", policy: policy(retain, del), condemned: true, pod: true},
		{name: "delete both, wanted", policy: policy(del, del), set: true},
		{name: "delete both, scaled away", policy: policy(del, del), condemned: true, pod: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, p := ClaimOwners(tc.policy, tc.condemned)
			if s != tc.set || p != tc.pod {
				t.Errorf("set %v pod %v, want %v %v", s, p, tc.set, tc.pod)
			}
		})
	}
}
