package plan

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

func render(t *testing.T, u *kruiseappsv1alpha1.UnitedDeployment, s kruiseappsv1alpha1.Subset, replicas, partition int32) any {
	t.Helper()
	k, err := KindOf(u)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := Render(k, u, Desired{Subset: &s, Revision: "web-abc", Replicas: replicas, Partition: partition})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestRenderCloneSet(t *testing.T) {
	u := ud(n(6), sub("zone-a"))
	cs := render(t, u, u.Spec.Topology.Subsets[0], 2, 1).(*kruiseappsv1alpha1.CloneSet)
	if cs.Name != WorkloadName(u, "zone-a") || cs.Namespace != "ns" || len(cs.Name) != len("web-zone-a-")+5 {
		t.Errorf("name %s/%s", cs.Namespace, cs.Name)
	}
	wantLabels := map[string]string{"app": "web", "tier": "front", kruiseappsv1alpha1.SubSetNameLabelKey: "zone-a",
		kruiseappsv1alpha1.ControllerRevisionHashLabelKey: "web-abc"}
	if !equality.Semantic.DeepEqual(cs.Labels, wantLabels) {
		t.Errorf("labels %v", cs.Labels)
	}
	if cs.Annotations["note"] != "x" || cs.Annotations[kruiseappsv1alpha1.AnnotationSubsetPatchKey] != "" {
		t.Errorf("annotations %v", cs.Annotations)
	}
	if ref := metav1.GetControllerOf(cs); ref == nil || ref.UID != "uid-1" || ref.Kind != "UnitedDeployment" {
		t.Errorf("controller %+v", ref)
	}
	if *cs.Spec.Replicas != 2 || cs.Spec.UpdateStrategy.Partition.IntValue() != 1 {
		t.Errorf("replicas %d partition %v", *cs.Spec.Replicas, cs.Spec.UpdateStrategy.Partition)
	}
	if cs.Spec.Selector.MatchLabels[kruiseappsv1alpha1.SubSetNameLabelKey] != "zone-a" || u.Spec.Selector.MatchLabels[kruiseappsv1alpha1.SubSetNameLabelKey] != "" {
		t.Errorf("selector %v (the UnitedDeployment's: %v)", cs.Spec.Selector, u.Spec.Selector)
	}
	pod := cs.Spec.Template
	if pod.Labels[kruiseappsv1alpha1.SubSetNameLabelKey] != "zone-a" || pod.Labels[kruiseappsv1alpha1.ControllerRevisionHashLabelKey] != "web-abc" {
		t.Errorf("pod labels %v", pod.Labels)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || !equality.Semantic.DeepEqual(terms[0], u.Spec.Topology.Subsets[0].NodeSelectorTerm) {
		t.Errorf("node terms %+v", terms)
	}
	if u.Spec.Template.CloneSetTemplate.Spec.Template.Spec.Affinity != nil {
		t.Error("Render changed the UnitedDeployment's template")
	}
}

// A template's own required terms each get the subset's term ANDed; its tolerations stay, the subset's are
// added once.
func TestRenderMergesAffinityAndTolerations(t *testing.T) {
	u := ud(n(2), sub("zone-b"))
	spec := &u.Spec.Template.CloneSetTemplate.Spec.Template.Spec
	own := corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{own}}, {MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}},
	}}}
	shared := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}
	spec.Tolerations = []corev1.Toleration{shared}
	s := u.Spec.Topology.Subsets[0]
	s.Tolerations = []corev1.Toleration{shared, {Key: "zone-b", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	pod := render(t, u, s, 1, 0).(*kruiseappsv1alpha1.CloneSet).Spec.Template
	zone := s.NodeSelectorTerm.MatchExpressions[0]
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 2 || !equality.Semantic.DeepEqual(terms[0].MatchExpressions, []corev1.NodeSelectorRequirement{own, zone}) ||
		!equality.Semantic.DeepEqual(terms[1].MatchExpressions, []corev1.NodeSelectorRequirement{zone}) {
		t.Errorf("terms %+v", terms)
	}
	if len(pod.Spec.Tolerations) != 2 || pod.Spec.Tolerations[1].Key != "zone-b" {
		t.Errorf("tolerations %+v", pod.Spec.Tolerations)
	}
	if len(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions) != 1 {
		t.Error("Render changed the template's affinity")
	}
}

// The patch is a strategic merge patch of the pod template, recorded in the annotation.
func TestRenderAppliesPatch(t *testing.T) {
	u := ud(n(2), sub("zone-c"))
	s := u.Spec.Topology.Subsets[0]
	s.Patch = runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"zone":"c"}},"spec":{"containers":[{"name":"main","image":"nginx:2","env":[{"name":"Z","value":"c"}]}]}}`)}
	cs := render(t, u, s, 1, 0).(*kruiseappsv1alpha1.CloneSet)
	c := cs.Spec.Template.Spec.Containers
	if len(c) != 1 || c[0].Image != "nginx:2" || len(c[0].Env) != 1 || cs.Spec.Template.Labels["zone"] != "c" || cs.Spec.Template.Labels["app"] != "web" {
		t.Errorf("patched template %+v", cs.Spec.Template)
	}
	if cs.Annotations[kruiseappsv1alpha1.AnnotationSubsetPatchKey] != string(s.Patch.Raw) {
		t.Errorf("patch annotation %q", cs.Annotations[kruiseappsv1alpha1.AnnotationSubsetPatchKey])
	}
	s.Patch.Raw = []byte(`{"spec":{"containers":"not a list"}}`)
	if _, err := Render(cloneSetKind{}, u, Desired{Subset: &s}); err == nil {
		t.Error("a patch that does not apply rendered")
	}
}

// Each kind's partition lands in its own field; a Deployment has none, and an OnDelete StatefulSet takes no
// rollingUpdate.
func TestRenderPartitionPerKind(t *testing.T) {
	base := ud(n(4), sub("z"))
	pod := base.Spec.Template.CloneSetTemplate.Spec.Template
	meta := base.Spec.Template.CloneSetTemplate.ObjectMeta
	tmpl := func(set func(*kruiseappsv1alpha1.SubsetTemplate)) *kruiseappsv1alpha1.UnitedDeployment {
		u := base.DeepCopy()
		u.Spec.Template = kruiseappsv1alpha1.SubsetTemplate{}
		set(&u.Spec.Template)
		return u
	}
	asts := render(t, tmpl(func(st *kruiseappsv1alpha1.SubsetTemplate) {
		st.AdvancedStatefulSetTemplate = &kruiseappsv1alpha1.AdvancedStatefulSetTemplateSpec{ObjectMeta: meta, Spec: kruiseappsv1beta1.StatefulSetSpec{Template: pod}}
	}), base.Spec.Topology.Subsets[0], 4, 3).(*kruiseappsv1beta1.StatefulSet)
	if *asts.Spec.UpdateStrategy.RollingUpdate.Partition != 3 || *asts.Spec.Replicas != 4 {
		t.Errorf("Advanced StatefulSet %+v", asts.Spec.UpdateStrategy)
	}
	sts := render(t, tmpl(func(st *kruiseappsv1alpha1.SubsetTemplate) {
		st.StatefulSetTemplate = &kruiseappsv1alpha1.StatefulSetTemplateSpec{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Template: pod}}
	}), base.Spec.Topology.Subsets[0], 4, 2).(*appsv1.StatefulSet)
	if *sts.Spec.UpdateStrategy.RollingUpdate.Partition != 2 {
		t.Errorf("StatefulSet %+v", sts.Spec.UpdateStrategy)
	}
	onDelete := render(t, tmpl(func(st *kruiseappsv1alpha1.SubsetTemplate) {
		st.StatefulSetTemplate = &kruiseappsv1alpha1.StatefulSetTemplateSpec{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Template: pod,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}}
	}), base.Spec.Topology.Subsets[0], 4, 2).(*appsv1.StatefulSet)
	if onDelete.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Errorf("OnDelete StatefulSet %+v", onDelete.Spec.UpdateStrategy)
	}
	d := render(t, tmpl(func(st *kruiseappsv1alpha1.SubsetTemplate) {
		st.DeploymentTemplate = &kruiseappsv1alpha1.DeploymentTemplateSpec{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Template: pod, Paused: false}}
	}), base.Spec.Topology.Subsets[0], 4, 2).(*appsv1.Deployment)
	if *d.Spec.Replicas != 4 || d.Spec.Paused {
		t.Errorf("Deployment %+v", d.Spec)
	}
	if _, _, got := (deploymentKind{}).read(&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4)},
		Status: appsv1.DeploymentStatus{Replicas: 5, ReadyReplicas: 4, UpdatedReplicas: 3}}); got != (Counts{5, 4, 3, 2}) {
		t.Errorf("Deployment counts %+v, want updated-and-ready estimated at 2", got)
	}
}

func TestKindOfNeedsExactlyOneTemplate(t *testing.T) {
	u := ud(n(1), sub("a"))
	u.Spec.Template.DeploymentTemplate = &kruiseappsv1alpha1.DeploymentTemplateSpec{}
	if _, err := KindOf(u); err == nil {
		t.Error("two templates accepted")
	}
	u.Spec.Template = kruiseappsv1alpha1.SubsetTemplate{}
	if _, err := KindOf(u); err == nil {
		t.Error("no template accepted")
	}
}

// The revision data upstream records: the template replaced whole, keys sorted, unset creation times null.
func TestRevisionData(t *testing.T) {
	u := ud(n(1), sub("a"))
	u.Spec.Template.CloneSetTemplate.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	raw, err := RevisionData(u)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"template":{"$patch":"replace","cloneSetTemplate":{"metadata":{"annotations":{"note":"x"},"creationTimestamp":null,` +
		`"labels":{"app":"web","tier":"front"}},"spec":{"scaleStrategy":{},"selector":null,"template":{"metadata":{"creationTimestamp":null,` +
		`"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx:1","name":"main","resources":{}}]}},"updateStrategy":{},` +
		`"volumeClaimTemplates":[{"metadata":{"creationTimestamp":null,"name":"data"},"spec":{"resources":{}},"status":{}}]}}}}}`
	if string(raw) != want {
		t.Errorf("revision data\n%s\nwant\n%s", raw, want)
	}
}
