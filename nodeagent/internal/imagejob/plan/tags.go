package plan

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// ImagePullJobKind is the kind an ImagePullJob's owner reference in a NodeImage tag names.
const ImagePullJobKind = "ImagePullJob"

// OwnerIndex indexes NodeImages in the manager's cache by the OwnerKeys of their tags: an ImagePullJob finds the
// NodeImages that pull for it, and a deleted one those that still name it, without reading every NodeImage.
const OwnerIndex = "imagepulljob.flotilla.dev/owner"

// NodeState is where a node is in an ImagePullJob.
type NodeState string

const (
	// Waiting: the job has not asked the node to pull yet.
	Waiting NodeState = "Waiting"
	// Active: the node's tag names the job and its pull has not finished.
	Active NodeState = "Active"
	// Succeeded and Failed: the node's agent finished the pull of the tag's current version.
	Succeeded NodeState = "Succeeded"
	Failed    NodeState = "Failed"
)

// OwnerReference is how job names itself in the NodeImage tags it asks for (upstream's form).
func OwnerReference(job *kruiseappsv1alpha1.ImagePullJob) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: ImagePullJobKind,
		Namespace: job.Namespace, Name: job.Name, UID: job.UID}
}

// IsImagePullJob tells an owner reference to an ImagePullJob (of any version of the group).
func IsImagePullJob(ref corev1.ObjectReference) bool {
	group, _, _ := strings.Cut(ref.APIVersion, "/")
	return ref.Kind == ImagePullJobKind && group == kruiseappsv1alpha1.GroupVersion.Group
}

// OwnerKey is the "<namespace>/<name>" of an owner reference, the NodeImage owner index's value.
func OwnerKey(ref corev1.ObjectReference) string { return ref.Namespace + "/" + ref.Name }

// OwnerKeys are the keys of the ImagePullJobs a NodeImage's tags name, each once, for the owner index.
func OwnerKeys(ni *kruiseappsv1alpha1.NodeImage) []string {
	var keys []string
	for _, img := range ni.Spec.Images {
		for _, tag := range img.Tags {
			for _, ref := range tag.OwnerReferences {
				if IsImagePullJob(ref) && !slices.Contains(keys, OwnerKey(ref)) {
					keys = append(keys, OwnerKey(ref))
				}
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// StateOf is where the node of ni is for the job of uid pulling image:tag, with the agent's message for a
// failure. The status counts only for the version the spec asks now: a newer version is pulling.
func StateOf(ni *kruiseappsv1alpha1.NodeImage, image, tag string, uid types.UID) (NodeState, string) {
	spec, ok := findTag(ni.Spec.Images[image].Tags, tag)
	if !ok || !slices.ContainsFunc(spec.OwnerReferences, func(r corev1.ObjectReference) bool { return r.UID == uid }) {
		return Waiting, ""
	}
	for _, st := range ni.Status.ImageStatuses[image].Tags {
		if st.Tag != tag || st.Version != spec.Version {
			continue
		}
		switch st.Phase {
		case kruiseappsv1alpha1.ImagePhaseSucceeded:
			return Succeeded, ""
		case kruiseappsv1alpha1.ImagePhaseFailed:
			return Failed, st.Message
		}
	}
	return Active, ""
}

// reportLeft is how long the agent of ni has left to report the version of image:tag its spec asks now,
// counted from the tag's createdAt; waiting is false once the status holds that version in any phase, or for
// a tag without a creation time (not written by a job).
func reportLeft(ni *kruiseappsv1alpha1.NodeImage, image, tag string, now time.Time) (left time.Duration, waiting bool) {
	spec, ok := findTag(ni.Spec.Images[image].Tags, tag)
	if !ok || spec.CreatedAt == nil {
		return 0, false
	}
	for _, st := range ni.Status.ImageStatuses[image].Tags {
		if st.Tag == tag && st.Version == spec.Version {
			return 0, false
		}
	}
	return spec.CreatedAt.Add(ResponseTimeout).Sub(now), true
}

func findTag(tags []kruiseappsv1alpha1.ImageTagSpec, tag string) (kruiseappsv1alpha1.ImageTagSpec, bool) {
	for _, t := range tags {
		if t.Tag == tag {
			return t, true
		}
	}
	return kruiseappsv1alpha1.ImageTagSpec{}, false
}

// TagRequest is what a job writes into a node's NodeImage to have it pull image:tag.
type TagRequest struct {
	Image, Tag string
	Owner      corev1.ObjectReference
	CreatedAt  metav1.Time
	PullPolicy *kruiseappsv1alpha1.ImageTagPullPolicy
	// ImagePullPolicy and SandboxConfig are the job's; Secrets the copies of its pull secrets.
	ImagePullPolicy kruiseappsv1alpha1.ImagePullPolicy
	SandboxConfig   *kruiseappsv1alpha1.SandboxConfig
	Secrets         []kruiseappsv1alpha1.ReferenceObject
}

// WithTag is ni's spec with the request's tag, as upstream writes it: a tag already there gains the owner and
// a new version (a new round of pulls, for this job's result) under the request's policies; a new tag starts
// one version past what the status last reported for it. The secrets join the image's. changed is false when
// the tag already names the owner: nothing is written then.
func WithTag(ni *kruiseappsv1alpha1.NodeImage, req TagRequest) (kruiseappsv1alpha1.NodeImageSpec, bool) {
	cur := ni.Spec.Images[req.Image]
	img := *cur.DeepCopy()
	i := slices.IndexFunc(img.Tags, func(t kruiseappsv1alpha1.ImageTagSpec) bool { return t.Tag == req.Tag })
	if i >= 0 && slices.ContainsFunc(img.Tags[i].OwnerReferences, func(r corev1.ObjectReference) bool { return r.UID == req.Owner.UID }) {
		return ni.Spec, false
	}
	if i < 0 {
		img.Tags = append(img.Tags, kruiseappsv1alpha1.ImageTagSpec{Tag: req.Tag, Version: statusVersion(ni, req.Image, req.Tag) + 1})
		i = len(img.Tags) - 1
	} else {
		img.Tags[i].Version++
	}
	t := &img.Tags[i]
	t.OwnerReferences = append(t.OwnerReferences, req.Owner)
	t.CreatedAt, t.PullPolicy, t.ImagePullPolicy = req.CreatedAt.DeepCopy(), req.PullPolicy.DeepCopy(), req.ImagePullPolicy
	slices.SortFunc(img.Tags, func(a, b kruiseappsv1alpha1.ImageTagSpec) int { return strings.Compare(a.Tag, b.Tag) })
	for _, s := range req.Secrets {
		if !slices.Contains(img.PullSecrets, s) {
			img.PullSecrets = append(img.PullSecrets, s)
		}
	}
	if req.SandboxConfig != nil {
		img.SandboxConfig = req.SandboxConfig.DeepCopy()
	}
	spec := *ni.Spec.DeepCopy()
	if spec.Images == nil {
		spec.Images = map[string]kruiseappsv1alpha1.ImageSpec{}
	}
	spec.Images[req.Image] = img
	return spec, true
}

// statusVersion is the version the status last reported for image:tag, -1 when none: a tag written anew
// must not reuse a version the agent already finished, or the agent would take the old result for it.
func statusVersion(ni *kruiseappsv1alpha1.NodeImage, image, tag string) int64 {
	for _, st := range ni.Status.ImageStatuses[image].Tags {
		if st.Tag == tag {
			return st.Version
		}
	}
	return -1
}

// WithoutOwners is spec without the tags' owner references drop matches. A tag that loses its last owner
// goes (nobody wants it pulled any more; a pull in flight is stopped), and an image left without tags too.
// Tags that never had owners (written by hand) stay. changed is false when no reference matched.
func WithoutOwners(spec kruiseappsv1alpha1.NodeImageSpec, drop func(corev1.ObjectReference) bool) (kruiseappsv1alpha1.NodeImageSpec, bool) {
	out, changed := kruiseappsv1alpha1.NodeImageSpec{}, false
	for name, img := range spec.Images {
		var tags []kruiseappsv1alpha1.ImageTagSpec
		for _, t := range img.Tags {
			kept := slices.DeleteFunc(slices.Clone(t.OwnerReferences), drop)
			if len(kept) == len(t.OwnerReferences) {
				tags = append(tags, t)
				continue
			}
			changed = true
			if len(kept) > 0 {
				t.OwnerReferences = kept
				tags = append(tags, t)
			}
		}
		if len(tags) == 0 {
			continue
		}
		img.Tags = tags
		if out.Images == nil {
			out.Images = map[string]kruiseappsv1alpha1.ImageSpec{}
		}
		out.Images[name] = img
	}
	if !changed {
		return spec, false
	}
	return out, true
}
