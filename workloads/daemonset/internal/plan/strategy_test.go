package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappspub "github.com/flotilla-dev/flotilla/workloads/api/apps/pub"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
)

func ads(ru *kruiseappsv1alpha1.RollingUpdateDaemonSet, mutate ...func(*kruiseappsv1alpha1.DaemonSet)) *kruiseappsv1alpha1.DaemonSet {
	ds := &kruiseappsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "uid-1"},
		Spec: kruiseappsv1alpha1.DaemonSetSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}, Annotations: map[string]string{"a": "b"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}},
			},
			UpdateStrategy: kruiseappsv1alpha1.DaemonSetUpdateStrategy{Type: kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType, RollingUpdate: ru},
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

func pct(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
func num(n int) *intstr.IntOrString    { return ptr.To(intstr.FromInt(n)) }

func TestResolve(t *testing.T) {
	cmpStrategy := cmp.Comparer(func(a, b labels.Selector) bool {
		return (a == nil) == (b == nil) && (a == nil || a.String() == b.String())
	})
	tests := []struct {
		name    string
		ds      *kruiseappsv1alpha1.DaemonSet
		desired int
		want    Strategy
	}{
		{"percentages round up over the nodes", ads(&kruiseappsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: pct("10%"), Partition: pct("50%")}), 15,
			Strategy{Rolling: true, MaxUnavailable: 2, Partition: 8, Burst: 250}},
		{"neither unavailable nor surge allows one unavailable", ads(&kruiseappsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: num(0), MaxSurge: num(0)}), 4,
			Strategy{Rolling: true, MaxUnavailable: 1, Burst: 250}},
		{"no rollingUpdate at all", ads(nil), 4, Strategy{Rolling: true, MaxUnavailable: 1, Burst: 250}},
		{"surge, in place, paused, selector", ads(&kruiseappsv1alpha1.RollingUpdateDaemonSet{Type: kruiseappsv1alpha1.InplaceRollingUpdateType,
			MaxSurge: pct("25%"), Paused: ptr.To(true), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}}), 8,
			Strategy{Rolling: true, InPlace: true, MaxSurge: 2, Paused: true, Selector: labels.SelectorFromSet(labels.Set{"canary": "true"}), Burst: 250}},
		{"a selector that does not parse selects no node", ads(&kruiseappsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: num(1),
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}}}), 4,
			Strategy{Rolling: true, MaxUnavailable: 1, Selector: labels.Nothing(), Burst: 250}},
		{"OnDelete ignores rollingUpdate", ads(&kruiseappsv1alpha1.RollingUpdateDaemonSet{MaxUnavailable: num(3)}, func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy.Type = kruiseappsv1alpha1.OnDeleteDaemonSetStrategyType
		}), 4, Strategy{Burst: 250}},
		{"burst as a percentage rounds down, but never to 0; progressive; minReadySeconds", ads(nil, func(ds *kruiseappsv1alpha1.DaemonSet) {
			ds.Spec.BurstReplicas, ds.Spec.MinReadySeconds = pct("10%"), 7
			ds.Annotations = map[string]string{kruiseappsv1alpha1.ProgressiveCreatePodAnnotation: "true"}
		}), 5, Strategy{Rolling: true, MaxUnavailable: 1, Burst: 1, Progressive: true, MinReadySeconds: 7}},
		{"burst as a number", ads(nil, func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Spec.BurstReplicas = num(20) }), 500,
			Strategy{Rolling: true, MaxUnavailable: 1, Burst: 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Resolve(tt.ds, tt.desired), cmpStrategy); diff != "" {
				t.Errorf("strategy (-want +got):\n%s", diff)
			}
		})
	}
}

func node(labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func TestEligibility(t *testing.T) {
	spec := func(mutate func(*corev1.PodSpec)) *corev1.PodSpec {
		s := &corev1.PodSpec{Containers: []corev1.Container{{Name: "agent"}}}
		mutate(s)
		return DaemonSpec(s)
	}
	plain := spec(func(*corev1.PodSpec) {})
	gpu := map[string]string{"gpu": "true"}
	tests := []struct {
		name           string
		node           *corev1.Node
		spec           *corev1.PodSpec
		run, continues bool
	}{
		{"any node", node(nil), plain, true, true},
		{"nodeSelector matches", node(gpu), spec(func(s *corev1.PodSpec) { s.NodeSelector = gpu }), true, true},
		{"nodeSelector does not", node(nil), spec(func(s *corev1.PodSpec) { s.NodeSelector = gpu }), false, false},
		{"required affinity does not match", node(nil), spec(func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpExists}}}}}}}
		}), false, false},
		{"another nodeName", node(nil), spec(func(s *corev1.PodSpec) { s.NodeName = "b" }), false, false},
		{"an untolerated NoSchedule taint keeps new pods away only", node(nil, corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}), plain, false, true},
		{"an untolerated NoExecute taint evicts", node(nil, corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}), plain, false, false},
		{"a tolerated taint", node(nil, corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}), spec(func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}), true, true},
		{"cordoned and not-ready nodes still run daemons", node(nil, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}), plain, true, true},
		{"PreferNoSchedule is no bar", node(nil, corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}), plain, true, true},
	}
	for _, tt := range tests {
		run, cont := nodeplacement.Eligibility(tt.node, tt.spec)
		if run != tt.run || cont != tt.continues {
			t.Errorf("%s: eligibility = %v/%v, want %v/%v", tt.name, run, cont, tt.run, tt.continues)
		}
	}
}

func TestDaemonSpec(t *testing.T) {
	own := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}
	in := &corev1.PodSpec{HostNetwork: true, Tolerations: []corev1.Toleration{own, {Key: "mine", Operator: corev1.TolerationOpExists}}}
	got := DaemonSpec(in)
	if len(got.Tolerations) != 8 {
		t.Fatalf("tolerations = %v, want the 2 given, 5 more and network-unavailable for host networking", got.Tolerations)
	}
	if got.Tolerations[0].TolerationSeconds != nil {
		t.Errorf("an equal toleration keeps its place but takes the daemon's value: %v", got.Tolerations[0])
	}
	if len(in.Tolerations) != 2 || in.Tolerations[0].TolerationSeconds == nil {
		t.Error("DaemonSpec changed its input")
	}
	if again := DaemonSpec(got); len(again.Tolerations) != 8 {
		t.Errorf("applied twice: %d tolerations", len(again.Tolerations))
	}
}

func TestNewPod(t *testing.T) {
	ds := ads(nil, func(ds *kruiseappsv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
	})
	p := NewPod(ds, Revision{Hash: "6d8f", Generation: ptr.To[int64](3)}, true, "node-7")
	if p.GenerateName != "agent-" || p.Namespace != "ns" || metav1.GetControllerOf(p).UID != "uid-1" || metav1.GetControllerOf(p).Kind != "DaemonSet" {
		t.Errorf("identity: generateName=%q namespace=%q owner=%v", p.GenerateName, p.Namespace, p.OwnerReferences)
	}
	if diff := cmp.Diff(map[string]string{"app": "agent", HashLabel: "6d8f", GenerationLabel: "3"}, p.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if node, err := nodeplacement.TargetNode(p); err != nil || node != "node-7" || p.Spec.Affinity.PodAntiAffinity == nil {
		t.Errorf("pinned to %q (%v), anti-affinity kept: %v", node, err, p.Spec.Affinity.PodAntiAffinity != nil)
	}
	gates := []corev1.PodReadinessGate{{ConditionType: kruiseappspub.KruisePodReadyConditionType}, {ConditionType: kruiseappspub.InPlaceUpdateReady}}
	if diff := cmp.Diff(gates, p.Spec.ReadinessGates); diff != "" {
		t.Errorf("readiness gates (-want +got):\n%s", diff)
	}
	if ds.Spec.Template.Labels[HashLabel] != "" || ds.Spec.Template.Spec.Affinity.NodeAffinity != nil {
		t.Error("NewPod changed the template")
	}
	if p := NewPod(ads(nil), Revision{Hash: "x"}, false, "n"); len(p.Spec.ReadinessGates) != 1 || p.Labels[GenerationLabel] != "" {
		t.Errorf("standard update: gates %v, generation label %q", p.Spec.ReadinessGates, p.Labels[GenerationLabel])
	}
}

func TestRevisionOf(t *testing.T) {
	ds := ads(nil, func(ds *kruiseappsv1alpha1.DaemonSet) { ds.Annotations = map[string]string{GenerationAnnotation: "4"} })
	r := RevisionOf(ds, "h")
	if r.Generation == nil || *r.Generation != 4 {
		t.Fatalf("generation %v", r.Generation)
	}
	byGeneration := pod("a", "n", "other", 1, func(p *corev1.Pod) { p.Labels[GenerationLabel] = "4" })
	if !r.Updated(byGeneration) || !r.Updated(pod("b", "n", "h", 1)) || r.Updated(pod("c", "n", "other", 1)) {
		t.Error("a pod is updated by its hash or its template generation, and only then")
	}
	ds.Annotations[GenerationAnnotation] = "four"
	if RevisionOf(ds, "h").Generation != nil {
		t.Error("a generation that is no number counts")
	}
}
