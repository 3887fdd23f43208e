package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func listJob(images ...string) *kruiseappsv1alpha1.ImageListPullJob {
	return &kruiseappsv1alpha1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "list", UID: "list-uid"},
		Spec: kruiseappsv1alpha1.ImageListPullJobSpec{Images: images, ImagePullJobTemplate: kruiseappsv1alpha1.ImagePullJobTemplate{
			CompletionPolicy: kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Always, TTLSecondsAfterFinished: ptr.To[int32](60)},
		}},
	}
}

// child is the job's ImagePullJob of image with status counts (desired, succeeded, failed, active); started
// false leaves its start time unset.
func child(job *kruiseappsv1alpha1.ImageListPullJob, image string, started bool, counts ...int32) *kruiseappsv1alpha1.ImagePullJob {
	c := Child(job, image)
	if started {
		c.Status = kruiseappsv1alpha1.ImagePullJobStatus{StartTime: mtime(0), Desired: counts[0], Succeeded: counts[1], Failed: counts[2],
			Active: counts[3], Message: "m-" + image}
	}
	return c
}

func TestChild(t *testing.T) {
	job := listJob("nginx:1", "redis:7")
	c := Child(job, "nginx:1")
	if c.Spec.Image != "nginx:1" || c.Spec.CompletionPolicy.TTLSecondsAfterFinished != nil ||
		c.Spec.CompletionPolicy.Type != kruiseappsv1alpha1.Always || metav1.GetControllerOf(c).UID != "list-uid" {
		t.Errorf("child %+v", c)
	}
	if c.Name == Child(job, "redis:7").Name {
		t.Error("two images, one name")
	}
	changed := job.DeepCopy()
	changed.Spec.Parallelism = ptr.To(intstr.FromInt32(4))
	if Child(changed, "nginx:1").Name == c.Name {
		t.Error("a new template kept the name")
	}
	if ttl := job.DeepCopy(); Child(func() *kruiseappsv1alpha1.ImageListPullJob {
		ttl.Spec.CompletionPolicy.TTLSecondsAfterFinished = nil
		return ttl
	}(), "nginx:1").Name != c.Name {
		t.Error("the list's TTL, which children do not take, changed their name")
	}
}

func TestDecideList(t *testing.T) {
	job := listJob("nginx:1", "redis:7", "busybox:1", "nginx:1")
	stale := Child(listJob("old:1"), "old:1")
	in := ListInput{Now: at(10), Job: job, Children: []*kruiseappsv1alpha1.ImagePullJob{
		child(job, "nginx:1", true, 2, 2, 0, 0), child(job, "redis:7", true, 2, 0, 1, 1), stale}}
	d := DecideList(in)
	var create, del []string
	for _, c := range d.Create {
		create = append(create, c.Spec.Image)
	}
	for _, c := range d.Delete {
		del = append(del, c.Name)
	}
	want := kruiseappsv1alpha1.ImageListPullJobStatus{StartTime: mtime(10), Desired: 3, Active: 1, Completed: 1, Succeeded: 1,
		FailedImageStatuses: []*kruiseappsv1alpha1.FailedImageStatus{{ImagePullJob: ChildName(job, "redis:7"), Name: "redis:7", Message: "m-redis:7"}}}
	if diff := cmp.Diff(want, d.Status); diff != "" || !cmp.Equal(create, []string{"busybox:1"}) || !cmp.Equal(del, []string{stale.Name}) {
		t.Errorf("create %v delete %v status (-want +got):\n%s", create, del, diff)
	}

	in.Children = []*kruiseappsv1alpha1.ImagePullJob{child(job, "nginx:1", true, 2, 2, 0, 0), child(job, "redis:7", true, 2, 1, 1, 0),
		child(job, "busybox:1", true, 0, 0, 0, 0)}
	d = DecideList(in)
	if d.Status.CompletionTime == nil || d.Status.Completed != 3 || d.Status.Succeeded != 2 || len(d.Events) != 1 || d.Events[0].Reason != ReasonCompleted {
		t.Errorf("every image's job finished: %+v, events %v", d.Status, d.Events)
	}
	never := job.DeepCopy()
	never.Spec.CompletionPolicy = kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Never}
	in.Job = never
	in.Children = []*kruiseappsv1alpha1.ImagePullJob{child(never, "nginx:1", true, 1, 1, 0, 0), child(never, "redis:7", true, 1, 1, 0, 0),
		child(never, "busybox:1", true, 1, 1, 0, 0)}
	if d := DecideList(in); d.Status.CompletionTime != nil || d.Status.Completed != 3 {
		t.Errorf("policy Never completed: %+v", d.Status)
	}
	in.Children = []*kruiseappsv1alpha1.ImagePullJob{child(never, "nginx:1", false)}
	if d := DecideList(in); d.Status.Completed != 0 || len(d.Create) != 2 {
		t.Errorf("a job not started yet counts for nothing: %+v, %d to create", d.Status, len(d.Create))
	}
}
