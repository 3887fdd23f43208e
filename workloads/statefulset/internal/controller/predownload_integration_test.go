package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// A pre-download job the API server refuses (here a quota no ImagePullJob fits) is reported on the set, as a
// FailedUpdatePod condition and a FailedCreateImagePullJob event, and retried; it does not hold the set's
// observedGeneration, so GitOps tools still see the new spec observed.
func TestRefusedPreDownloadKeepsTheSpecObserved(t *testing.T) {
	c := startController(t, func(r *Reconciler) { r.PreDownloadImages = true })
	ns := managertest.Namespace(t, c, "asts")
	// No quota controller runs here: the test writes the quota's status as it would.
	none := corev1.ResourceList{"count/imagepulljobs.apps.kruise.io": resource.MustParse("0")}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-pull-jobs"}, Spec: corev1.ResourceQuotaSpec{Hard: none}}
	create(t, c, quota)
	quota.Status = corev1.ResourceQuotaStatus{Hard: none, Used: none}
	if err := c.Status().Update(t.Context(), quota); err != nil {
		t.Fatal(err)
	}
	s := newSet(ns, "db", 4, "redis:7", inPlace(0), func(s *kruiseappsv1beta1.StatefulSet) { rolling(s).Partition = ptr.To[int32](4) })
	create(t, c, s)
	settled(t, c, s, 4)
	update(t, c, s, setImage("redis:8"))
	eventually(t, "the refusal reported, the spec observed", func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return false, err
		}
		failed := false
		for _, cond := range s.Status.Conditions {
			failed = failed || cond.Type == kruiseappsv1beta1.FailedUpdatePod && strings.Contains(cond.Message, "ImagePullJob")
		}
		return failed && s.Status.ObservedGeneration == s.Generation, fmt.Errorf("generation %d, status %+v, events %v", s.Generation, s.Status, eventNotes(t, c, s))
	})
	if notes := eventNotes(t, c, s)["FailedCreateImagePullJob"]; len(notes) == 0 {
		t.Errorf("no FailedCreateImagePullJob event; events %v", eventNotes(t, c, s))
	}
}
