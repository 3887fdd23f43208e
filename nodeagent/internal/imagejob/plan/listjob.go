package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// childNamePrefixMax keeps a child's name, prefix, '-' and hash, within an object name's 253 characters.
const childNamePrefixMax = 240

// ListInput is what one reconcile knows of an unfinished ImageListPullJob.
type ListInput struct {
	Now time.Time
	// Job is read only.
	Job *kruiseappsv1alpha1.ImageListPullJob
	// Children are the ImagePullJobs the job controls, those being deleted left out.
	Children []*kruiseappsv1alpha1.ImagePullJob
}

// ListDecision is what the controller carries out for one reconcile of an unfinished ImageListPullJob.
type ListDecision struct {
	// Create are the ImagePullJobs of images that have none; Delete those of images no longer listed, or made
	// from an older template (their images get new ones, as upstream replaces them).
	Create, Delete []*kruiseappsv1alpha1.ImagePullJob
	Status         kruiseappsv1alpha1.ImageListPullJobStatus
	Events         []Event
}

// DecideList keeps one ImagePullJob per listed image, made from the job's template, and counts them.
func DecideList(in ListInput) ListDecision {
	d := ListDecision{Status: *in.Job.Status.DeepCopy()}
	if d.Status.StartTime == nil {
		d.Status.StartTime = ptr.To(metav1.NewTime(in.Now))
	}
	images := uniqueImages(in.Job.Spec.Images)
	children := map[string]*kruiseappsv1alpha1.ImagePullJob{}
	for _, c := range in.Children {
		children[c.Name] = c
	}
	wanted := map[string]bool{}
	for _, image := range images {
		child := Child(in.Job, image)
		wanted[child.Name] = true
		if children[child.Name] == nil {
			d.Create = append(d.Create, child)
		}
	}
	for _, c := range in.Children {
		if !wanted[c.Name] {
			d.Delete = append(d.Delete, c)
		}
	}
	d.count(in, images, children)
	return d
}

// count is upstream's status: over the images' jobs that started, those pulling, those whose every node
// finished (completed) or succeeded, and those with failed nodes. A job of policy Always completes once
// every image's job has.
func (d *ListDecision) count(in ListInput, images []string, children map[string]*kruiseappsv1alpha1.ImagePullJob) {
	st := &d.Status
	st.Desired, st.Active, st.Completed, st.Succeeded, st.FailedImageStatuses = int32(len(images)), 0, 0, 0, nil
	for _, image := range images {
		c := children[ChildName(in.Job, image)]
		if c == nil || c.Status.StartTime == nil {
			continue
		}
		s := c.Status
		if s.Active > 0 {
			st.Active++
		}
		if s.Failed > 0 {
			st.FailedImageStatuses = append(st.FailedImageStatuses, &kruiseappsv1alpha1.FailedImageStatus{ImagePullJob: c.Name, Name: image, Message: s.Message})
		}
		if s.Desired == s.Succeeded+s.Failed {
			st.Completed++
		}
		if s.Desired == s.Succeeded {
			st.Succeeded++
		}
	}
	if in.Job.Spec.CompletionPolicy.Type != kruiseappsv1alpha1.Never && st.Completed == st.Desired {
		st.CompletionTime = ptr.To(metav1.NewTime(in.Now))
		eventType := corev1.EventTypeNormal
		if st.Succeeded < st.Desired {
			eventType = corev1.EventTypeWarning
		}
		d.Events = append(d.Events, Event{Type: eventType, Reason: ReasonCompleted, Action: "Complete",
			Message: fmt.Sprintf("Pulled %d images, %d on every node", st.Desired, st.Succeeded)})
	}
}

// Child is the ImagePullJob of one image of job: controlled by job, with its template but for
// ttlSecondsAfterFinished (a finished image's job must stay until the list finishes, or the list would make
// it again; it goes with the list), named after the list, the image and the template.
func Child(job *kruiseappsv1alpha1.ImageListPullJob, image string) *kruiseappsv1alpha1.ImagePullJob {
	return &kruiseappsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: ChildName(job, image),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, kruiseappsv1alpha1.GroupVersion.WithKind("ImageListPullJob"))}},
		Spec: kruiseappsv1alpha1.ImagePullJobSpec{Image: image, ImagePullJobTemplate: childTemplate(job)},
	}
}

func childTemplate(job *kruiseappsv1alpha1.ImageListPullJob) kruiseappsv1alpha1.ImagePullJobTemplate {
	t := *job.Spec.ImagePullJobTemplate.DeepCopy()
	t.CompletionPolicy.TTLSecondsAfterFinished = nil
	return t
}

// ChildName is "<list>-<hash of the image and the template>": deterministic, and new when the template
// changes, so that the job of a changed template is made beside the old one being deleted.
func ChildName(job *kruiseappsv1alpha1.ImageListPullJob, image string) string {
	t, _ := json.Marshal(childTemplate(job)) // plain data: it always encodes
	sum := sha256.Sum256(append([]byte(image+"\n"), t...))
	prefix := job.Name
	if len(prefix) > childNamePrefixMax {
		prefix = strings.TrimRight(prefix[:childNamePrefixMax], "-.")
	}
	return prefix + "-" + hex.EncodeToString(sum[:])[:10]
}

// uniqueImages are the listed images, each once, in their order.
func uniqueImages(images []string) []string {
	var out []string
	for _, image := range images {
		if !slices.Contains(out, image) {
			out = append(out, image)
		}
	}
	return out
}
