package deployment

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
)

func TestNewReplicaSet(t *testing.T) {
	d := demoDeployment("ns", "web", 10)
	d.UID = "uid-web"
	d.Spec.MinReadySeconds = 5
	d.Status.CollisionCount = ptr.To[int32](2)
	d.Annotations = map[string]string{
		"team": "a", revisionAnnotation: "7", desiredReplicasAnnotation: "3",
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
	}
	old := []*appsv1.ReplicaSet{
		{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{revisionAnnotation: "4"}}},
		{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{revisionAnnotation: "x"}}},
	}
	rs := newReplicaSet(d, old, Step{To: 1}, Plan{DesiredReplicas: 10, MaxReplicas: 10})
	hash := control.ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	wantAnnotations := map[string]string{"team": "a", revisionAnnotation: "5",
		desiredReplicasAnnotation: "10", maxReplicasAnnotation: "10"}
	if diff := cmp.Diff(wantAnnotations, rs.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	ref := metav1.GetControllerOf(rs)
	switch {
	case rs.Name != "web-"+hash || rs.Namespace != "ns":
		t.Errorf("name %s/%s, want ns/web-%s", rs.Namespace, rs.Name, hash)
	case rs.Labels["pod-template-hash"] != hash || rs.Spec.Template.Labels["pod-template-hash"] != hash ||
		rs.Spec.Selector.MatchLabels["pod-template-hash"] != hash || rs.Spec.Selector.MatchLabels["app"] != "web":
		t.Errorf("hash label or selector: %v %v", rs.Labels, rs.Spec.Selector)
	case ref == nil || ref.UID != "uid-web" || ref.Kind != "Deployment" || !ptr.Deref(ref.BlockOwnerDeletion, false):
		t.Errorf("controller reference %+v", ref)
	case *rs.Spec.Replicas != 1 || rs.Spec.MinReadySeconds != 5 || !control.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template):
		t.Errorf("spec %+v", rs.Spec)
	case d.Spec.Template.Labels["pod-template-hash"] != "" || d.Spec.Selector.MatchLabels["pod-template-hash"] != "":
		t.Errorf("the Deployment was changed")
	}
}

func TestNewReplicaSetStamped(t *testing.T) {
	d := demoDeployment("ns", "web", 10)
	labels := control.BatchPodLabels("v2", 0)
	rs := newReplicaSet(d, nil, Step{To: 2, Relabel: true, Labels: labels}, Plan{})
	for k, v := range labels {
		if rs.Spec.Template.Labels[k] != v || rs.Labels[k] != "" {
			t.Errorf("label %s: template %q, ReplicaSet %q; want %q on the template only", k, rs.Spec.Template.Labels[k], rs.Labels[k], v)
		}
	}
	if control.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) || !control.EqualIgnoreHashAndBatch(&rs.Spec.Template, &d.Spec.Template) {
		t.Errorf("the stamped template must differ from the Deployment's but for the batch labels: %v", rs.Spec.Template.Labels)
	}
	if d.Spec.Template.Labels[rolloutsv1beta1.RolloutIDLabel] != "" {
		t.Errorf("the Deployment was changed")
	}
}

func TestReplicaSetName(t *testing.T) {
	long := strings.Repeat("a", 260)
	if got := replicaSetName(long, "abc"); len(got) != 253 || !strings.HasSuffix(got, "a-abc") {
		t.Errorf("replicaSetName(long) = %q (%d)", got, len(got))
	}
	if got := replicaSetName("web", "abc"); got != "web-abc" {
		t.Errorf("replicaSetName(web) = %q", got)
	}
}

func TestInt32Annotation(t *testing.T) {
	for value, want := range map[string]*int32{"10": ptr.To[int32](10), "0": ptr.To[int32](0), "-1": nil, "x": nil,
		"": nil, "2147483647": ptr.To[int32](2147483647), "2147483648": nil} {
		if got := int32Annotation(map[string]string{"k": value}, "k"); !cmp.Equal(got, want) {
			t.Errorf("int32Annotation(%q) = %v, want %v", value, ptr.Deref(got, -99), ptr.Deref(want, -99))
		}
	}
}
