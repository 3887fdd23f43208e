package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	daemonSetNamespace = "bench-daemonset-update"
	// daemonSetNodes is the fleet: one pod of each DaemonSet per node.
	daemonSetNodes = 200
	// daemonSetRatioTarget bounds the Advanced DaemonSet's update time over the native DaemonSet's (issue 21).
	daemonSetRatioTarget = 1.15
	kindNativeDaemonSet  = "DaemonSet"
	// kindGatedDaemonSet is the native DaemonSet whose pods carry one readiness gate, as an Advanced DaemonSet's
	// pods carry KruisePodReady, set True by the harness: what the gate costs with no controller's work.
	kindGatedDaemonSet   = "GatedDaemonSet"
	kindAdvancedStandard = "Advanced DaemonSet (Standard)"
	kindAdvancedInPlace  = "Advanced DaemonSet (InPlaceIfPossible)"
)

// daemonSetOrder alternates the native, Standard and gated runs, each on a fresh DaemonSet deleted before the
// next, so that the cluster's drift falls on all alike; the in-place variant runs last.
var daemonSetOrder = []string{kindNativeDaemonSet, kindAdvancedStandard, kindGatedDaemonSet, kindAdvancedStandard,
	kindNativeDaemonSet, kindGatedDaemonSet, kindAdvancedInPlace}

// daemonSetGate is the gated DaemonSet's one readiness gate, its own so that no controller of the manager
// writes it.
var daemonSetGate = benchGates[:1]

var (
	daemonSetsResource         = appsv1.SchemeGroupVersion.WithResource("daemonsets")
	advancedDaemonSetsResource = kruiseappsv1alpha1.GroupVersion.WithResource("daemonsets")
)

// daemonSetUpdate changes the image of a DaemonSet on 200 kwok nodes, maxUnavailable 10%, against the native
// DaemonSet doing the same in the same cluster.
func daemonSetUpdate() Scenario {
	args := nativeArgs()
	args["kube-controller-manager"] = append(args["kube-controller-manager"], "--concurrent-daemonset-syncs=3")
	return Scenario{
		Name: "daemonset-update",
		Description: fmt.Sprintf("the image of a DaemonSet on %d nodes changed (RollingUpdate, maxUnavailable 10%%) until its "+
			"status shows every pod updated and available: an Advanced DaemonSet (Standard) against the native DaemonSet "+
			"(runs %s), then in place", daemonSetNodes, strings.Join(daemonSetOrder, ", ")),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: daemonSetNodes, PodsPerNode: 110, Args: args},
		Timeout: 20 * time.Minute,
		Run:     runDaemonSetUpdate,
	}
}

// daemonSetRun is one DaemonSet's image change.
type daemonSetRun struct {
	Kind    string
	Figures runFigures
	Phase   Phase
	Pods    replacement
}

func runDaemonSetUpdate(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"daemonsets": len(daemonSetOrder), "pods": 2 * len(daemonSetOrder) * daemonSetNodes}
	dyn, kcm, err := startCloneSetScenario(ctx, env, daemonSetNamespace)
	if err != nil {
		return err
	}
	runs := make([]daemonSetRun, 0, len(daemonSetOrder))
	for i, kind := range daemonSetOrder {
		run, err := runDaemonSet(ctx, env, dyn, kcm, fmt.Sprintf("ds-%d", i), kind)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		runs = append(runs, run)
	}
	res.Record(runs[1].Phase)
	return addDaemonSetMetrics(res, runs)
}

// runDaemonSet creates a DaemonSet of kind, waits until it runs on every node, times the image change and
// deletes it.
func runDaemonSet(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc, name, kind string) (daemonSetRun, error) {
	run := daemonSetRun{Kind: kind}
	ds := daemonSetKinds[kind]
	if ds.gated {
		stop, err := settleGates(ctx, env, daemonSetNamespace, name, daemonSetGate)
		if err != nil {
			return run, err
		}
		defer func() { _, _ = stop() }() // its writes are the harness's, not the run's
	}
	if err := ds.create(ctx, dyn, name); err != nil {
		return run, err
	}
	if err := waitDaemonSet(ctx, dyn, ds.resource, name); err != nil {
		return run, err
	}
	pods, err := daemonSetPods(ctx, env, name)
	if err != nil {
		return run, err
	}
	if run, err = timeDaemonSetChange(ctx, env, dyn, kcm, name, run); err != nil {
		return run, err
	}
	after, err := daemonSetPods(ctx, env, name)
	run.Pods = countReplacement(after, uidsOf(pods))
	if err != nil {
		return run, err
	}
	return run, removeWorkload(ctx, env, daemonSetNamespace, name, func(ctx context.Context) error {
		return dyn.Resource(ds.resource).Namespace(daemonSetNamespace).Delete(ctx, name,
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	})
}

func timeDaemonSetChange(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc, name string, run daemonSetRun) (daemonSetRun, error) {
	resource := daemonSetKinds[run.Kind].resource
	ctx, cancel := context.WithTimeout(ctx, clonesetRunTimeout)
	defer cancel()
	env.Logf("%s (%s): changing the image", name, run.Kind)
	w, phase, err := timeWorkloadChange(ctx, env, kcm, timedChange{
		namespace: daemonSetNamespace, name: name, pods: newPodProgress(specNewImage, readyOnNewImage),
		status: func(ctx context.Context, m *marks) (*follower, error) {
			return followDaemonSet(ctx, dyn, resource, name, m)
		},
		settle: watchConnect,
		change: func(ctx context.Context) (int64, error) {
			u, err := dyn.Resource(resource).Namespace(daemonSetNamespace).Patch(ctx, name, types.JSONPatchType, imageChange, metav1.PatchOptions{})
			if err != nil {
				return 0, fmt.Errorf("patching %s: %w", name, err)
			}
			return u.GetGeneration(), nil
		},
	})
	if err != nil {
		return run, err
	}
	run.Phase = phase
	run.Figures, err = analyseRun(w, daemonSetNodes)
	logRun(env, name, run.Figures, run.Phase, "on the new image")
	return run, err
}

// daemonSetKind creates one kind of DaemonSet of the harness's pod; gated ones need the harness to settle
// their pods' gate.
type daemonSetKind struct {
	resource schema.GroupVersionResource
	create   func(ctx context.Context, dyn dynamic.Interface, name string) error
	gated    bool
}

var daemonSetKinds = map[string]daemonSetKind{
	kindNativeDaemonSet:  {resource: daemonSetsResource, create: createNativeDaemonSet(nil)},
	kindGatedDaemonSet:   {resource: daemonSetsResource, create: createNativeDaemonSet(daemonSetGate), gated: true},
	kindAdvancedStandard: {resource: advancedDaemonSetsResource, create: createAdvancedDaemonSet(kruiseappsv1alpha1.StandardRollingUpdateType)},
	kindAdvancedInPlace:  {resource: advancedDaemonSetsResource, create: createAdvancedDaemonSet(kruiseappsv1alpha1.InplaceRollingUpdateType)},
}

var tenPercent = intstr.FromString("10%")

func createNativeDaemonSet(gates []corev1.PodConditionType) func(context.Context, dynamic.Interface, string) error {
	return func(ctx context.Context, dyn dynamic.Interface, name string) error {
		ds := nativeDaemonSet(name)
		for _, g := range gates {
			ds.Spec.Template.Spec.ReadinessGates = append(ds.Spec.Template.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
		}
		return createObject(ctx, dyn, daemonSetsResource, ds)
	}
}

func nativeDaemonSet(name string) *appsv1.DaemonSet {
	labels := workloadLabels(daemonSetNamespace, name)
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: daemonSetNamespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: benchPodTemplate(labels),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &tenPercent}},
		},
	}
}

func createAdvancedDaemonSet(t kruiseappsv1alpha1.RollingUpdateType) func(context.Context, dynamic.Interface, string) error {
	return func(ctx context.Context, dyn dynamic.Interface, name string) error {
		labels := workloadLabels(daemonSetNamespace, name)
		ds := &kruiseappsv1alpha1.DaemonSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "DaemonSet"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: daemonSetNamespace, Labels: labels},
			Spec: kruiseappsv1alpha1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: benchPodTemplate(labels),
				UpdateStrategy: kruiseappsv1alpha1.DaemonSetUpdateStrategy{Type: kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType,
					RollingUpdate: &kruiseappsv1alpha1.RollingUpdateDaemonSet{Type: t, MaxUnavailable: &tenPercent}},
			},
		}
		return createObject(ctx, dyn, advancedDaemonSetsResource, ds)
	}
}

func createObject(ctx context.Context, dyn dynamic.Interface, resource schema.GroupVersionResource, obj metav1.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", obj.GetName(), err)
	}
	_, err = dyn.Resource(resource).Namespace(obj.GetNamespace()).Create(ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating %s %s: %w", resource.Resource, obj.GetName(), err)
	}
	return nil
}

// daemonSetStatus is what both kinds report alike, under the same field names.
type daemonSetStatus struct {
	Generation int64 `json:"-"`
	Status     struct {
		ObservedGeneration     int64 `json:"observedGeneration"`
		DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`
		NumberAvailable        int32 `json:"numberAvailable"`
		UpdatedNumberScheduled int32 `json:"updatedNumberScheduled"`
	} `json:"status"`
}

func decodeDaemonSet(obj runtime.Object) (*daemonSetStatus, error) {
	s, err := decode[daemonSetStatus](obj)
	if err == nil {
		s.Generation = obj.(*unstructured.Unstructured).GetGeneration()
	}
	return s, err
}

// daemonSetDone: the status shows the current spec on every node, every pod updated and available.
func daemonSetDone(s *daemonSetStatus) bool {
	st := s.Status
	return st.ObservedGeneration == s.Generation && st.DesiredNumberScheduled == daemonSetNodes &&
		st.UpdatedNumberScheduled == daemonSetNodes && st.NumberAvailable == daemonSetNodes
}

func followDaemonSet(ctx context.Context, dyn dynamic.Interface, resource schema.GroupVersionResource, name string, m *marks) (*follower, error) {
	return followNamed(ctx, dyn, resource, daemonSetNamespace, name, func(at time.Time, obj runtime.Object) {
		if s, err := decodeDaemonSet(obj); err == nil && daemonSetDone(s) {
			m.add(s.Status.ObservedGeneration, at)
		}
	})
}

func waitDaemonSet(ctx context.Context, dyn dynamic.Interface, resource schema.GroupVersionResource, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, clonesetRunTimeout, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(resource).Namespace(daemonSetNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // retried until the timeout
		}
		s, err := decodeDaemonSet(u)
		if err != nil {
			return false, err
		}
		last = fmt.Sprintf("generation %d, status %+v", s.Generation, s.Status)
		return daemonSetDone(s), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s on every node (last seen: %s): %w", name, last, err)
	}
	return sleep(ctx, clonesetSettle)
}

func daemonSetPods(ctx context.Context, env *Env, name string) ([]corev1.Pod, error) {
	list, err := env.Kube.CoreV1().Pods(daemonSetNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", name, err)
	}
	return list.Items, nil
}
