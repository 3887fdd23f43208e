package rollout

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/trafficrouting"
)

func TestCanarySelector(t *testing.T) {
	stable := map[string]string{"app": "web", "track": "stable"}
	cases := []struct {
		name      string
		podLabels map[string]string
		appendAll bool
		want      map[string]string
	}{
		{"revision only", nil, false, map[string]string{"app": "web", "track": "stable", "pod-template-hash": "abc"}},
		{"patchPodTemplateMetadata replaces a shared key", map[string]string{"track": "canary", "extra": "x"}, false,
			map[string]string{"app": "web", "track": "canary", "pod-template-hash": "abc"}},
		{"AppendPodSelector adds the others", map[string]string{"track": "canary", "extra": "x"}, true,
			map[string]string{"app": "web", "track": "canary", "extra": "x", "pod-template-hash": "abc"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &network{revisionKey: "pod-template-hash", podLabels: c.podLabels, appendLabels: c.appendAll}
			if got := n.canarySelector(stable, "abc"); !maps.Equal(got, c.want) {
				t.Errorf("selector = %v, want %v", got, c.want)
			}
			if stable["track"] != "stable" {
				t.Error("the stable selector was changed")
			}
		})
	}
}

// The canary Service is the stable one without anything the apiserver allocates, owned by the Rollout.
func TestNewCanaryService(t *testing.T) {
	owner := metav1.OwnerReference{Kind: "Rollout", Name: "web", UID: "u1", Controller: ptr.To(true)}
	n := &network{cfg: trafficrouting.Config{Namespace: "ns", CanaryService: "web-canary", Owner: owner}}
	stable := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"team": "a"}, ResourceVersion: "7", UID: "s1"},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1"},
			ExternalIPs: []string{"1.2.3.4"}, LoadBalancerIP: "5.6.7.8", HealthCheckNodePort: 30001,
			IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack), IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 31000}},
			Selector: map[string]string{"app": "web"},
		},
	}
	got := n.newCanaryService(stable, map[string]string{"app": "web", "pod-template-hash": "abc"})
	if got.Name != "web-canary" || got.Namespace != "ns" || got.ResourceVersion != "" || got.UID != "" {
		t.Errorf("identity = %s/%s rv=%q uid=%q", got.Namespace, got.Name, got.ResourceVersion, got.UID)
	}
	s := got.Spec
	if kept := allocated(s); len(kept) > 0 {
		t.Errorf("allocated fields kept: %v", kept)
	}
	if s.Type != corev1.ServiceTypeLoadBalancer || s.Ports[0].Port != 80 || s.Selector["pod-template-hash"] != "abc" {
		t.Errorf("spec not copied: %+v", s)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "u1" || got.Labels["app"] != "web" || got.Annotations["team"] != "a" {
		t.Errorf("metadata = %+v", got.ObjectMeta)
	}
	if stable.Spec.ClusterIP != "10.0.0.1" || stable.Spec.Ports[0].NodePort != 31000 {
		t.Error("the stable Service was changed")
	}
}

// allocated names the fields of s the apiserver allocates that are set.
func allocated(s corev1.ServiceSpec) []string {
	fields := map[string]bool{
		"clusterIP": s.ClusterIP != "", "clusterIPs": s.ClusterIPs != nil, "externalIPs": s.ExternalIPs != nil,
		"loadBalancerIP": s.LoadBalancerIP != "", "healthCheckNodePort": s.HealthCheckNodePort != 0,
		"ipFamilies": s.IPFamilies != nil, "ipFamilyPolicy": s.IPFamilyPolicy != nil,
	}
	for _, p := range s.Ports {
		fields["nodePort"] = fields["nodePort"] || p.NodePort != 0
	}
	var set []string
	for name, isSet := range fields {
		if isSet {
			set = append(set, name)
		}
	}
	return set
}
