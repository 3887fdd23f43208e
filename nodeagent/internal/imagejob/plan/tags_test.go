package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func ref(uid types.UID) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob", Namespace: "ns", Name: string(uid), UID: uid}
}

func TestWithTag(t *testing.T) {
	policy := &kruiseappsv1alpha1.ImageTagPullPolicy{BackoffLimit: ptr.To[int32](1)}
	req := TagRequest{Image: "nginx", Tag: "1.27", Owner: ref(jobUID), CreatedAt: metav1.NewTime(at(5)), PullPolicy: policy,
		ImagePullPolicy: kruiseappsv1alpha1.PullAlways, Secrets: []kruiseappsv1alpha1.ReferenceObject{{Namespace: "cfg", Name: "s"}},
		SandboxConfig: &kruiseappsv1alpha1.SandboxConfig{Labels: map[string]string{"by": "job"}}}
	newTag := kruiseappsv1alpha1.ImageTagSpec{Tag: "1.27", OwnerReferences: []corev1.ObjectReference{ref(jobUID)}, CreatedAt: mtime(5),
		PullPolicy: policy, ImagePullPolicy: kruiseappsv1alpha1.PullAlways}
	for _, tc := range []struct {
		name    string
		ni      *kruiseappsv1alpha1.NodeImage
		version int64
		owners  []corev1.ObjectReference
		tags    int
	}{
		{"a new image starts at version 0", node("a", nil), 0, []corev1.ObjectReference{ref(jobUID)}, 1},
		{"a tag the agent reported before starts past that version", statusOnly(7), 8, []corev1.ObjectReference{ref(jobUID)}, 1},
		{"another job's tag gains the owner and a new version", tagged("a", []types.UID{"other"}, succeeded, 2, ""), 3,
			[]corev1.ObjectReference{ref("other"), ref(jobUID)}, 1},
		{"beside another tag of the image", withOtherTag(), 0, []corev1.ObjectReference{ref(jobUID)}, 2},
	} {
		spec, changed := WithTag(tc.ni, req)
		img := spec.Images["nginx"]
		want := newTag
		want.Version, want.OwnerReferences = tc.version, tc.owners
		i := len(img.Tags) - 1 // "1.27" sorts after "1.0"
		if !changed || len(img.Tags) != tc.tags || !cmp.Equal(req.Secrets, img.PullSecrets) || img.SandboxConfig.Labels["by"] != "job" {
			t.Errorf("%s: changed %v, image %+v", tc.name, changed, img)
			continue
		}
		if diff := cmp.Diff(want, img.Tags[i]); diff != "" {
			t.Errorf("%s: tag (-want +got):\n%s", tc.name, diff)
		}
		if _, again := WithTag(&kruiseappsv1alpha1.NodeImage{Spec: spec}, req); again {
			t.Errorf("%s: a second write changed the spec", tc.name)
		}
	}
}

func statusOnly(version int64) *kruiseappsv1alpha1.NodeImage {
	ni := node("a", nil)
	ni.Status.ImageStatuses = map[string]kruiseappsv1alpha1.ImageStatus{"nginx": {Tags: []kruiseappsv1alpha1.ImageTagStatus{{Tag: "1.27", Version: version}}}}
	return ni
}

func withOtherTag() *kruiseappsv1alpha1.NodeImage {
	ni := node("a", nil)
	ni.Spec.Images = map[string]kruiseappsv1alpha1.ImageSpec{"nginx": {Tags: []kruiseappsv1alpha1.ImageTagSpec{{Tag: "1.0"}}}}
	return ni
}

func TestWithoutOwners(t *testing.T) {
	spec := kruiseappsv1alpha1.NodeImageSpec{Images: map[string]kruiseappsv1alpha1.ImageSpec{
		"nginx": {Tags: []kruiseappsv1alpha1.ImageTagSpec{
			{Tag: "shared", OwnerReferences: []corev1.ObjectReference{ref("gone"), ref("kept")}},
			{Tag: "only-gone", OwnerReferences: []corev1.ObjectReference{ref("gone")}},
			{Tag: "by-hand"},
		}},
		"redis": {Tags: []kruiseappsv1alpha1.ImageTagSpec{{Tag: "7", OwnerReferences: []corev1.ObjectReference{ref("gone")}}}},
	}}
	drop := func(r corev1.ObjectReference) bool { return r.UID == "gone" }
	out, changed := WithoutOwners(spec, drop)
	want := kruiseappsv1alpha1.NodeImageSpec{Images: map[string]kruiseappsv1alpha1.ImageSpec{
		"nginx": {Tags: []kruiseappsv1alpha1.ImageTagSpec{
			{Tag: "shared", OwnerReferences: []corev1.ObjectReference{ref("kept")}},
			{Tag: "by-hand"},
		}},
	}}
	if diff := cmp.Diff(want, out); diff != "" || !changed {
		t.Errorf("changed %v, spec (-want +got):\n%s", changed, diff)
	}
	if len(spec.Images["nginx"].Tags[0].OwnerReferences) != 2 {
		t.Error("the input spec was changed")
	}
	if _, changed := WithoutOwners(out, drop); changed {
		t.Error("nothing to drop, yet changed")
	}
}

func TestOwnerKeysAndStateOf(t *testing.T) {
	ni := tagged("a", []types.UID{"b-job", "a-job"}, failed, 2, "401 Unauthorized")
	ni.Spec.Images["redis"] = kruiseappsv1alpha1.ImageSpec{Tags: []kruiseappsv1alpha1.ImageTagSpec{{Tag: "7",
		OwnerReferences: []corev1.ObjectReference{ref("a-job"), {Kind: "CloneSet", Namespace: "ns", Name: "cs"}}}}}
	if got := OwnerKeys(ni); !cmp.Equal(got, []string{"ns/a-job", "ns/b-job"}) {
		t.Errorf("OwnerKeys = %v", got)
	}
	if s, msg := StateOf(ni, "nginx", "1.27", "a-job"); s != Failed || msg != "401 Unauthorized" {
		t.Errorf("StateOf owner = %v %q", s, msg)
	}
	if s, _ := StateOf(ni, "nginx", "1.27", "stranger"); s != Waiting {
		t.Errorf("StateOf stranger = %v", s)
	}
	if s, _ := StateOf(ni, "redis", "7", "a-job"); s != Active {
		t.Errorf("StateOf without status = %v", s)
	}
}
