package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/ordinals"
)

const (
	zone     = "topology.kubernetes.io/zone"
	hostname = "kubernetes.io/hostname"
	podIP    = "cni.example.com/ip"
)

// nodes are the cluster's nodes by name, with their labels.
var nodes = map[string]map[string]string{
	"node-a": {zone: "z1", hostname: "node-a", "other": "x"},
	"node-b": {zone: "z2", hostname: "node-b"},
	"node-c": {hostname: "node-c"},
}

// pps is a PersistentPodState of StatefulSet web requiring the zone, preferring the host, keeping the IP
// annotation, with records.
func pps(states map[string]kruiseappsv1alpha1.PodState) *kruiseappsv1alpha1.PersistentPodState {
	p := &kruiseappsv1alpha1.PersistentPodState{}
	p.Name = "web"
	p.Spec.TargetReference = kruiseappsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}
	p.Spec.RequiredPersistentTopology = &kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone}}
	p.Spec.PreferredPersistentTopology = []kruiseappsv1alpha1.PreferredTopologyTerm{
		{Weight: 100, Preference: kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{hostname}}}}
	p.Spec.PersistentPodAnnotations = []kruiseappsv1alpha1.PersistentPodAnnotation{{Key: podIP}}
	p.Status.PodStates = states
	return p
}

func state(node, z string, ip string) kruiseappsv1alpha1.PodState {
	s := kruiseappsv1alpha1.PodState{NodeName: node, NodeTopologyLabels: map[string]string{hostname: node}}
	if z != "" {
		s.NodeTopologyLabels[zone] = z
	}
	if ip != "" {
		s.Annotations = map[string]string{podIP: ip}
	}
	return s
}

func ready(name, node, ip string) Pod {
	p := Pod{Name: name, NodeName: node, Ready: true}
	if ip != "" {
		p.Annotations = map[string]string{podIP: ip}
	}
	return p
}

func web(replicas int32) Workload { return Workload{Exists: true, Name: "web", Replicas: replicas} }

func TestStatus(t *testing.T) {
	reserved, _ := ordinals.ParseReserved([]intstr.IntOrString{intstr.FromInt32(1)})
	tests := []struct {
		name string
		pps  *kruiseappsv1alpha1.PersistentPodState
		w    Workload
		pods []Pod
		want map[string]kruiseappsv1alpha1.PodState
	}{
		{name: "Ready pods are recorded with their node's topology and their annotations",
			pps: pps(nil), w: web(3),
			pods: []Pod{ready("web-0", "node-a", "10.0.0.1"), ready("web-1", "node-b", ""), ready("web-2", "node-c", "")},
			want: map[string]kruiseappsv1alpha1.PodState{
				"web-0": state("node-a", "z1", "10.0.0.1"), "web-1": state("node-b", "z2", ""), "web-2": state("node-c", "", "")}},
		{name: "a pod not Ready, not scheduled, or on an unknown node keeps its record",
			pps: pps(map[string]kruiseappsv1alpha1.PodState{"web-0": state("node-a", "z1", ""), "web-2": state("node-c", "", "")}), w: web(3),
			pods: []Pod{{Name: "web-0", NodeName: "node-b"}, ready("web-1", "", ""), ready("web-2", "node-gone", "")},
			want: map[string]kruiseappsv1alpha1.PodState{"web-0": state("node-a", "z1", ""), "web-2": state("node-c", "", "")}},
		{name: "a pod recreated on another node is recorded again",
			pps: pps(map[string]kruiseappsv1alpha1.PodState{"web-0": state("node-a", "z1", "10.0.0.1")}), w: web(1),
			pods: []Pod{ready("web-0", "node-b", "10.0.0.9")},
			want: map[string]kruiseappsv1alpha1.PodState{"web-0": state("node-b", "z2", "10.0.0.9")}},
		{name: "a gone pod whose ordinal the StatefulSet still has keeps its record",
			pps: pps(map[string]kruiseappsv1alpha1.PodState{"web-1": state("node-b", "z2", "")}), w: web(2),
			want: map[string]kruiseappsv1alpha1.PodState{"web-1": state("node-b", "z2", "")}},
		{name: "scaled away: the gone pod's record goes, a remaining pod's stays",
			pps: pps(map[string]kruiseappsv1alpha1.PodState{
				"web-0": state("node-a", "z1", ""), "web-1": state("node-b", "z2", ""), "web-2": state("node-c", "", "")}), w: web(1),
			pods: []Pod{{Name: "web-2", NodeName: "node-c"}},
			want: map[string]kruiseappsv1alpha1.PodState{"web-0": state("node-a", "z1", ""), "web-2": state("node-c", "", "")}},
		{name: "a reserved ordinal is scaled away",
			pps:  pps(map[string]kruiseappsv1alpha1.PodState{"web-1": state("node-b", "z2", ""), "web-2": state("node-c", "", "")}),
			w:    Workload{Exists: true, Name: "web", Replicas: 2, Reserved: reserved},
			want: map[string]kruiseappsv1alpha1.PodState{"web-2": state("node-c", "", "")}},
		{name: "ordinals from start", pps: pps(map[string]kruiseappsv1alpha1.PodState{"web-0": state("node-a", "z1", ""), "web-5": state("node-b", "z2", "")}),
			w: Workload{Exists: true, Name: "web", Start: 5, Replicas: 1}, want: map[string]kruiseappsv1alpha1.PodState{"web-5": state("node-b", "z2", "")}},
		{name: "WhenDeleted keeps the records of pods scaled away", w: web(0),
			pps: func() *kruiseappsv1alpha1.PersistentPodState {
				p := pps(map[string]kruiseappsv1alpha1.PodState{"web-1": state("node-b", "z2", "")})
				p.Spec.PersistentPodStateRetentionPolicy = kruiseappsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted
				return p
			}(),
			want: map[string]kruiseappsv1alpha1.PodState{"web-1": state("node-b", "z2", "")}},
		{name: "a name that is not the StatefulSet's keeps its record", w: web(0),
			pps:  pps(map[string]kruiseappsv1alpha1.PodState{"other-1": state("node-b", "z2", "")}),
			want: map[string]kruiseappsv1alpha1.PodState{"other-1": state("node-b", "z2", "")}},
		{name: "the StatefulSet gone: no records", w: Workload{},
			pps: pps(map[string]kruiseappsv1alpha1.PodState{"web-0": state("node-a", "z1", "")}), pods: []Pod{ready("web-0", "node-a", "")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := tc.pps.DeepCopy()
			got := Status(tc.pps, 7, tc.w, tc.pods, nodes)
			if got.ObservedGeneration != 7 {
				t.Errorf("observedGeneration %d", got.ObservedGeneration)
			}
			if diff := cmp.Diff(tc.want, got.PodStates); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if !cmp.Equal(orig, tc.pps) {
				t.Error("Status changed the PersistentPodState it was given")
			}
		})
	}
}

func TestTopologyKeys(t *testing.T) {
	spec := pps(nil).Spec
	spec.PreferredPersistentTopology = append(spec.PreferredPersistentTopology,
		kruiseappsv1alpha1.PreferredTopologyTerm{Weight: 10, Preference: kruiseappsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{zone, "rack"}}})
	if diff := cmp.Diff([]string{hostname, "rack", zone}, TopologyKeys(&spec)); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}
