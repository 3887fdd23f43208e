package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/cluster"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	// upgradeNamespace holds the injected pods: the pod webhook is called there.
	upgradeNamespace = "bench-sidecarset-upgrade"
	// upgradeNativeNamespace holds the native run's Deployment: labelled control-plane, so that no pod
	// webhook is called for its pods and the run is kube-controller-manager's alone.
	upgradeNativeNamespace = "bench-sidecarset-native"
	upgradePods            = clonesetReplicas
	upgradeSet             = "bench-sidecar"
	upgradeSidecar         = "sidecar"
	upgradeWorkload        = "scs-app"
	upgradeNativeWorkload  = "native-app"
)

var deploymentsResource = appsv1.SchemeGroupVersion.WithResource("deployments")

// sidecarImageChange replaces the sidecar's image and nothing else, so that the pods can take it in place.
var sidecarImageChange = []byte(`[{"op":"replace","path":"/spec/containers/0/image","value":"` + inPlaceImage + `"}]`)

// upgradeCounters tell where the SidecarSet run's writes and time went.
var upgradeCounters = []counterSpec{
	writeConflicts,
	requestsRejected,
	{"SidecarSet reconciles", reconcileTotal, map[string]string{"controller": "sidecarset-controller"}},
	{"SidecarSet reconciles requeued after a delay", reconcileTotal,
		map[string]string{"controller": "sidecarset-controller", "result": "requeue_after"}},
	{"SidecarSet reconciles failed", reconcileTotal, map[string]string{"controller": "sidecarset-controller", "result": "error"}},
}

// sidecarSetUpgrade changes the sidecar image of a SidecarSet over 1,000 injected pods on kwok nodes
// (maxUnavailable 100%), against a native Deployment changing its image over 1,000 pods by recreating them.
func sidecarSetUpgrade() Scenario {
	return Scenario{
		Name: "sidecarset-upgrade",
		Description: fmt.Sprintf("the sidecar image of a SidecarSet (maxUnavailable 100%%) over the %d pods of a Deployment "+
			"changed until its status shows updatedReadyPods %d, every pod kept and restarted in place on the new image; "+
			"against the image of a native %d-replica Deployment (maxUnavailable 100%%, maxSurge 0) changed until it is "+
			"rolled out, in a namespace no pod webhook is called for", upgradePods, upgradePods, upgradePods),
		Cluster: cluster.Options{ControllerManager: true, Scheduler: true, Nodes: clonesetNodes, PodsPerNode: 110,
			Args: nativeArgs()},
		Timeout: 15 * time.Minute,
		Run:     runSidecarSetUpgrade,
	}
}

// upgradeRun is one run: the SidecarSet's in-place change or the Deployment's.
type upgradeRun struct {
	Kind string
	// Setup is creating the pods until they were all Ready (and, for the SidecarSet, counted by it).
	Setup    time.Duration
	Figures  runFigures
	Phase    Phase
	Pods     sidecarReplacement
	Counters []float64
}

const (
	kindSidecarSet       = "SidecarSet"
	kindNativeDeployment = "Deployment"
)

func runSidecarSetUpgrade(ctx context.Context, env *Env, res *Result) error {
	res.Cluster.Objects = map[string]int{"sidecarsets": 1, "deployments": 2, "pods": 3 * upgradePods}
	dyn, kcm, err := startCloneSetScenario(ctx, env, upgradeNamespace)
	if err != nil {
		return err
	}
	if err := namespaceWithAccount(ctx, env.Kube, upgradeNativeNamespace, map[string]string{"control-plane": "bench"}); err != nil {
		return err
	}
	if err := waitServiceAccount(ctx, env.Kube, upgradeNativeNamespace); err != nil {
		return err
	}
	// The SidecarSet runs first, so that its RSS is taken with no more than its own pods ever cached.
	sc, err := runSidecarUpgrade(ctx, env, dyn, kcm)
	if err != nil {
		return fmt.Errorf("%s: %w", kindSidecarSet, err)
	}
	// The nodes hold one run's pods with a fifth to spare: the first run's go before the second starts.
	if err := removeSidecarUpgrade(ctx, env, dyn); err != nil {
		return err
	}
	native, err := runNativeUpgrade(ctx, env, dyn, kcm)
	if err != nil {
		return fmt.Errorf("%s: %w", kindNativeDeployment, err)
	}
	res.Record(sc.Phase)
	addUpgradeMetrics(res, sc, native)
	return checkUpgrade(sc, native)
}

// runSidecarUpgrade installs the SidecarSet, creates the Deployment whose pods it injects, and times the
// sidecar image change until the SidecarSet's status shows every pod updated and ready.
func runSidecarUpgrade(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc) (upgradeRun, error) {
	run := upgradeRun{Kind: kindSidecarSet}
	before, err := setUpSidecarUpgrade(ctx, env, dyn, &run)
	if err != nil {
		return run, err
	}
	ctx, cancel := context.WithTimeout(ctx, clonesetRunTimeout)
	defer cancel()
	env.Logf("%s: changing the sidecar image", upgradeSet)
	w, phase, err := timeWorkloadChange(ctx, env, kcm, timedChange{
		namespace: upgradeNamespace, name: upgradeWorkload, counters: upgradeCounters,
		pods:   newPodProgress(sidecarSpecNew, sidecarReadyNew),
		status: func(ctx context.Context, m *marks) (*follower, error) { return followSidecarSet(ctx, dyn, m) },
		settle: watchConnect,
		change: func(ctx context.Context) (int64, error) {
			u, err := dyn.Resource(sidecarSetsResource).Patch(ctx, upgradeSet, types.JSONPatchType, sidecarImageChange, metav1.PatchOptions{})
			if err != nil {
				return 0, fmt.Errorf("patching SidecarSet %s: %w", upgradeSet, err)
			}
			return u.GetGeneration(), nil
		},
	})
	if err != nil {
		return run, err
	}
	return finishUpgradeRun(ctx, env, run, w, phase, upgradeNamespace, upgradeWorkload, before)
}

func finishUpgradeRun(ctx context.Context, env *Env, run upgradeRun, w workloadRun, phase Phase, namespace, name string,
	before map[types.UID]bool) (upgradeRun, error) {
	run.Phase, run.Counters = phase, w.Counters
	var err error
	if run.Figures, err = analyseRun(w, upgradePods); err != nil {
		return run, err
	}
	logRun(env, run.Kind, run.Figures, run.Phase, "on the new image (spec)")
	pods, err := env.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return run, fmt.Errorf("listing the pods of %s: %w", name, err)
	}
	container := upgradeSidecar
	if run.Kind == kindNativeDeployment {
		container = "app"
	}
	run.Pods = countSidecarReplacement(pods.Items, before, container)
	return run, nil
}

// setUpSidecarUpgrade creates the SidecarSet, waits until the manager has seen it, creates the Deployment
// and waits until the SidecarSet counts all its pods ready; it returns the pods' UIDs.
func setUpSidecarUpgrade(ctx context.Context, env *Env, dyn dynamic.Interface, run *upgradeRun) (map[types.UID]bool, error) {
	begin := time.Now()
	if err := createObject(ctx, dyn, sidecarSetsResource, upgradeSidecarSet()); err != nil {
		return nil, err
	}
	// The status is written from the manager's cache, which the webhook reads too: then pods get the sidecar.
	if err := waitSidecarSet(ctx, dyn, func(s *kruiseappsv1alpha1.SidecarSet) bool {
		return s.Status.ObservedGeneration == s.Generation
	}); err != nil {
		return nil, err
	}
	if err := createObject(ctx, dyn, deploymentsResource, upgradeDeployment(upgradeNamespace, upgradeWorkload)); err != nil {
		return nil, err
	}
	if err := waitSidecarSet(ctx, dyn, sidecarSetSettled); err != nil {
		return nil, err
	}
	run.Setup = time.Since(begin)
	env.Logf("%s: %d injected pods Ready in %v", upgradeSet, upgradePods, run.Setup.Round(time.Second))
	if err := sleep(ctx, clonesetSettle); err != nil {
		return nil, err
	}
	pods, err := env.Kube.CoreV1().Pods(upgradeNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + upgradeWorkload})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", upgradeWorkload, err)
	}
	return uidsOf(pods.Items), nil
}

// upgradeSidecarSet selects the Deployment's pods and updates them all at once.
func upgradeSidecarSet() *kruiseappsv1alpha1.SidecarSet {
	hundred := intstr.FromString("100%")
	return &kruiseappsv1alpha1.SidecarSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: kruiseappsv1alpha1.GroupVersion.String(), Kind: "SidecarSet"},
		ObjectMeta: metav1.ObjectMeta{Name: upgradeSet},
		Spec: kruiseappsv1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": upgradeWorkload}},
			Containers: []kruiseappsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: upgradeSidecar, Image: benchImage}}},
			UpdateStrategy: kruiseappsv1alpha1.SidecarSetUpdateStrategy{
				Type: kruiseappsv1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: &hundred},
		},
	}
}

// upgradeDeployment is a Deployment of the harness's pod that replaces all its pods at once.
func upgradeDeployment(namespace, name string) *appsv1.Deployment {
	labels := workloadLabels(namespace, name)
	hundred, zero := intstr.FromString("100%"), intstr.FromInt32(0)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](upgradePods),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: benchPodTemplate(labels),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &hundred, MaxSurge: &zero}},
		},
	}
}

// sidecarSetSettled: the status shows the current spec and every pod injected, updated and ready.
func sidecarSetSettled(s *kruiseappsv1alpha1.SidecarSet) bool {
	st := s.Status
	return st.ObservedGeneration == s.Generation && st.MatchedPods == upgradePods && st.UpdatedPods == upgradePods &&
		st.ReadyPods == upgradePods && st.UpdatedReadyPods == upgradePods
}

// sidecarSetUpdated: the status shows the current spec with every pod updated and ready.
func sidecarSetUpdated(s *kruiseappsv1alpha1.SidecarSet) bool {
	st := s.Status
	return st.ObservedGeneration == s.Generation && st.MatchedPods == upgradePods && st.UpdatedReadyPods == upgradePods
}

func waitSidecarSet(ctx context.Context, dyn dynamic.Interface, done func(*kruiseappsv1alpha1.SidecarSet) bool) error {
	return waitObject(ctx, dyn.Resource(sidecarSetsResource), upgradeSet, done)
}

// followSidecarSet marks the observed generation of every event of the SidecarSet that shows it updated.
func followSidecarSet(ctx context.Context, dyn dynamic.Interface, m *marks) (*follower, error) {
	return followNamed(ctx, dyn, sidecarSetsResource, "", upgradeSet, func(at time.Time, obj runtime.Object) {
		if s, err := decode[kruiseappsv1alpha1.SidecarSet](obj); err == nil && sidecarSetUpdated(s) {
			m.add(s.Status.ObservedGeneration, at)
		}
	})
}

// runNativeUpgrade creates the native Deployment in the namespace no pod webhook is called for and times
// its image change until it is rolled out.
func runNativeUpgrade(ctx context.Context, env *Env, dyn dynamic.Interface, kcm Proc) (upgradeRun, error) {
	run := upgradeRun{Kind: kindNativeDeployment}
	begin := time.Now()
	if err := createObject(ctx, dyn, deploymentsResource, upgradeDeployment(upgradeNativeNamespace, upgradeNativeWorkload)); err != nil {
		return run, err
	}
	if err := waitDeployment(ctx, env, upgradeNativeNamespace, upgradeNativeWorkload); err != nil {
		return run, err
	}
	run.Setup = time.Since(begin)
	if err := sleep(ctx, clonesetSettle); err != nil {
		return run, err
	}
	pods, err := env.Kube.CoreV1().Pods(upgradeNativeNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + upgradeNativeWorkload})
	if err != nil {
		return run, fmt.Errorf("listing the pods of %s: %w", upgradeNativeWorkload, err)
	}
	ctx, cancel := context.WithTimeout(ctx, clonesetRunTimeout)
	defer cancel()
	env.Logf("%s: changing the image", upgradeNativeWorkload)
	w, phase, err := timeWorkloadChange(ctx, env, kcm, timedChange{
		namespace: upgradeNativeNamespace, name: upgradeNativeWorkload, counters: upgradeCounters,
		pods: newPodProgress(specNewImage, readyOnNewImage), settle: watchConnect,
		status: func(ctx context.Context, m *marks) (*follower, error) {
			return followNamed(ctx, dyn, deploymentsResource, upgradeNativeNamespace, upgradeNativeWorkload,
				func(at time.Time, obj runtime.Object) {
					if d, err := decode[appsv1.Deployment](obj); err == nil && rolledOut(d) {
						m.add(d.Status.ObservedGeneration, at)
					}
				})
		},
		change: func(ctx context.Context) (int64, error) {
			u, err := dyn.Resource(deploymentsResource).Namespace(upgradeNativeNamespace).Patch(ctx, upgradeNativeWorkload,
				types.JSONPatchType, imageChange, metav1.PatchOptions{})
			if err != nil {
				return 0, fmt.Errorf("patching Deployment %s: %w", upgradeNativeWorkload, err)
			}
			return u.GetGeneration(), nil
		},
	})
	if err != nil {
		return run, err
	}
	return finishUpgradeRun(ctx, env, run, w, phase, upgradeNativeNamespace, upgradeNativeWorkload, uidsOf(pods.Items))
}

func waitDeployment(ctx context.Context, env *Env, namespace, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, clonesetRunTimeout, true, func(ctx context.Context) (bool, error) {
		d, err := env.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // retried until the timeout
		}
		last = fmt.Sprintf("generation %d, status %+v", d.Generation, d.Status)
		return rolledOut(d), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for Deployment %s (last seen: %s): %w", name, last, err)
	}
	return nil
}

// sidecarSpecNew reports whether the pod's sidecar asks for the new image.
func sidecarSpecNew(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == upgradeSidecar {
			return c.Image == inPlaceImage
		}
	}
	return false
}

// sidecarReadyNew reports whether the pod is Ready with its sidecar running the new image.
func sidecarReadyNew(p *corev1.Pod) bool {
	cs := containerStatus(p, upgradeSidecar)
	return isPodReady(p) && cs != nil && cs.Image == inPlaceImage
}

func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// removeSidecarUpgrade deletes the SidecarSet run's Deployment and pods, then the SidecarSet.
func removeSidecarUpgrade(ctx context.Context, env *Env, dyn dynamic.Interface) error {
	err := removeWorkload(ctx, env, upgradeNamespace, upgradeWorkload, func(ctx context.Context) error {
		return dyn.Resource(deploymentsResource).Namespace(upgradeNamespace).Delete(ctx, upgradeWorkload,
			metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	})
	if err != nil {
		return err
	}
	if err := dyn.Resource(sidecarSetsResource).Delete(ctx, upgradeSet, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting SidecarSet %s: %w", upgradeSet, err)
	}
	return nil
}
