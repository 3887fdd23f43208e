package control

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/workloads/revision"
)

func memoTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
	}
}

func memoDeployment(uid types.UID, gen int64, image string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{UID: uid, Generation: gen},
		Spec: appsv1.DeploymentSpec{Template: memoTemplate(image)}}
}

func TestIsNewReplicaSet(t *testing.T) {
	replicaSet := func(uid types.UID, gen int64, image string) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{UID: uid, Generation: gen},
			Spec: appsv1.ReplicaSetSpec{Template: memoTemplate(image)}}
		rs.Spec.Template.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "h"}
		return rs
	}
	// In order, as reconciles would find the objects: every answer must be the comparison's.
	steps := []struct {
		name string
		rs   *appsv1.ReplicaSet
		d    *appsv1.Deployment
		want bool
	}{
		{"the ReplicaSet of the Deployment's template", replicaSet("memo-rs", 1, "v1"), memoDeployment("memo-d", 1, "v1"), true},
		{"the same pair at the same generations", replicaSet("memo-rs", 1, "v1"), memoDeployment("memo-d", 1, "v1"), true},
		{"the Deployment's template changed, with its generation", replicaSet("memo-rs", 1, "v1"), memoDeployment("memo-d", 2, "v2"), false},
		{"a ReplicaSet of the new template", replicaSet("memo-rs2", 1, "v2"), memoDeployment("memo-d", 2, "v2"), true},
		{"the old ReplicaSet scaled: a new generation, its template", replicaSet("memo-rs", 2, "v1"), memoDeployment("memo-d", 2, "v2"), false},
		{"objects built in memory", replicaSet("", 0, "v3"), memoDeployment("", 0, "v3"), true},
		{"objects built in memory, other templates", replicaSet("", 0, "v3"), memoDeployment("", 0, "v4"), false},
	}
	for _, s := range steps {
		if got := isNewReplicaSet(s.rs, s.d); got != s.want {
			t.Errorf("%s: %v, want %v", s.name, got, s.want)
		}
	}
}

func TestTemplateHash(t *testing.T) {
	steps := []struct {
		name string
		d    *appsv1.Deployment
	}{
		{"a stored Deployment", memoDeployment("hash-d", 1, "v1")},
		{"its next generation, another template", memoDeployment("hash-d", 2, "v2")},
		{"a collision at that generation", func() *appsv1.Deployment {
			d := memoDeployment("hash-d", 2, "v2")
			d.Status.CollisionCount = ptr.To[int32](1)
			return d
		}()},
		{"built in memory", memoDeployment("", 0, "v3")},
	}
	seen := map[string]string{}
	for _, s := range steps {
		want := ComputeHash(&s.d.Spec.Template, s.d.Status.CollisionCount)
		for range 2 {
			if got := templateHash(s.d); got != want {
				t.Errorf("%s: %s, want %s", s.name, got, want)
			}
		}
		if other, ok := seen[want]; ok {
			t.Errorf("%s: the same hash as %s", s.name, other)
		}
		seen[want] = s.name
	}
}

func TestRecordsDaemonSetTemplate(t *testing.T) {
	tmpl := memoTemplate("v1")
	data, err := revision.TemplatePatch(&tmpl)
	if err != nil {
		t.Fatal(err)
	}
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{UID: "memo-cr"}, Data: runtime.RawExtension{Raw: data}}
	daemonSet := func(uid types.UID, gen int64, image string) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{UID: uid, Generation: gen},
			Spec: appsv1.DaemonSetSpec{Template: memoTemplate(image)}}
	}
	// In order, as reconciles would find the objects: every answer must be the decoded revision's.
	steps := []struct {
		name string
		ds   *appsv1.DaemonSet
		want bool
	}{
		{"the revision of the DaemonSet's template", daemonSet("memo-ds", 1, "v1"), true},
		{"the same DaemonSet at the same generation", daemonSet("memo-ds", 1, "v1"), true},
		{"the template changed with the generation", daemonSet("memo-ds", 2, "v2"), false},
		{"another DaemonSet of the same template", daemonSet("memo-ds-2", 1, "v1"), true},
		{"a DaemonSet built in memory is always compared", daemonSet("", 0, "v3"), false},
	}
	for _, s := range steps {
		if got := recordsDaemonSetTemplate(cr, s.ds); got != s.want {
			t.Errorf("%s: records = %v, want %v", s.name, got, s.want)
		}
	}
}
