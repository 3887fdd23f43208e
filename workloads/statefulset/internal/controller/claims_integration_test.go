package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// withClaims gives the set a claim template "data" of storage class class, mounted by its container.
func withClaims(class string) func(*kruiseappsv1beta1.StatefulSet) {
	return func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "storage"}},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(class),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}}
		s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
}

func retention(whenDeleted, whenScaled kruiseappsv1beta1.PersistentVolumeClaimRetentionPolicyType) func(*kruiseappsv1beta1.StatefulSet) {
	return func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &kruiseappsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenDeleted: whenDeleted, WhenScaled: whenScaled}
	}
}

// storage creates a storage class of static volumes (expandable as asked) and n volumes of 1Gi in it, so that
// the claims of a test bind.
func storage(t *testing.T, c client.Client, n int, expandable bool) string {
	t.Helper()
	class := fmt.Sprintf("static-%d", nsCounter.Add(1))
	create(t, c, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner",
		AllowVolumeExpansion: ptr.To(expandable)})
	for i := range n {
		create(t, c, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", class, i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: class,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + class}},
			},
		})
	}
	return class
}

// liveClaims are the namespace's claims not being deleted, by name.
func liveClaims(ctx context.Context, c client.Client, ns string) (map[string]corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	err := c.List(ctx, list, client.InNamespace(ns))
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, cl := range list.Items {
		if cl.DeletionTimestamp == nil {
			out[cl.Name] = cl
		}
	}
	return out, err
}

func claimUIDs(t *testing.T, c client.Client, ns string, want int) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	eventually(t, fmt.Sprintf("%d claims", want), func(ctx context.Context) (bool, error) {
		claims, err := liveClaims(ctx, c, ns)
		out = map[string]types.UID{}
		for name, cl := range claims {
			out[name] = cl.UID
		}
		return len(out) == want, err
	})
	return out
}

// Each pod gets its claims under the native StatefulSet's names; with whenScaled Retain a scale-down keeps the
// claims and a scale-up mounts them again, with whenScaled Delete they go with their pods, and with whenDeleted
// Delete they go with the set.
func TestClaimsFollowTheRetentionPolicy(t *testing.T) {
	c := startController(t)
	ns := managertest.Namespace(t, c, "asts")
	class := storage(t, c, 3, false)
	s := newSet(ns, "web", 3, "nginx:1", withClaims(class), retention("Retain", "Retain"))
	create(t, c, s)
	pods := settled(t, c, s, 3)
	claims := claimUIDs(t, c, ns, 3)
	for _, p := range pods {
		want := "data-" + p.Name
		if i := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "data" }); i < 0 ||
			p.Spec.Volumes[i].PersistentVolumeClaim == nil || p.Spec.Volumes[i].PersistentVolumeClaim.ClaimName != want {
			t.Errorf("pod %s volumes %+v, want claim %s", p.Name, p.Spec.Volumes, want)
		}
		if _, ok := claims[want]; !ok {
			t.Errorf("no claim %s: %v", want, claims)
		}
	}
	cl := &corev1.PersistentVolumeClaim{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "data-web-0"}, cl); err != nil {
		t.Fatal(err)
	}
	if cl.Labels["app"] != "web" || cl.Labels["tier"] != "storage" || len(cl.OwnerReferences) != 0 ||
		cl.Annotations[kruiseappsv1beta1.OwnedByASTSAnnotation] != "web" {
		t.Errorf("claim data-web-0: labels %v owners %v annotations %v", cl.Labels, cl.OwnerReferences, cl.Annotations)
	}

	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	settled(t, c, s, 1)
	consistently(t, "the retained claims", func(ctx context.Context) (bool, error) {
		got, err := liveClaims(ctx, c, ns)
		return len(got) == 3, err
	})
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](3) })
	settled(t, c, s, 3)
	if got := claimUIDs(t, c, ns, 3); !equalUIDs(got, claims) {
		t.Errorf("claims after scaling back %v, want the same %v", got, claims)
	}

	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Delete"
		s.Spec.Replicas = ptr.To[int32](1)
	})
	settled(t, c, s, 1)
	if got := claimUIDs(t, c, ns, 1); got["data-web-0"] != claims["data-web-0"] {
		t.Errorf("claims after scaling down with Delete %v", got)
	}

	// With whenDeleted Delete the set owns its claims, so the garbage collector deletes them with it. The
	// claim keeps the pvc-protection finalizer, whose controller does not run here: deletion requested is
	// what the policy owes. The collector took some 40 s to get to them here, so this wait is
	// longer than the others.
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = "Delete"
	})
	eventually(t, "data-web-0 owned by the set", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-web-0"}, cl)
		return err == nil && len(cl.OwnerReferences) == 1 && cl.OwnerReferences[0].UID == s.UID, err
	})
	if err := c.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	managertest.Eventually(t, 2*time.Minute, "data-web-0 deleted with the set", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-web-0"}, cl)
		return apierrors.IsNotFound(err) || (err == nil && cl.DeletionTimestamp != nil), client.IgnoreNotFound(err)
	})
}

func equalUIDs(a, b map[string]types.UID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// With volumeClaimUpdateStrategy OnPodRollingUpdate (gate StatefulSetAutoResizePVCGate), a larger claim
// template expands every pod's claim during the rolling update, and status.volumeClaims follows the volumes as
// they grow (the test plays the storage provider).
func TestClaimsFollowALargerTemplate(t *testing.T) {
	c := startController(t, func(r *Reconciler) { r.ResizeClaims = true })
	ns := managertest.Namespace(t, c, "asts")
	class := storage(t, c, 2, true)
	s := newSet(ns, "web", 2, "nginx:1", withClaims(class), func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.VolumeClaimUpdateStrategy.Type = kruiseappsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
	})
	create(t, c, s)
	settled(t, c, s, 2)
	claimUIDs(t, c, ns, 2)
	eventually(t, "volumeClaims status", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && len(s.Status.VolumeClaims) == 1 && s.Status.VolumeClaims[0] ==
			kruiseappsv1beta1.VolumeClaimStatus{VolumeClaimName: "data", CompatibleReplicas: 2, CompatibleReadyReplicas: 2}, err
	})
	update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) {
		s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	})
	for _, name := range []string{"data-web-0", "data-web-1"} {
		cl := &corev1.PersistentVolumeClaim{}
		eventually(t, name+" asking for 2Gi", func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cl)
			return err == nil && cl.Spec.Resources.Requests.Storage().Equal(resource.MustParse("2Gi")), err
		})
		cl.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
		if err := c.Status().Update(t.Context(), cl); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both claims compatible and ready", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && len(s.Status.VolumeClaims) == 1 && s.Status.VolumeClaims[0].CompatibleReadyReplicas == 2, err
	})
}
