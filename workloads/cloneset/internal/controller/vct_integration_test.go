package controller

import (
	"context"
	"fmt"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset/internal/plan"
)

// TestVolumeClaimTemplateChange changes the image and the claim size together on an InPlaceIfPossible
// CloneSet: without the gate the pods are updated in place and keep their claims (upstream's default); with
// RecreatePodWhenChangeVCTInCloneSetGate they are recreated with claims of the new size. The claims never
// bind here (no volumes), so maxUnavailable 100% lets the update go on.
func TestVolumeClaimTemplateChange(t *testing.T) {
	for _, gate := range []bool{false, true} {
		t.Run(fmt.Sprintf("gate=%v", gate), func(t *testing.T) {
			c := startController(t, func(r *Reconciler) { r.RecreateOnVCTChange = gate })
			ns := managertest.Namespace(t, c, "cs")
			cs := newCloneSet(ns, "data", 2, "nginx:1", inPlace, func(cs *kruiseappsv1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
				cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimOfSize("1Gi")}
			})
			create(t, c, cs)
			before := podsOnImage(t, c, cs, "nginx:1")
			checkRevisionVCTHash(t, c, cs)
			update(t, c, cs, func(cs *kruiseappsv1alpha1.CloneSet) {
				cs.Spec.Template.Spec.Containers[0].Image = "nginx:2"
				cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claimOfSize("2Gi")}
			})
			after := podsOnImage(t, c, cs, "nginx:2")
			checkRevisionVCTHash(t, c, cs)
			if kept := maps.Equal(before, after); kept == gate {
				t.Fatalf("pods before %v, after %v: want them kept %v", before, after, !gate)
			}
			wantSize := map[bool]string{false: "1Gi", true: "2Gi"}[gate]
			eventually(t, "the pods' claims of "+wantSize, func(ctx context.Context) (bool, error) {
				return claimsOfSize(ctx, c, ns, after, wantSize)
			})
		})
	}
}

func claimOfSize(size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
	}
}

// podsOnImage waits until the CloneSet has exactly its replicas, all live and on image, and returns them.
func podsOnImage(t *testing.T, c client.Client, cs *kruiseappsv1alpha1.CloneSet, image string) map[string]types.UID {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(describeState(c, cs))
		}
	})
	var out map[string]types.UID
	eventually(t, fmt.Sprintf("%d pods on %s", *cs.Spec.Replicas, image), func(ctx context.Context) (bool, error) {
		ps, err := pods(ctx, c, cs)
		if err != nil || int32(len(ps)) != *cs.Spec.Replicas {
			return false, err
		}
		for _, p := range ps {
			if p.Spec.Containers[0].Image != image {
				return false, nil
			}
		}
		out = identities(ps)
		return true, nil
	})
	return out
}

// checkRevisionVCTHash checks that the update revision records the hash of the current claim templates.
func checkRevisionVCTHash(t *testing.T, c client.Client, cs *kruiseappsv1alpha1.CloneSet) {
	t.Helper()
	want := plan.VCTHash(cs.Spec.VolumeClaimTemplates)
	eventually(t, "the update revision recording the claim templates' hash", func(ctx context.Context) (bool, error) {
		list := &appsv1.ControllerRevisionList{}
		if err := c.List(ctx, list, client.InNamespace(cs.Namespace)); err != nil {
			return false, err
		}
		got := &kruiseappsv1alpha1.CloneSet{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cs), got); err != nil {
			return false, err
		}
		for _, cr := range list.Items {
			if cr.Name == got.Status.UpdateRevision && got.Status.ObservedGeneration == got.Generation {
				return cr.Annotations[plan.VCTHashAnnotation] == want, nil
			}
		}
		return false, nil
	})
}

// claimsOfSize reports whether every pod's claim exists and requests size.
func claimsOfSize(ctx context.Context, c client.Client, ns string, pods map[string]types.UID, size string) (bool, error) {
	for name := range pods {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-" + name}, pvc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != size || pvc.DeletionTimestamp != nil {
			return false, nil
		}
	}
	return true, nil
}

// describeState shows the CloneSet's pods, claims and events, to explain a failed wait.
func describeState(c client.Client, cs *kruiseappsv1alpha1.CloneSet) string {
	ctx := context.Background()
	out := ""
	got := &kruiseappsv1alpha1.CloneSet{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cs), got); err == nil {
		out += fmt.Sprintf("cloneset generation %d status %+v\n", got.Generation, got.Status)
	}
	podList := &corev1.PodList{}
	_ = c.List(ctx, podList, client.InNamespace(cs.Namespace))
	for _, p := range podList.Items {
		out += fmt.Sprintf("pod %s uid %s image %s deleting %v node %q labels %v\n", p.Name, p.UID,
			p.Spec.Containers[0].Image, p.DeletionTimestamp != nil, p.Spec.NodeName, p.Labels)
	}
	claims := &corev1.PersistentVolumeClaimList{}
	_ = c.List(ctx, claims, client.InNamespace(cs.Namespace))
	for _, pvc := range claims.Items {
		out += fmt.Sprintf("claim %s deleting %v finalizers %v size %v\n", pvc.Name, pvc.DeletionTimestamp != nil,
			pvc.Finalizers, pvc.Spec.Resources.Requests.Storage())
	}
	events := &corev1.EventList{}
	_ = c.List(ctx, events, client.InNamespace(cs.Namespace))
	for _, e := range events.Items {
		out += fmt.Sprintf("event %s %s %s: %s\n", e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
	}
	return out
}
