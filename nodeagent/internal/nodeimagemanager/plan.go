// Package nodeimagemanager is the manager's NodeImage controller: one NodeImage per ready node, named after
// it and carrying its labels (ImagePullJobs select nodes through them), deleted with the node, finished
// pull tasks dropped from the spec once their ttlSecondsAfterFinished has passed, and the references to
// ImagePullJobs that are gone dropped from the tags (a tag left without owners goes). The node agent does
// the pulling (package imagepuller). Planning (Prune, imagejob/plan's WithoutOwners and what package pernode
// decides for a node's object) is pure.
package nodeimagemanager

import (
	"time"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Prune drops the tags whose task finished (in the status, for the spec's version) more than their
// ttlSecondsAfterFinished ago, and the images left without tags. It returns the spec, whether it changed,
// and how long until the next tag expires (0: none waits).
func Prune(ni *kruiseappsv1alpha1.NodeImage, now time.Time) (kruiseappsv1alpha1.NodeImageSpec, bool, time.Duration) {
	out := kruiseappsv1alpha1.NodeImageSpec{}
	changed, next := false, time.Duration(0)
	for name, img := range ni.Spec.Images {
		var kept []kruiseappsv1alpha1.ImageTagSpec
		for _, tag := range img.Tags {
			left, ttl := ttlLeft(ni.Status.ImageStatuses[name], tag, now)
			if ttl && left <= 0 {
				changed = true
				continue
			}
			if ttl && (next == 0 || left < next) {
				next = left
			}
			kept = append(kept, tag)
		}
		if len(kept) == 0 {
			changed = true
			continue
		}
		img.Tags = kept
		if out.Images == nil {
			out.Images = map[string]kruiseappsv1alpha1.ImageSpec{}
		}
		out.Images[name] = img
	}
	if !changed {
		return ni.Spec, false, next
	}
	return out, true, next
}

// ttlLeft is how long the finished task of tag has left to live; ttl is false when it has no TTL or has
// not finished.
func ttlLeft(st kruiseappsv1alpha1.ImageStatus, tag kruiseappsv1alpha1.ImageTagSpec, now time.Time) (time.Duration, bool) {
	if tag.PullPolicy == nil || tag.PullPolicy.TTLSecondsAfterFinished == nil {
		return 0, false
	}
	for _, s := range st.Tags {
		if s.Tag == tag.Tag && s.Version == tag.Version && s.CompletionTime != nil {
			ttl := time.Duration(*tag.PullPolicy.TTLSecondsAfterFinished) * time.Second
			return s.CompletionTime.Add(ttl).Sub(now), true
		}
	}
	return 0, false
}
