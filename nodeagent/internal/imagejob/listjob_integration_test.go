package imagejob_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/admission"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob/plan"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// An ImageListPullJob keeps one ImagePullJob per listed image; a changed list replaces the jobs of the images it
// drops with those of the images it adds; it counts its jobs and completes with them.
func TestImageListPullJobFansOut(t *testing.T) {
	e := start(t)
	nodes := e.nodes(1)
	list := &kruiseappsv1alpha1.ImageListPullJob{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "warm"},
		Spec: kruiseappsv1alpha1.ImageListPullJobSpec{Images: []string{"nginx:1.27", "redis:7"}, ImagePullJobTemplate: kruiseappsv1alpha1.ImagePullJobTemplate{
			Selector: &kruiseappsv1alpha1.ImagePullJobNodeSelector{Names: nodes}}}}
	admission.DefaultImageListPullJob(list, nil)
	if errs := admission.ValidateImageListPullJob(list, nil); len(errs) > 0 {
		t.Fatalf("the webhook would refuse the list: %v", errs)
	}
	managertest.Create(t, e.c, list)
	e.waitChildren(list, "nginx:1.27", "redis:7")

	managertest.Update(t, e.c, list, func(list *kruiseappsv1alpha1.ImageListPullJob) {
		list.Spec.Images = []string{"nginx:1.27", "busybox:1"}
	})
	children := e.waitChildren(list, "nginx:1.27", "busybox:1")
	managertest.Eventually(t, itTimeout, "both images asked of the node", func(context.Context) (bool, error) {
		_, nginx := e.tag(nodes[0], "nginx", "1.27")
		_, busybox := e.tag(nodes[0], "busybox", "1")
		_, redis := e.tag(nodes[0], "redis", "7")
		return nginx && busybox && !redis, fmt.Errorf("nginx %v busybox %v redis %v", nginx, busybox, redis)
	})
	e.report(nodes[0], "nginx", "1.27", succeeded, "")
	e.report(nodes[0], "busybox", "1", failed, "not found")
	got := &kruiseappsv1alpha1.ImageListPullJob{}
	managertest.Eventually(t, itTimeout, "the list completed", func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(list), got); err != nil {
			return false, err
		}
		return got.Status.CompletionTime != nil, fmt.Errorf("status %+v", got.Status)
	})
	s := got.Status
	busybox := children["busybox:1"]
	if s.Desired != 2 || s.Completed != 2 || s.Succeeded != 1 || s.Active != 0 || len(s.FailedImageStatuses) != 1 ||
		s.FailedImageStatuses[0].Name != "busybox:1" || s.FailedImageStatuses[0].ImagePullJob != busybox.Name {
		t.Errorf("status %+v, failed %+v", s, s.FailedImageStatuses)
	}
	e.waitReasons("ImageListPullJob", "warm", "SuccessfulCreate", "SuccessfulDelete", plan.ReasonCompleted)
}

// waitChildren waits until the list's ImagePullJobs are one per image of images, controlled by it and made from
// its template, and returns them by image.
func (e *env) waitChildren(list *kruiseappsv1alpha1.ImageListPullJob, images ...string) map[string]*kruiseappsv1alpha1.ImagePullJob {
	e.t.Helper()
	byImage := map[string]*kruiseappsv1alpha1.ImagePullJob{}
	managertest.Eventually(e.t, itTimeout, fmt.Sprintf("ImagePullJobs of %v", images), func(ctx context.Context) (bool, error) {
		jobs := &kruiseappsv1alpha1.ImagePullJobList{}
		if err := e.c.List(ctx, jobs, client.InNamespace(e.ns)); err != nil {
			return false, err
		}
		clear(byImage)
		var got []string
		for i := range jobs.Items {
			j := &jobs.Items[i]
			if ref := metav1.GetControllerOf(j); ref != nil && ref.UID == list.UID && j.DeletionTimestamp == nil {
				byImage[j.Spec.Image] = j
				got = append(got, j.Spec.Image)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(images))
		return slices.Equal(got, want), fmt.Errorf("ImagePullJobs of %v", got)
	})
	for image, j := range byImage {
		if j.Spec.Selector == nil || !slices.Equal(j.Spec.Selector.Names, list.Spec.Selector.Names) || j.Name != plan.ChildName(list, image) {
			e.t.Errorf("ImagePullJob %s of %s: %+v", j.Name, image, j.Spec)
		}
	}
	return byImage
}
