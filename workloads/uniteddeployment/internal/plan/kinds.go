package plan

import (
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
)

// ErrNoTemplate means the UnitedDeployment's template holds no workload, or more than one.
var ErrNoTemplate = errors.New("spec.template must hold exactly one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, deploymentTemplate")

// Counts are a subset workload's pods as its status reports them.
type Counts struct {
	Replicas, Ready, Updated, UpdatedReady int32
}

// Kind is one kind of subset workload: how to build it from the UnitedDeployment's template and how to read
// it back.
type Kind interface {
	// Name is the workload's kind, for messages.
	Name() string
	// New and NewList are empty objects of the kind, to read into.
	New() client.Object
	NewList() client.ObjectList
	// Items are the objects of a list of the kind.
	Items(client.ObjectList) []client.Object
	// template is the workload template of ud, if it is of the kind.
	template(ud *kruiseappsv1alpha1.UnitedDeployment) (*metav1.ObjectMeta, *corev1.PodTemplateSpec, bool)
	// assemble builds the workload's spec around the rendered pod template.
	assemble(ud *kruiseappsv1alpha1.UnitedDeployment, sel *metav1.LabelSelector, pod corev1.PodTemplateSpec, replicas, partition int32) client.Object
	// read returns the workload's spec.replicas, partition and pod counts.
	read(client.Object) (replicas, partition int32, c Counts)
}

// Kinds are the four kinds a subset workload can be.
var Kinds = []Kind{cloneSetKind{}, advancedStatefulSetKind{}, statefulSetKind{}, deploymentKind{}}

// KindOf is the kind of ud's subset workloads.
func KindOf(ud *kruiseappsv1alpha1.UnitedDeployment) (Kind, error) {
	var found []Kind
	for _, k := range Kinds {
		if _, _, ok := k.template(ud); ok {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return nil, ErrNoTemplate
	}
	return found[0], nil
}

type cloneSetKind struct{}

func (cloneSetKind) Name() string               { return "CloneSet" }
func (cloneSetKind) New() client.Object         { return &kruiseappsv1alpha1.CloneSet{} }
func (cloneSetKind) NewList() client.ObjectList { return &kruiseappsv1alpha1.CloneSetList{} }
func (cloneSetKind) Items(l client.ObjectList) []client.Object {
	return items(l.(*kruiseappsv1alpha1.CloneSetList).Items)
}

func (cloneSetKind) template(ud *kruiseappsv1alpha1.UnitedDeployment) (*metav1.ObjectMeta, *corev1.PodTemplateSpec, bool) {
	t := ud.Spec.Template.CloneSetTemplate
	if t == nil {
		return nil, nil, false
	}
	return &t.ObjectMeta, &t.Spec.Template, true
}

func (cloneSetKind) assemble(ud *kruiseappsv1alpha1.UnitedDeployment, sel *metav1.LabelSelector, pod corev1.PodTemplateSpec, replicas, partition int32) client.Object {
	cs := &kruiseappsv1alpha1.CloneSet{Spec: *ud.Spec.Template.CloneSetTemplate.Spec.DeepCopy()}
	cs.Spec.Selector, cs.Spec.Template, cs.Spec.Replicas = sel, pod, ptr.To(replicas)
	cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(partition))
	return cs
}

func (cloneSetKind) read(obj client.Object) (int32, int32, Counts) {
	cs := obj.(*kruiseappsv1alpha1.CloneSet)
	var partition int32
	if p := cs.Spec.UpdateStrategy.Partition; p != nil && p.Type == intstr.Int {
		partition = p.IntVal
	}
	s := cs.Status
	return ptr.Deref(cs.Spec.Replicas, 1), partition, observed(cs, s.ObservedGeneration, Counts{s.Replicas, s.ReadyReplicas, s.UpdatedReplicas, s.UpdatedReadyReplicas})
}

type advancedStatefulSetKind struct{}

func (advancedStatefulSetKind) Name() string       { return "StatefulSet.apps.kruise.io" }
func (advancedStatefulSetKind) New() client.Object { return &kruiseappsv1beta1.StatefulSet{} }
func (advancedStatefulSetKind) NewList() client.ObjectList {
	return &kruiseappsv1beta1.StatefulSetList{}
}
func (advancedStatefulSetKind) Items(l client.ObjectList) []client.Object {
	return items(l.(*kruiseappsv1beta1.StatefulSetList).Items)
}

func (advancedStatefulSetKind) template(ud *kruiseappsv1alpha1.UnitedDeployment) (*metav1.ObjectMeta, *corev1.PodTemplateSpec, bool) {
	t := ud.Spec.Template.AdvancedStatefulSetTemplate
	if t == nil {
		return nil, nil, false
	}
	return &t.ObjectMeta, &t.Spec.Template, true
}

func (advancedStatefulSetKind) assemble(ud *kruiseappsv1alpha1.UnitedDeployment, sel *metav1.LabelSelector, pod corev1.PodTemplateSpec, replicas, partition int32) client.Object {
	sts := &kruiseappsv1beta1.StatefulSet{Spec: *ud.Spec.Template.AdvancedStatefulSetTemplate.Spec.DeepCopy()}
	sts.Spec.Selector, sts.Spec.Template, sts.Spec.Replicas = sel, pod, ptr.To(replicas)
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		if sts.Spec.UpdateStrategy.RollingUpdate == nil {
			sts.Spec.UpdateStrategy.RollingUpdate = &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{}
		}
		sts.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(partition)
	}
	return sts
}

func (advancedStatefulSetKind) read(obj client.Object) (int32, int32, Counts) {
	sts := obj.(*kruiseappsv1beta1.StatefulSet)
	var partition int32
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		partition = ptr.Deref(ru.Partition, 0)
	}
	s := sts.Status
	return ptr.Deref(sts.Spec.Replicas, 1), partition, observed(sts, s.ObservedGeneration, Counts{s.Replicas, s.ReadyReplicas, s.UpdatedReplicas, s.UpdatedReadyReplicas})
}

type statefulSetKind struct{}

func (statefulSetKind) Name() string               { return "StatefulSet" }
func (statefulSetKind) New() client.Object         { return &appsv1.StatefulSet{} }
func (statefulSetKind) NewList() client.ObjectList { return &appsv1.StatefulSetList{} }
func (statefulSetKind) Items(l client.ObjectList) []client.Object {
	return items(l.(*appsv1.StatefulSetList).Items)
}

func (statefulSetKind) template(ud *kruiseappsv1alpha1.UnitedDeployment) (*metav1.ObjectMeta, *corev1.PodTemplateSpec, bool) {
	t := ud.Spec.Template.StatefulSetTemplate
	if t == nil {
		return nil, nil, false
	}
	return &t.ObjectMeta, &t.Spec.Template, true
}

func (statefulSetKind) assemble(ud *kruiseappsv1alpha1.UnitedDeployment, sel *metav1.LabelSelector, pod corev1.PodTemplateSpec, replicas, partition int32) client.Object {
	sts := &appsv1.StatefulSet{Spec: *ud.Spec.Template.StatefulSetTemplate.Spec.DeepCopy()}
	sts.Spec.Selector, sts.Spec.Template, sts.Spec.Replicas = sel, pod, ptr.To(replicas)
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		if sts.Spec.UpdateStrategy.RollingUpdate == nil {
			sts.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		sts.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(partition)
	}
	return sts
}

func (statefulSetKind) read(obj client.Object) (int32, int32, Counts) {
	sts := obj.(*appsv1.StatefulSet)
	var partition int32
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		partition = ptr.Deref(ru.Partition, 0)
	}
	s := sts.Status
	return ptr.Deref(sts.Spec.Replicas, 1), partition, observed(sts, s.ObservedGeneration, estimated(s.Replicas, s.ReadyReplicas, s.UpdatedReplicas))
}

type deploymentKind struct{}

func (deploymentKind) Name() string               { return "Deployment" }
func (deploymentKind) New() client.Object         { return &appsv1.Deployment{} }
func (deploymentKind) NewList() client.ObjectList { return &appsv1.DeploymentList{} }
func (deploymentKind) Items(l client.ObjectList) []client.Object {
	return items(l.(*appsv1.DeploymentList).Items)
}

func (deploymentKind) template(ud *kruiseappsv1alpha1.UnitedDeployment) (*metav1.ObjectMeta, *corev1.PodTemplateSpec, bool) {
	t := ud.Spec.Template.DeploymentTemplate
	if t == nil {
		return nil, nil, false
	}
	return &t.ObjectMeta, &t.Spec.Template, true
}

// assemble ignores the partition: a Deployment has none, and upstream leaves it out too.
func (deploymentKind) assemble(ud *kruiseappsv1alpha1.UnitedDeployment, sel *metav1.LabelSelector, pod corev1.PodTemplateSpec, replicas, _ int32) client.Object {
	d := &appsv1.Deployment{Spec: *ud.Spec.Template.DeploymentTemplate.Spec.DeepCopy()}
	d.Spec.Selector, d.Spec.Template, d.Spec.Replicas = sel, pod, ptr.To(replicas)
	return d
}

func (deploymentKind) read(obj client.Object) (int32, int32, Counts) {
	d := obj.(*appsv1.Deployment)
	s := d.Status
	return ptr.Deref(d.Spec.Replicas, 1), 0, observed(d, s.ObservedGeneration, estimated(s.Replicas, s.ReadyReplicas, s.UpdatedReplicas))
}

// estimated fills in updated-and-ready pods for the kinds whose status lacks the count: the fewest the other
// counts allow, so that a rollout never looks further along than it is (it is exact once every pod is updated
// and ready).
func estimated(replicas, ready, updated int32) Counts {
	return Counts{replicas, ready, updated, max(updated+ready-replicas, 0)}
}

// observed drops the counts of updated pods its workload's controller reported before it saw the
// workload's current spec: they count the pods of the template before, so a revision would otherwise look
// rolled out before its rollout started.
func observed(obj client.Object, observedGeneration int64, c Counts) Counts {
	if observedGeneration < obj.GetGeneration() {
		c.Updated, c.UpdatedReady = 0, 0
	}
	return c
}

func items[T any, PT interface {
	*T
	client.Object
}](list []T) []client.Object {
	out := make([]client.Object, len(list))
	for i := range list {
		out[i] = PT(&list[i])
	}
	return out
}
