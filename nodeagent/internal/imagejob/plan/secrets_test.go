package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

func source(data string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "registry", UID: "src-uid"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(data)}}
}

func TestCopy(t *testing.T) {
	first, write := Copy(source("v1"), nil, "cfg", "team/job-a")
	want := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cfg", Name: CopyName("team", "registry"),
		Annotations: map[string]string{kruiseappsv1alpha1.ImagePullJobSecretSourceKeyAnnotation: "team/registry",
			kruiseappsv1alpha1.ImagePullJobSecretReferencesAnnotation: "team/job-a"},
		Labels: map[string]string{kruiseappsv1alpha1.ImagePullJobSecretSourceUIDLabel: "src-uid"}},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("v1")}}
	if diff := cmp.Diff(want, first); diff != "" || !write {
		t.Fatalf("first copy: write %v (-want +got):\n%s", write, diff)
	}
	if _, write := Copy(source("v1"), first, "cfg", "team/job-a"); write {
		t.Error("an up-to-date copy was written again")
	}
	second, write := Copy(source("v2"), first, "cfg", "team/job-b")
	if !write || second.Annotations[kruiseappsv1alpha1.ImagePullJobSecretReferencesAnnotation] != "team/job-a,team/job-b" ||
		string(second.Data[corev1.DockerConfigJsonKey]) != "v2" {
		t.Errorf("a second job and new data: write %v, %+v", write, second)
	}

	next, del, write := Release(second, "team/job-a")
	if del || !write || next.Annotations[kruiseappsv1alpha1.ImagePullJobSecretReferencesAnnotation] != "team/job-b" {
		t.Errorf("release one of two: del %v write %v %v", del, write, next.Annotations)
	}
	if _, del, write := Release(next, "team/job-b"); !del || write {
		t.Errorf("release the last: del %v write %v", del, write)
	}
	if _, del, write := Release(next, "team/stranger"); del || write {
		t.Errorf("release by a job not referenced: del %v write %v", del, write)
	}
}

func TestCopyName(t *testing.T) {
	a, b := CopyName("a-b", "c"), CopyName("a", "b-c")
	if a == b || !strings.HasPrefix(a, "a-b-c-") {
		t.Errorf("CopyName: %q and %q", a, b)
	}
	long := CopyName(strings.Repeat("n", 63), strings.Repeat("s", 253))
	if errs := validation.IsDNS1123Subdomain(long); len(errs) > 0 {
		t.Errorf("CopyName of long names %q: %v", long, errs)
	}
}
