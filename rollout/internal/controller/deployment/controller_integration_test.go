package deployment

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rolloutsv1beta1 "github.com/flotilla-dev/flotilla/rollout/api/v1beta1"
	"github.com/flotilla-dev/flotilla/rollout/control"
	"github.com/flotilla-dev/flotilla/test/managertest"
)

const pollTimeout = 60 * time.Second

// newNamespace is managertest.Namespace, deleted again when the test ends.
func newNamespace(t *testing.T, c client.Client, prefix string) string {
	t.Helper()
	ns := managertest.Namespace(t, c, prefix)
	t.Cleanup(func() { _ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	return ns
}

func demoDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"note": "v1"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "main", Image: "registry.example/demo:v1",
					Env: []corev1.EnvVar{{Name: "MODE", Value: "demo"}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
					}},
				}}},
			},
		},
	}
}

// TestComputeHashMatchesControllerManager compares ComputeHash with the pod-template-hash
// kube-controller-manager gave the ReplicaSet of an ordinary Deployment.
func TestComputeHashMatchesControllerManager(t *testing.T) {
	_, c := startManager(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "hash-it")
	d := demoDeployment(ns, "plain", 1)
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var rs *appsv1.ReplicaSet
	poll(t, "kube-controller-manager creates the ReplicaSet", func() bool {
		sets, err := ownedSets(ctx, c, d)
		if err != nil || len(sets) != 1 {
			return false
		}
		rs = &sets[0]
		return true
	})
	live := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
		t.Fatal(err)
	}
	got := control.ComputeHash(&live.Spec.Template, live.Status.CollisionCount)
	if want := rs.Labels["pod-template-hash"]; got != want || rs.Name != "plain-"+want {
		t.Errorf("ComputeHash() = %q; kube-controller-manager made ReplicaSet %s with hash %q", got, rs.Name, want)
	}
	if !control.EqualIgnoreHash(&rs.Spec.Template, &live.Spec.Template) {
		t.Errorf("EqualIgnoreHash(ReplicaSet template, Deployment template) = false")
	}
}

// TestPartitionRelease runs a partition-style release of a 10-pod Deployment through the WorkloadControl
// with the controller and kube-controller-manager both running, then hands it back.
func TestPartitionRelease(t *testing.T) {
	cached, c := startManager(t)
	begin := time.Now()
	ctx := context.Background()
	ns := newNamespace(t, c, "partition-it")
	d := demoDeployment(ns, "web", 10)
	rolling := &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromInt32(2))}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: rolling}
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitPods(t, c, d, map[string]int{"v1": 10})
	mon := watchPods(t, ns, "app=web", rolling)
	mon.arm(10)

	owner := metav1.OwnerReference{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "BatchRelease",
		Name: "web", UID: "7d3b9a52-0000-4000-8000-000000000001", Controller: ptr.To(true)}
	target := control.Target{Namespace: ns, Owner: owner,
		Ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}
	ctl := control.NewDeploymentPartition(cached, target)
	eventually(t, "Initialize", func() error { return ctl.Initialize(ctx) })
	checkInitialized(t, c, d, owner)

	setImage(t, c, d, "v2")
	stableSets := stableState(t, c, d, map[string]int{"v1": 10})
	batch := func(n int32, updated int32) control.Batch {
		return control.Batch{DesiredUpdated: updated, PodLabels: control.BatchPodLabels("v2", n)}
	}
	eventually(t, "UpgradeBatch(1)", func() error { return ctl.UpgradeBatch(ctx, batch(0, 1)) })
	waitPods(t, c, d, map[string]int{"v1": 9, "v2": 1})
	time.Sleep(time.Second) // kube-controller-manager syncs paused Deployments too: it must not undo the batch
	waitPods(t, c, d, map[string]int{"v1": 9, "v2": 1})
	checkExtraStatus(t, c, d, `{"updatedReadyReplicas":1,"expectedUpdatedReplicas":1}`)
	checkRead(t, ctl, 1, hashOf(stableSets, "v1"))

	eventually(t, "UpgradeBatch(5)", func() error { return ctl.UpgradeBatch(ctx, batch(1, 5)) })
	waitPods(t, c, d, map[string]int{"v1": 5, "v2": 5})
	checkStamps(t, c, d, map[string]int{"1": 1, "2": 4})
	eventually(t, "UpgradeBatch(3)", func() error { return ctl.UpgradeBatch(ctx, control.Batch{DesiredUpdated: 3}) })
	checkPartition(t, c, d, 5)

	mon.arm(8)
	scale(t, c, d, 8)
	waitPods(t, c, d, map[string]int{"v1": 3, "v2": 5})
	newSets := stableState(t, c, d, map[string]int{"v1": 3, "v2": 5})

	target.Plan.FinalizingPolicy = rolloutsv1beta1.WaitResumeFinalizingPolicyType
	ctl = control.NewDeploymentPartition(cached, target)
	pollErr(t, "Finalize is done", func() (bool, error) { return ctl.Finalize(ctx) })
	waitPods(t, c, d, map[string]int{"v2": 8})
	checkFinalized(t, c, d, newSets)
	checkScalingEvents(t, c, d)
	mon.stop()
	t.Logf("release of 10 pods through 2 batches, a scale-down and finalizing took %v", time.Since(begin).Round(time.Millisecond))
}

// TestPartitionReleaseWithoutSurge releases with maxSurge 0. The first new pod starts beside a lone old
// ReplicaSet (one pod over the replicas, see firstPodSurge) so that kube-controller-manager, which grows a
// lone active ReplicaSet of a paused Deployment back to the replicas, never recreates an old pod.
func TestPartitionReleaseWithoutSurge(t *testing.T) {
	cached, c := startManager(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "nosurge-it")
	d := demoDeployment(ns, "api", 4)
	rolling := &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: rolling}
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitPods(t, c, d, map[string]int{"v1": 4})
	before := podNames(t, c, d, "v1")
	mon := watchPods(t, ns, "app=api", &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: rolling.MaxUnavailable})
	mon.arm(4)
	owner := metav1.OwnerReference{APIVersion: rolloutsv1beta1.GroupVersion.String(), Kind: "BatchRelease",
		Name: "api", UID: "7d3b9a52-0000-4000-8000-000000000002", Controller: ptr.To(true)}
	ctl := control.NewDeploymentPartition(cached, control.Target{Namespace: ns, Owner: owner,
		Ref: rolloutsv1beta1.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}})
	eventually(t, "Initialize", func() error { return ctl.Initialize(ctx) })
	setImage(t, c, d, "v2")
	eventually(t, "UpgradeBatch(1)", func() error { return ctl.UpgradeBatch(ctx, control.Batch{DesiredUpdated: 1}) })
	waitPods(t, c, d, map[string]int{"v1": 3, "v2": 1})
	time.Sleep(time.Second)
	waitPods(t, c, d, map[string]int{"v1": 3, "v2": 1})
	if after := podNames(t, c, d, "v1"); !isSubset(after, before) {
		t.Errorf("old pods %v after the first batch, %v before: an old pod was recreated", after, before)
	}
	eventually(t, "UpgradeBatch(4)", func() error { return ctl.UpgradeBatch(ctx, control.Batch{DesiredUpdated: 4}) })
	waitPods(t, c, d, map[string]int{"v2": 4})
	checkExtraStatus(t, c, d, `{"updatedReadyReplicas":4,"expectedUpdatedReplicas":4}`)
	pollErr(t, "Finalize is done", func() (bool, error) { return ctl.Finalize(ctx) })
	mon.stop()
}

func podNames(t *testing.T, c client.Client, d *appsv1.Deployment, version string) []string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Annotations["note"] == version {
			out = append(out, p.Name)
		}
	}
	return out
}

func isSubset(sub, set []string) bool {
	for _, s := range sub {
		if !slices.Contains(set, s) {
			return false
		}
	}
	return true
}

func checkInitialized(t *testing.T, c client.Client, d *appsv1.Deployment, owner metav1.OwnerReference) {
	t.Helper()
	live := getDeployment(t, c, d)
	s, ok, err := control.DeploymentStrategyFrom(live.Annotations)
	if err != nil || !ok {
		t.Fatalf("deployment-strategy annotation: %v, %v", ok, err)
	}
	wantRU := appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromInt32(2))}
	switch {
	case !live.Spec.Paused || live.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || live.Spec.Strategy.RollingUpdate != nil:
		t.Errorf("initialized spec: paused %v, strategy %+v", live.Spec.Paused, live.Spec.Strategy)
	case live.Labels[rolloutsv1beta1.AdvancedDeploymentControlLabel] != "true":
		t.Errorf("labels = %v", live.Labels)
	case !control.ControlledBy(live.Annotations, owner):
		t.Errorf("control-info = %q", live.Annotations[rolloutsv1beta1.BatchReleaseControlAnnotation])
	case s.RollingStyle != rolloutsv1beta1.PartitionRollingStyle || s.Paused || s.Partition != intstr.FromInt32(0) ||
		!equality.Semantic.DeepEqual(s.RollingUpdate, &wantRU):
		t.Errorf("deployment-strategy = %+v", s)
	}
}

func checkRead(t *testing.T, ctl control.WorkloadControl, updated int32, stable string) {
	t.Helper()
	info, err := ctl.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	live := info.Object.(*appsv1.Deployment)
	update := control.ComputeHash(&live.Spec.Template, live.Status.CollisionCount)
	got := fmt.Sprintf("replicas=%d updated=%d ready=%d stable=%s update=%s key=%s pods=%s controlled=%v",
		info.Replicas, info.UpdatedReplicas, info.UpdatedReadyReplicas, info.StableRevision, info.UpdateRevision,
		info.RevisionLabelKey, info.UpdatedPods, info.Controlled)
	want := fmt.Sprintf("replicas=10 updated=%d ready=%d stable=%s update=%s key=pod-template-hash pods=app=web,pod-template-hash=%s controlled=true",
		updated, updated, stable, update, update)
	if got != want {
		t.Errorf("Read() =\n %s\nwant\n %s", got, want)
	}
}

func checkPartition(t *testing.T, c client.Client, d *appsv1.Deployment, want int32) {
	t.Helper()
	s, _, err := control.DeploymentStrategyFrom(getDeployment(t, c, d).Annotations)
	if err != nil || s.Partition != intstr.FromInt32(want) {
		t.Errorf("partition = %v (%v), want %d", s.Partition.String(), err, want)
	}
}

func checkExtraStatus(t *testing.T, c client.Client, d *appsv1.Deployment, want string) {
	t.Helper()
	poll(t, "extra status "+want, func() bool {
		return getDeployment(t, c, d).Annotations[rolloutsv1beta1.DeploymentExtraStatusAnnotation] == want
	})
}

// checkFinalized asserts the Deployment is back with kube-controller-manager, which finished the
// release on the ReplicaSet the controller created instead of making another one.
func checkFinalized(t *testing.T, c client.Client, d *appsv1.Deployment, during []appsv1.ReplicaSet) {
	t.Helper()
	live := getDeployment(t, c, d)
	if live.Spec.Paused || live.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		live.Spec.Strategy.RollingUpdate.MaxUnavailable.String() != "2" || live.Spec.Strategy.RollingUpdate.MaxSurge.String() != "25%" {
		t.Errorf("finalized spec: paused %v, strategy %+v", live.Spec.Paused, live.Spec.Strategy)
	}
	for _, key := range []string{rolloutsv1beta1.DeploymentStrategyAnnotation, rolloutsv1beta1.DeploymentExtraStatusAnnotation,
		rolloutsv1beta1.BatchReleaseControlAnnotation} {
		if _, ok := live.Annotations[key]; ok {
			t.Errorf("annotation %s left on the Deployment", key)
		}
	}
	if _, ok := live.Labels[rolloutsv1beta1.AdvancedDeploymentControlLabel]; ok {
		t.Errorf("label %s left on the Deployment", rolloutsv1beta1.AdvancedDeploymentControlLabel)
	}
	after, err := ownedSets(context.Background(), c, d)
	if err != nil {
		t.Fatal(err)
	}
	if names(after) != names(during) {
		t.Errorf("ReplicaSets after finalizing %s, during the release %s", names(after), names(during))
	}
}

func checkScalingEvents(t *testing.T, c client.Client, d *appsv1.Deployment) {
	t.Helper()
	poll(t, "ScalingReplicaSet events from "+ControllerName, func() bool {
		list := &eventsv1.EventList{}
		if err := c.List(context.Background(), list, client.InNamespace(d.Namespace)); err != nil {
			return false
		}
		return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Reason == scalingReason && e.ReportingController == ControllerName && e.Regarding.Name == d.Name
		})
	})
}

func getDeployment(t *testing.T, c client.Client, d *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	live := &appsv1.Deployment{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(d), live); err != nil {
		t.Fatal(err)
	}
	return live
}

func setImage(t *testing.T, c client.Client, d *appsv1.Deployment, version string) {
	t.Helper()
	eventually(t, "set image "+version, func() error {
		live := getDeployment(t, c, d)
		want := live.DeepCopy()
		want.Spec.Template.Spec.Containers[0].Image = "registry.example/demo:" + version
		want.Spec.Template.Annotations["note"] = version
		return c.Patch(context.Background(), want, client.MergeFromWithOptions(live, client.MergeFromWithOptimisticLock{}))
	})
}

func scale(t *testing.T, c client.Client, d *appsv1.Deployment, replicas int32) {
	t.Helper()
	eventually(t, "scale", func() error {
		live := getDeployment(t, c, d)
		want := live.DeepCopy()
		want.Spec.Replicas = ptr.To(replicas)
		return c.Patch(context.Background(), want, client.MergeFrom(live))
	})
}

func ownedSets(ctx context.Context, c client.Client, d *appsv1.Deployment) ([]appsv1.ReplicaSet, error) {
	list := &appsv1.ReplicaSetList{}
	if err := c.List(ctx, list, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		return nil, err
	}
	return list.Items, nil
}

func hashOf(sets []appsv1.ReplicaSet, version string) string {
	for _, rs := range sets {
		if rs.Spec.Template.Annotations["note"] == version {
			return rs.Labels["pod-template-hash"]
		}
	}
	return ""
}

func names(sets []appsv1.ReplicaSet) string {
	out := make([]string, 0, len(sets))
	for _, rs := range sets {
		out = append(out, rs.Name)
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

// waitPods waits until the ready pods of the Deployment, by the "note" annotation of their template
// (the version), are exactly want, with no other pod left.
func waitPods(t *testing.T, c client.Client, d *appsv1.Deployment, want map[string]int) {
	t.Helper()
	var last map[string]int
	poll(t, fmt.Sprintf("pods %v", want), func() bool {
		last = podVersions(t, c, d)
		return fmt.Sprint(last) == fmt.Sprint(want)
	})
}

func podVersions(t *testing.T, c client.Client, d *appsv1.Deployment) map[string]int {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil {
			if !podReady(p) {
				got["unready"]++
				continue
			}
			got[p.Annotations["note"]]++
		}
	}
	return got
}

// stableState waits for the ReplicaSets to match the pods (spec and status), then returns them.
func stableState(t *testing.T, c client.Client, d *appsv1.Deployment, want map[string]int) []appsv1.ReplicaSet {
	t.Helper()
	var sets []appsv1.ReplicaSet
	poll(t, fmt.Sprintf("replica sets %v", want), func() bool {
		var err error
		if sets, err = ownedSets(context.Background(), c, d); err != nil {
			return false
		}
		got := map[string]int{}
		for _, rs := range sets {
			if n := ptr.Deref(rs.Spec.Replicas, 0); n > 0 && rs.Status.ReadyReplicas == n {
				got[rs.Spec.Template.Annotations["note"]] = int(n)
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	return sets
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func poll(t *testing.T, what string, done func() bool) {
	t.Helper()
	pollErr(t, what, func() (bool, error) { return done(), nil })
}

func pollErr(t *testing.T, what string, done func() (bool, error)) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, pollTimeout, true,
		func(context.Context) (bool, error) {
			ok, err := done()
			lastErr = err
			return ok && err == nil, nil
		})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, lastErr)
	}
}

// eventually retries a call that may fail on a stale cache (a conflict, not yet initialized).
func eventually(t *testing.T, what string, call func() error) {
	t.Helper()
	pollErr(t, what, func() (bool, error) { err := call(); return err == nil, err })
}

// podMonitor watches the pods of a Deployment and records any moment with more live pods than
// replicas+maxSurge or fewer ready pods than replicas-maxUnavailable.
type podMonitor struct {
	t       *testing.T
	cancel  context.CancelFunc
	done    chan struct{}
	rolling *appsv1.RollingUpdateDeployment

	mu         sync.Mutex
	pods       map[string]*corev1.Pod
	replicas   int32
	peakTotal  int
	lowReady   int
	violations []string
}

func watchPods(t *testing.T, ns, selector string, rolling *appsv1.RollingUpdateDeployment) *podMonitor {
	t.Helper()
	cs, err := kubernetes.NewForConfig(clusterConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	m := &podMonitor{t: t, cancel: cancel, rolling: rolling, done: make(chan struct{}), pods: map[string]*corev1.Pod{}, lowReady: math.MaxInt}
	for i := range list.Items {
		m.pods[list.Items[i].Name] = &list.Items[i]
	}
	go m.run(w)
	t.Cleanup(m.stop)
	return m
}

func (m *podMonitor) run(w watch.Interface) {
	defer close(m.done)
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		m.mu.Lock()
		if ev.Type == watch.Deleted {
			delete(m.pods, p.Name)
		} else {
			m.pods[p.Name] = p
		}
		m.check()
		m.mu.Unlock()
	}
}

// arm starts checking against replicas (0 before the first call).
func (m *podMonitor) arm(replicas int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replicas = replicas
	m.check()
}

func (m *podMonitor) check() {
	if m.replicas == 0 {
		return
	}
	total, ready := 0, 0
	for _, p := range m.pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			total++
			if podReady(p) {
				ready++
			}
		}
	}
	surge, unavailable, _ := ResolveFenceposts(m.rolling, m.replicas)
	maxTotal, minReady := int(m.replicas+surge), int(m.replicas-unavailable)
	m.peakTotal, m.lowReady = max(m.peakTotal, total), min(m.lowReady, ready)
	if total > maxTotal || ready < minReady {
		m.violations = append(m.violations, fmt.Sprintf("%d pods (max %d), %d ready (min %d)", total, maxTotal, ready, minReady))
	}
}

// stop ends the watch and reports what it saw.
func (m *podMonitor) stop() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	<-m.done
	m.cancel = nil
	m.mu.Lock()
	defer m.mu.Unlock()
	m.t.Logf("pods: peak %d live, low %d ready", m.peakTotal, m.lowReady)
	for _, v := range m.violations {
		m.t.Errorf("pod limits broken: %s", v)
	}
}

// TestSkipsWhatIsNotItsToRoll creates Deployments already held by a release: a partition-style one gets
// its ReplicaSet, a canary-style one and one with a malformed strategy get none (the latter a warning).
func TestSkipsWhatIsNotItsToRoll(t *testing.T) {
	_, c := startManager(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "skip-it")
	held := func(name, strategy string) *appsv1.Deployment {
		d := demoDeployment(ns, name, 2)
		d.Spec.Paused = true
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		d.Annotations = map[string]string{
			rolloutsv1beta1.BatchReleaseControlAnnotation: control.ControlInfo(metav1.OwnerReference{Kind: "BatchRelease", Name: name}),
			rolloutsv1beta1.DeploymentStrategyAnnotation:  strategy,
		}
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	canary := held("canary", `{"rollingStyle":"Canary","partition":1}`)
	broken := held("broken", `{"rollingStyle":"Partition","partition":`)
	partition := held("partition", `{"rollingStyle":"Partition","partition":0}`)
	waitPods(t, c, partition, map[string]int{"v1": 2})
	poll(t, "an InvalidStrategy warning", func() bool {
		list := &eventsv1.EventList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false
		}
		return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Reason == "InvalidStrategy" && e.Regarding.Name == broken.Name && e.Type == corev1.EventTypeWarning
		})
	})
	for _, d := range []*appsv1.Deployment{canary, broken} {
		if sets, err := ownedSets(ctx, c, d); err != nil || len(sets) != 0 {
			t.Errorf("deployment %s: replica sets %s (%v), want none", d.Name, names(sets), err)
		}
	}
}

// checkStamps waits for the new ReplicaSet to lose its stamps once its pods exist, then checks that its pods
// were created with their batch's labels: count per rollout-batch-id, every one with the rollout-id v2.
func checkStamps(t *testing.T, c client.Client, d *appsv1.Deployment, want map[string]int) {
	t.Helper()
	eventually(t, "the new ReplicaSet unstamped", func() error {
		sets := &appsv1.ReplicaSetList{}
		if err := c.List(context.Background(), sets, client.InNamespace(d.Namespace)); err != nil {
			return err
		}
		for _, rs := range sets.Items {
			if stamped := control.StampedBatchLabels(&rs.Spec.Template, &d.Spec.Template); stamped != nil {
				return fmt.Errorf("replica set %s stamped with %v", rs.Name, stamped)
			}
		}
		return nil
	})
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Annotations["note"] == "v2" && p.Labels[rolloutsv1beta1.RolloutIDLabel] == "v2" {
			got[p.Labels[rolloutsv1beta1.RolloutBatchIDLabel]]++
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("new pods by batch %v, want %v", got, want)
	}
}
