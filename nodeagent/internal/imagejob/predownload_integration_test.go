package imagejob_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/component-base/featuregate"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/flotilla-dev/flotilla/rollout/feature"
	"github.com/flotilla-dev/flotilla/rollout/module"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/cloneset"
	"github.com/flotilla-dev/flotilla/workloads/daemonset"
	"github.com/flotilla-dev/flotilla/workloads/nodeplacement"
	"github.com/flotilla-dev/flotilla/workloads/statefulset"
)

// The ImagePullJob a CloneSet's image pre-download creates (workloads/cloneset/internal/plan preDownloadJob:
// owned by the CloneSet, no webhook defaults, a podSelector of the old revision's pods, parallelism and policies
// from its annotations) is picked up: only the nodes of the pods not yet updated pull, and it completes.
func TestCloneSetPreDownloadJobIsPickedUp(t *testing.T) {
	e := start(t)
	nodes := e.nodes(3)
	cs := &kruiseappsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"},
		Spec: kruiseappsv1alpha1.CloneSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}}},
		}}
	managertest.Create(t, e.c, cs)
	// Old pods on the first two nodes, an updated one on the third; a pod of another app beside them.
	e.pod("old-0", nodes[0], map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-old"})
	e.pod("old-1", nodes[1], map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-old"})
	e.pod("new-0", nodes[2], map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "web-new"})
	e.pod("other", nodes[2], map[string]string{"app": "other"})

	job := &kruiseappsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web-new-main", Labels: map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: "new"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, kruiseappsv1alpha1.GroupVersion.WithKind("CloneSet"))}},
		Spec: kruiseappsv1alpha1.ImagePullJobSpec{Image: "nginx:2", ImagePullJobTemplate: kruiseappsv1alpha1.ImagePullJobTemplate{
			PodSelector: &kruiseappsv1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{
				MatchLabels: map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: appsv1.ControllerRevisionHashLabelKey,
					Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web-new", "new"}}}}},
			Parallelism: ptr.To(intstr.FromInt32(2)),
			PullPolicy:  &kruiseappsv1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](1), TimeoutSeconds: ptr.To[int32](300)},
			CompletionPolicy: kruiseappsv1alpha1.CompletionPolicy{Type: kruiseappsv1alpha1.Always,
				TTLSecondsAfterFinished: ptr.To[int32](600)},
		}},
	}
	managertest.Create(t, e.c, job)
	e.waitJob(job, "the old pods' nodes pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Desired == 2 && s.Active == 2 })
	if got := e.ownedBy(job, "nginx", "2", nodes); len(got) != 2 || got[0] != nodes[0] || got[1] != nodes[1] {
		t.Fatalf("nodes pulling %v, want those of the old pods %v", got, nodes[:2])
	}
	e.report(nodes[0], "nginx", "2", succeeded, "")
	e.report(nodes[1], "nginx", "2", succeeded, "")
	job = e.waitJob(job, "completed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	if s := job.Status; s.Succeeded != 2 || s.Failed != 0 {
		t.Errorf("status %+v", s)
	}
}

// pod creates a pod bound to node (no kubelet runs it: bound is what a podSelector reads).
func (e *env) pod(name, node string, labels map[string]string) {
	e.t.Helper()
	managertest.Create(e.t, e.c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}}})
}

// The CloneSet controller and the ImagePullJob controller together: an InPlaceIfPossible CloneSet held by a
// partition gets a new image; the job its pre-download creates is picked up, the nodes of its pods (and no
// other) get the tag with the timeout of the CloneSet's annotation and upstream's single retry, and once their
// agents (the test) report success the job completes and takes its tags back.
func TestCloneSetPreDownloadEndToEnd(t *testing.T) {
	e := startWithModule(t, cloneset.SetupWithManager, feature.PreDownloadImageForInPlaceUpdate)
	nodes := e.nodes(3)
	cs := &kruiseappsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web", Annotations: map[string]string{
		kruiseappsv1alpha1.ImagePreDownloadTimeoutSecondsKey: "45", kruiseappsv1alpha1.ImagePreDownloadParallelismKey: "2"}},
		Spec: kruiseappsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}}},
			UpdateStrategy: kruiseappsv1alpha1.CloneSetUpdateStrategy{Type: kruiseappsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
				Partition: ptr.To(intstr.FromInt32(4))},
		}}
	managertest.Create(t, e.c, cs)
	// No scheduler runs: the test binds the CloneSet's pods to the first two nodes, two each.
	e.bindPods(cs.Namespace, cs.Spec.Selector.MatchLabels, *cs.Spec.Replicas, nodes[:2])

	managertest.Update(t, e.c, cs, func(cs *kruiseappsv1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	job := e.onlyJob("the CloneSet's pre-download job")
	if job.Spec.Image != "nginx:2" || metav1.GetControllerOf(job).UID != cs.UID {
		t.Fatalf("job %+v", job)
	}
	e.waitJob(job, "the pods' nodes pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Desired == 2 && s.Active == 2 })
	if got := e.ownedBy(job, "nginx", "2", nodes); !slices.Equal(got, nodes[:2]) {
		t.Fatalf("nodes with the job's tag %v, want those of the pods %v", got, nodes[:2])
	}
	for _, n := range nodes[:2] {
		spec, _ := e.tag(n, "nginx", "2")
		if pp := spec.PullPolicy; pp == nil {
			t.Errorf("%s: tag without a pull policy", n)
		} else if ptr.Deref(pp.TimeoutSeconds, 0) != 45 || ptr.Deref(pp.BackoffLimit, -1) != 1 {
			t.Errorf("%s: tag pull policy timeout %d s, backoff limit %d; want the annotation's 45 s and 1", n,
				ptr.Deref(pp.TimeoutSeconds, 0), ptr.Deref(pp.BackoffLimit, -1))
		}
	}

	e.report(nodes[0], "nginx", "2", succeeded, "")
	e.report(nodes[1], "nginx", "2", succeeded, "")
	job = e.waitJob(job, "completed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	if s := job.Status; s.Desired != 2 || s.Succeeded != 2 || s.Failed != 0 || s.Message != "job has completed" {
		t.Errorf("final status %+v", s)
	}
	managertest.Eventually(t, itTimeout, "the job's tags taken back", func(context.Context) (bool, error) {
		return len(e.ownedBy(job, "nginx", "2", nodes)) == 0, nil
	})
	if err := e.get(cs); err != nil || cs.Status.UpdatedReplicas != 0 {
		t.Errorf("the partition let pods update: %d updated (%v)", cs.Status.UpdatedReplicas, err)
	}
}

// The Advanced StatefulSet controller and the ImagePullJob controller together: an InPlaceIfPossible set whose
// partition holds every ordinal gets a new image; its pre-download job, owned by the set, pulls on the nodes of
// its pods (and no other) with the set's timeout and parallelism, completes once their agents (the test) report success, and goes
// once the set runs one revision again.
func TestStatefulSetPreDownloadEndToEnd(t *testing.T) {
	e := startWithModule(t, statefulset.SetupWithManager, feature.PreDownloadImageForInPlaceUpdate)
	nodes := e.nodes(3)
	set := &kruiseappsv1beta1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "db", Annotations: map[string]string{
		kruiseappsv1alpha1.ImagePreDownloadTimeoutSecondsKey: "45", kruiseappsv1alpha1.ImagePreDownloadParallelismKey: "2"}},
		Spec: kruiseappsv1beta1.StatefulSetSpec{
			Replicas: ptr.To[int32](4), PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}},
					Containers: []corev1.Container{{Name: "main", Image: "redis:7"}}}},
			UpdateStrategy: kruiseappsv1beta1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](4),
					PodUpdatePolicy: kruiseappsv1beta1.InPlaceIfPossiblePodUpdateStrategyType}},
		}}
	managertest.Create(t, e.c, set)
	e.bindPods(set.Namespace, set.Spec.Selector.MatchLabels, *set.Spec.Replicas, nodes[:2])

	managertest.Update(t, e.c, set, func(set *kruiseappsv1beta1.StatefulSet) { set.Spec.Template.Spec.Containers[0].Image = "redis:8" })
	job := e.onlyJob("the set's pre-download job")
	if job.Spec.Image != "redis:8" || metav1.GetControllerOf(job).UID != set.UID || job.Labels["app"] != "db" {
		t.Fatalf("job %+v", job)
	}
	e.waitJob(job, "the pods' nodes pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Desired == 2 && s.Active == 2 })
	if got := e.ownedBy(job, "redis", "8", nodes); !slices.Equal(got, nodes[:2]) {
		t.Fatalf("nodes with the job's tag %v, want those of the pods %v", got, nodes[:2])
	}
	if spec, _ := e.tag(nodes[0], "redis", "8"); spec.PullPolicy == nil || ptr.Deref(spec.PullPolicy.TimeoutSeconds, 0) != 45 {
		t.Errorf("tag pull policy %+v, want the annotation's timeout of 45 s", spec.PullPolicy)
	}
	e.report(nodes[0], "redis", "8", succeeded, "")
	e.report(nodes[1], "redis", "8", succeeded, "")
	e.waitJob(job, "completed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil && s.Succeeded == 2 })

	// Back to the old image: the set runs one revision again, and its job goes.
	managertest.Update(t, e.c, set, func(set *kruiseappsv1beta1.StatefulSet) { set.Spec.Template.Spec.Containers[0].Image = "redis:7" })
	managertest.Eventually(t, itTimeout, "the pre-download job deleted", func(ctx context.Context) (bool, error) {
		jobs := &kruiseappsv1alpha1.ImagePullJobList{}
		err := e.c.List(ctx, jobs, client.InNamespace(e.ns))
		return err == nil && len(jobs.Items) == 0, err
	})
}

// The Advanced DaemonSet controller and the ImagePullJob controller together: a DaemonSet whose partition holds
// every node gets a new image and a new argument, an update that recreates pods; its pre-download job, owned by
// the DaemonSet, pulls on every node of its pods with the DaemonSet's parallelism, completes once their agents
// (the test) report success, and goes once the DaemonSet runs one revision again.
func TestDaemonSetPreDownloadEndToEnd(t *testing.T) {
	e := startWithModule(t, daemonset.SetupWithManager, feature.PreDownloadImageForDaemonSetUpdate)
	nodes := e.nodes(3)
	for i, n := range nodes {
		// A node as kwok's, with capacity for pods; no kwok runs here, so pods stay as bound.
		node := cluster.KwokNode(n, 2000+i, 0)
		maps.Copy(node.Labels, e.label)
		managertest.Create(t, e.c, node)
		t.Cleanup(func() { _ = e.c.Delete(context.Background(), node) })
	}
	ds := &kruiseappsv1alpha1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "agent", Annotations: map[string]string{
		kruiseappsv1alpha1.ImagePreDownloadParallelismKey: "3"}},
		Spec: kruiseappsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				// No kubelet makes the nodes Ready: the pods tolerate the API server's not-ready taint.
				Spec: corev1.PodSpec{NodeSelector: e.label, Containers: []corev1.Container{{Name: "main", Image: "agent:1"}},
					Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}}}},
			UpdateStrategy: kruiseappsv1alpha1.DaemonSetUpdateStrategy{Type: kruiseappsv1alpha1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &kruiseappsv1alpha1.RollingUpdateDaemonSet{Partition: ptr.To(intstr.FromInt32(3))}},
		}}
	managertest.Create(t, e.c, ds)
	e.bindDaemonPods(ds.Namespace, ds.Spec.Selector.MatchLabels, len(nodes))

	managertest.Update(t, e.c, ds, func(ds *kruiseappsv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Image = "agent:2"
		ds.Spec.Template.Spec.Containers[0].Args = []string{"--v=2"}
	})
	job := e.onlyJob("the DaemonSet's pre-download job")
	if job.Spec.Image != "agent:2" || metav1.GetControllerOf(job).UID != ds.UID {
		t.Fatalf("job %+v", job)
	}
	e.waitJob(job, "every node pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Desired == 3 && s.Active == 3 })
	if got := e.ownedBy(job, "agent", "2", nodes); !slices.Equal(got, nodes) {
		t.Fatalf("nodes with the job's tag %v, want every node %v", got, nodes)
	}
	for _, n := range nodes {
		e.report(n, "agent", "2", succeeded, "")
	}
	e.waitJob(job, "completed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil && s.Succeeded == 3 })

	managertest.Update(t, e.c, ds, func(ds *kruiseappsv1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Image = "agent:1"
		ds.Spec.Template.Spec.Containers[0].Args = nil
	})
	managertest.Eventually(t, itTimeout, "the pre-download job deleted", func(ctx context.Context) (bool, error) {
		jobs := &kruiseappsv1alpha1.ImagePullJobList{}
		err := e.c.List(ctx, jobs, client.InNamespace(e.ns))
		return err == nil && len(jobs.Items) == 0, err
	})
}

// bindDaemonPods waits for a DaemonSet's n pods and binds each to the node it is pinned to, as a scheduler would.
func (e *env) bindDaemonPods(ns string, sel map[string]string, n int) {
	e.t.Helper()
	pods := &corev1.PodList{}
	managertest.Eventually(e.t, itTimeout, "the DaemonSet's pods", func(ctx context.Context) (bool, error) {
		err := e.c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(sel))
		return err == nil && len(pods.Items) == n, err
	})
	for i := range pods.Items {
		p := &pods.Items[i]
		node, err := nodeplacement.TargetNode(p)
		if err != nil {
			e.t.Fatal(err)
		}
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		if err := e.c.SubResource("binding").Create(e.t.Context(), p, binding); err != nil {
			e.t.Fatal(err)
		}
	}
}

// startWithModule starts the job controllers with a workload module beside them, with the pre-download gate on.
func startWithModule(t *testing.T, setup func(context.Context, ctrl.Manager, module.Options) error, on featuregate.Feature) *env {
	t.Helper()
	gate, err := feature.NewGate()
	if err != nil {
		t.Fatal(err)
	}
	if err := gate.Set(string(on) + "=true"); err != nil {
		t.Fatal(err)
	}
	return startWith(t, startOptions{
		setup: func(mgr ctrl.Manager) error {
			return setup(t.Context(), mgr, module.Options{Features: feature.Resolve(gate),
				PodMutations: &webhooks.PodChain{}, InPlaceUpdates: &module.InPlaceUpdateChecks{}})
		},
		configure: []func(*ctrl.Options){func(o *ctrl.Options) { o.WebhookServer = unservedWebhooks{webhook.NewServer(webhook.Options{})} }},
	})
}

// onlyJob waits for the namespace's one ImagePullJob.
func (e *env) onlyJob(what string) *kruiseappsv1alpha1.ImagePullJob {
	e.t.Helper()
	job := &kruiseappsv1alpha1.ImagePullJob{}
	managertest.Eventually(e.t, itTimeout, what, func(ctx context.Context) (bool, error) {
		jobs := &kruiseappsv1alpha1.ImagePullJobList{}
		if err := e.c.List(ctx, jobs, client.InNamespace(e.ns)); err != nil || len(jobs.Items) != 1 {
			return false, err
		}
		*job = jobs.Items[0]
		return true, nil
	})
	return job
}

// bindPods waits for a workload's replicas pods (selected by sel) and binds them to nodes in turn, as a
// scheduler would.
func (e *env) bindPods(ns string, sel map[string]string, replicas int32, nodes []string) {
	e.t.Helper()
	pods := &corev1.PodList{}
	managertest.Eventually(e.t, itTimeout, "the workload's pods", func(ctx context.Context) (bool, error) {
		err := e.c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(sel))
		return err == nil && int32(len(pods.Items)) == replicas, err
	})
	for i := range pods.Items {
		p := &pods.Items[i]
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
			Target: corev1.ObjectReference{Kind: "Node", Name: nodes[i%len(nodes)]}}
		if err := e.c.SubResource("binding").Create(e.t.Context(), p, binding); err != nil {
			e.t.Fatal(err)
		}
	}
}

// unservedWebhooks holds the webhooks a module registers without serving them: the test's API server calls
// none, and a served one would want certificates.
type unservedWebhooks struct{ webhook.Server }

func (unservedWebhooks) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}
