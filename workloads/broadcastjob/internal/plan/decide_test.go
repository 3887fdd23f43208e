package plan

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// want is what a decision must say; phase "" means the job's phase is kept as running.
type want struct {
	create  []string
	delete  []string
	counts  [4]int32 // desired, active, succeeded, failed
	phase   kruiseappsv1alpha1.BroadcastJobPhase
	cond    kruiseappsv1alpha1.JobConditionType
	message string
	events  []string // reasons
	wake    time.Duration
}

func TestDecide(t *testing.T) {
	ten := nodes(10)
	names10 := []string{"node-00", "node-01", "node-02", "node-03", "node-04", "node-05", "node-06", "node-07", "node-08", "node-09"}
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{"a new job gets a pod on every node", Input{Job: job(), Nodes: nodes(3)},
			want{create: names10[:3], counts: [4]int32{3, 3, 0, 0}}},
		{"parallelism 3 of 10 nodes: the first three by name", Input{Job: job(parallelism(intstr.FromInt32(3))), Nodes: ten},
			want{create: names10[:3], counts: [4]int32{10, 3, 0, 0}}},
		{"parallelism 3: a finished pod makes room for one more", Input{Job: job(parallelism(intstr.FromInt32(3))), Nodes: ten,
			Pods: append(podsOn(corev1.PodRunning, "node-00", "node-01"), podsOn(corev1.PodSucceeded, "node-02")...)},
			want{create: []string{"node-03"}, counts: [4]int32{10, 3, 1, 0}}},
		{"parallelism 50% of 10 desired, 2 active", Input{Job: job(parallelism(intstr.FromString("50%"))), Nodes: ten,
			Pods: podsOn(corev1.PodRunning, "node-04", "node-07")},
			want{create: []string{"node-00", "node-01", "node-02"}, counts: [4]int32{10, 5, 0, 0}}},
		{"more active than parallelism: none created, a warning", Input{Job: job(parallelism(intstr.FromInt32(1))), Nodes: ten,
			Pods: podsOn(corev1.PodRunning, "node-04", "node-07")},
			want{counts: [4]int32{10, 2, 0, 0}, events: []string{ReasonTooManyActivePods}}},
		{"every desired node done: completed", Input{Job: job(), Nodes: nodes(3),
			Pods: append(podsOn(corev1.PodSucceeded, "node-00", "node-01"), pod("x", "node-02", corev1.PodRunning, deleting))},
			want{counts: [4]int32{3, 0, 2, 0}, phase: kruiseappsv1alpha1.PhaseCompleted, cond: kruiseappsv1alpha1.JobComplete,
				message: "Job completed, 2 pods succeeded, 0 pods failed", events: []string{ReasonJobComplete}}},
		{"no node at all: still running", Input{Job: job()}, want{}},
		{"completion policy Never: new nodes get a pod, the job never completes", Input{Job: job(never), Nodes: nodes(3),
			Pods: podsOn(corev1.PodSucceeded, "node-00", "node-01")},
			want{create: []string{"node-02"}, counts: [4]int32{3, 1, 2, 0}}},
		{"Never, all done: still running", Input{Job: job(never), Nodes: nodes(2), Pods: podsOn(corev1.PodSucceeded, "node-00", "node-01")},
			want{counts: [4]int32{2, 0, 2, 0}}},
		{"FailFast: a failed pod fails the job and deletes the running ones", Input{Job: job(), Nodes: nodes(4),
			Pods: append(podsOn(corev1.PodRunning, "node-00", "node-01"), append(podsOn(corev1.PodFailed, "node-02"), podsOn(corev1.PodSucceeded, "node-03")...)...)},
			want{delete: []string{"p-node-00", "p-node-01"}, counts: [4]int32{4, 0, 1, 3}, phase: kruiseappsv1alpha1.PhaseFailed,
				cond: kruiseappsv1alpha1.JobFailed, message: "failure policy is FailurePolicyTypeFailFast and failed pod is found",
				events: []string{ReasonFailedPodFound}}},
		{"Continue: a failed pod is one done node", Input{Job: job(failurePolicy(kruiseappsv1alpha1.FailurePolicyTypeContinue)), Nodes: nodes(3),
			Pods: append(podsOn(corev1.PodFailed, "node-00"), podsOn(corev1.PodSucceeded, "node-01", "node-02")...)},
			want{counts: [4]int32{3, 0, 2, 1}, phase: kruiseappsv1alpha1.PhaseCompleted, cond: kruiseappsv1alpha1.JobComplete,
				message: "Job completed, 2 pods succeeded, 1 pods failed", events: []string{ReasonJobComplete}}},
		{"Continue: more nodes still get pods", Input{Job: job(failurePolicy(kruiseappsv1alpha1.FailurePolicyTypeContinue)), Nodes: nodes(3),
			Pods: podsOn(corev1.PodFailed, "node-00")},
			want{create: []string{"node-01", "node-02"}, counts: [4]int32{3, 2, 0, 1}}},
		{"Pause: a failed pod pauses the job", Input{Job: job(failurePolicy(kruiseappsv1alpha1.FailurePolicyTypePause)), Nodes: nodes(3),
			Pods: podsOn(corev1.PodFailed, "node-00")},
			want{counts: [4]int32{3, 0, 0, 1}, phase: kruiseappsv1alpha1.PhasePaused, events: []string{ReasonPaused}}},
		{"Pause: already paused, no second event", Input{Job: job(failurePolicy(kruiseappsv1alpha1.FailurePolicyTypePause),
			func(j *kruiseappsv1alpha1.BroadcastJob) { j.Status.Phase = kruiseappsv1alpha1.PhasePaused }), Nodes: nodes(3),
			Pods: podsOn(corev1.PodFailed, "node-00")},
			want{counts: [4]int32{3, 0, 0, 1}, phase: kruiseappsv1alpha1.PhasePaused}},
		{"spec.paused: no pods, phase paused", Input{Job: job(func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.Paused = true }), Nodes: nodes(2)},
			want{counts: [4]int32{2, 0, 0, 0}, phase: kruiseappsv1alpha1.PhasePaused}},
		{"paused beyond its deadline: still only paused", Input{Now: t0.Add(time.Hour), Nodes: nodes(1),
			Job: job(deadline(20), func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.Paused = true })},
			want{counts: [4]int32{1, 0, 0, 0}, phase: kruiseappsv1alpha1.PhasePaused}},
		{"resumed: running again, pods created", Input{Job: job(func(j *kruiseappsv1alpha1.BroadcastJob) { j.Status.Phase = kruiseappsv1alpha1.PhasePaused }),
			Nodes: nodes(2)}, want{create: []string{"node-00", "node-01"}, counts: [4]int32{2, 2, 0, 0}, events: []string{ReasonContinue}}},
		{"the deadline passed: failed, running pods deleted", Input{Now: t0.Add(20 * time.Second), Job: job(deadline(20)), Nodes: nodes(2),
			Pods: append(podsOn(corev1.PodRunning, "node-00"), podsOn(corev1.PodSucceeded, "node-01")...)},
			want{delete: []string{"p-node-00"}, counts: [4]int32{2, 0, 1, 1}, phase: kruiseappsv1alpha1.PhaseFailed, cond: kruiseappsv1alpha1.JobFailed,
				message: "Job ns/bcj was active longer than specified deadline", events: []string{ReasonDeadlineExceeded}}},
		{"the deadline passed after a lost status write: the pods being deleted count as failed", Input{Now: t0.Add(21 * time.Second),
			Job: job(deadline(20)), Nodes: nodes(2), Pods: []*corev1.Pod{pod("a", "node-00", corev1.PodRunning, deleting), pod("b", "node-01", corev1.PodPending, deleting)}},
			want{counts: [4]int32{2, 0, 0, 2}, phase: kruiseappsv1alpha1.PhaseFailed, cond: kruiseappsv1alpha1.JobFailed,
				message: "Job ns/bcj was active longer than specified deadline", events: []string{ReasonDeadlineExceeded}}},
		{"the deadline ahead: wake then", Input{Now: t0.Add(5 * time.Second), Job: job(deadline(20)), Nodes: nodes(1),
			Pods: podsOn(corev1.PodRunning, "node-00")},
			want{counts: [4]int32{1, 1, 0, 0}, wake: 15 * time.Second}},
		{"failed with a TTL: wake when it is due", Input{Now: t0, Job: job(deadline(0), func(j *kruiseappsv1alpha1.BroadcastJob) {
			j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](10)
		}), Nodes: nodes(1)},
			want{counts: [4]int32{1, 0, 0, 0}, phase: kruiseappsv1alpha1.PhaseFailed, cond: kruiseappsv1alpha1.JobFailed,
				message: "Job ns/bcj was active longer than specified deadline", events: []string{ReasonDeadlineExceeded}, wake: 10 * time.Second}},
		{"restartPolicy OnFailure past restartLimit: failed", Input{Job: job(failurePolicy(kruiseappsv1alpha1.FailurePolicyTypeContinue),
			func(j *kruiseappsv1alpha1.BroadcastJob) { j.Spec.FailurePolicy.RestartLimit = 2 }), Nodes: nodes(3),
			Pods: []*corev1.Pod{pod("a", "node-00", corev1.PodRunning, restarts(corev1.RestartPolicyOnFailure, 3)),
				pod("b", "node-01", corev1.PodRunning, restarts(corev1.RestartPolicyOnFailure, 2)),
				pod("c", "node-02", corev1.PodRunning, restarts(corev1.RestartPolicyNever, 9))}},
			want{counts: [4]int32{3, 2, 0, 1}}},
		{"a taint the pod does not tolerate moves it off", Input{Job: job(), Nodes: []*corev1.Node{node("node-00", tainted(corev1.TaintEffectNoExecute)), node("node-01")},
			Pods: podsOn(corev1.PodRunning, "node-00", "node-01")},
			want{delete: []string{"p-node-00"}, counts: [4]int32{1, 1, 0, 1}}},
		{"a failed job of policy Never only counts", Input{Job: job(never, func(j *kruiseappsv1alpha1.BroadcastJob) { j.Status.Phase = kruiseappsv1alpha1.PhaseFailed }),
			Nodes: nodes(2), Pods: podsOn(corev1.PodFailed, "node-00")},
			want{counts: [4]int32{2, 0, 0, 1}, phase: kruiseappsv1alpha1.PhaseFailed}},
		{"two live pods on a node: a warning", Input{Job: job(), Nodes: nodes(1),
			Pods: []*corev1.Pod{pod("a", "node-00", corev1.PodRunning), pod("b", "node-00", corev1.PodRunning)}},
			want{counts: [4]int32{1, 2, 0, 0}, events: []string{ReasonDuplicatePod}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in.Now.IsZero() {
				tt.in.Now = t0
			}
			before := tt.in.Job.DeepCopy()
			d := Decide(tt.in)
			checkDecision(t, d, tt.want)
			if diff := cmp.Diff(before, tt.in.Job); diff != "" {
				t.Errorf("Decide changed the job (-before +after):\n%s", diff)
			}
		})
	}
}

func checkDecision(t *testing.T, d Decision, w want) {
	t.Helper()
	if diff := cmp.Diff(w.create, d.Create); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(w.delete, names(d.Delete)); diff != "" && (len(w.delete) > 0 || len(d.Delete) > 0) {
		t.Errorf("delete (-want +got):\n%s", diff)
	}
	st := d.Status
	if got := [4]int32{st.Desired, st.Active, st.Succeeded, st.Failed}; got != w.counts {
		t.Errorf("desired, active, succeeded, failed = %v, want %v", got, w.counts)
	}
	phase := w.phase
	if phase == "" {
		phase = kruiseappsv1alpha1.PhaseRunning
	}
	if st.Phase != phase {
		t.Errorf("phase %q, want %q", st.Phase, phase)
	}
	checkCondition(t, st, w)
	var reasons []string
	for _, e := range d.Events {
		reasons = append(reasons, e.Reason)
	}
	if !slices.Equal(reasons, w.events) {
		t.Errorf("events %v, want %v", reasons, w.events)
	}
	if d.Wake != w.wake {
		t.Errorf("wake %v, want %v", d.Wake, w.wake)
	}
}

func checkCondition(t *testing.T, st kruiseappsv1alpha1.BroadcastJobStatus, w want) {
	t.Helper()
	if w.cond == "" {
		if len(st.Conditions) > 0 || st.CompletionTime != nil {
			t.Errorf("conditions %v, completion %v: want none", st.Conditions, st.CompletionTime)
		}
		return
	}
	if len(st.Conditions) != 1 {
		t.Fatalf("conditions %v, want one %s", st.Conditions, w.cond)
	}
	c := st.Conditions[0]
	if c.Type != w.cond || c.Status != corev1.ConditionTrue || c.Reason != string(w.cond) || c.Message != w.message {
		t.Errorf("condition %+v, want %s True with message %q", c, w.cond, w.message)
	}
	if st.CompletionTime == nil || !st.CompletionTime.Time.Equal(t0) && st.CompletionTime.Time.Before(t0) {
		t.Errorf("completion time %v", st.CompletionTime)
	}
}

// A new job is stamped with its start; the start stays.
func TestDecideStartTime(t *testing.T) {
	j := job(func(j *kruiseappsv1alpha1.BroadcastJob) { j.Status = kruiseappsv1alpha1.BroadcastJobStatus{} })
	d := Decide(Input{Now: t0, Job: j})
	if d.Status.StartTime == nil || !d.Status.StartTime.Time.Equal(t0) || d.Status.Phase != kruiseappsv1alpha1.PhaseRunning {
		t.Errorf("start %v phase %q", d.Status.StartTime, d.Status.Phase)
	}
	if d := Decide(Input{Now: t0.Add(time.Hour), Job: job()}); !d.Status.StartTime.Time.Equal(t0) {
		t.Errorf("start moved to %v", d.Status.StartTime)
	}
}

func TestDecideFinished(t *testing.T) {
	tests := []struct {
		name      string
		job       *kruiseappsv1alpha1.BroadcastJob
		pods      []*corev1.Pod
		deleteJob bool
		delete    []string
		wake      time.Duration
	}{
		{"complete, no TTL: kept", job(finished(kruiseappsv1alpha1.JobComplete, t0, nil)), nil, false, nil, 0},
		{"complete, TTL ahead", job(finished(kruiseappsv1alpha1.JobComplete, t0.Add(-4*time.Second), ptr.To[int32](10))), nil, false, nil, 6 * time.Second},
		{"complete, TTL passed", job(finished(kruiseappsv1alpha1.JobComplete, t0.Add(-10*time.Second), ptr.To[int32](10))), nil, true, nil, 0},
		{"TTL 0: deleted at once", job(finished(kruiseappsv1alpha1.JobComplete, t0, ptr.To[int32](0))), nil, true, nil, 0},
		{"failed with a pod left running: deleted", job(finished(kruiseappsv1alpha1.JobFailed, t0, nil)),
			append(podsOn(corev1.PodRunning, "node-00"), pod("gone", "node-01", corev1.PodRunning, deleting)), false, []string{"p-node-00"}, 0},
	}
	for _, tt := range tests {
		d := Decide(Input{Now: t0, Job: tt.job, Nodes: nodes(2), Pods: tt.pods})
		if d.DeleteJob != tt.deleteJob || d.Wake != tt.wake || !slices.Equal(names(d.Delete), tt.delete) || len(d.Create) > 0 {
			t.Errorf("%s: deleteJob %v wake %v delete %v create %v", tt.name, d.DeleteJob, d.Wake, names(d.Delete), d.Create)
		}
		if diff := cmp.Diff(tt.job.Status, d.Status); diff != "" {
			t.Errorf("%s: a finished job's status changed:\n%s", tt.name, diff)
		}
	}
	// A job of policy Never never finishes: its conditions do not stop it.
	if Finished(job(never, finished(kruiseappsv1alpha1.JobFailed, t0, nil))) {
		t.Error("a job of policy Never finished")
	}
}

// Nodes are judged as the scheduler would: node selector, affinity, taints, cordoning and resources.
func TestPlaceJudgesNodes(t *testing.T) {
	spec := job().Spec.Template.Spec
	spec.NodeSelector = map[string]string{"disk": "ssd"}
	spec.Tolerations = []corev1.Toleration{{Key: "tolerated", Operator: corev1.TolerationOpExists}}
	spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	ssd := func(n *corev1.Node) { n.Labels["disk"] = "ssd" }
	in := []*corev1.Node{
		node("a-fits", ssd),
		node("b-no-label"),
		node("c-noschedule", ssd, tainted(corev1.TaintEffectNoSchedule)),
		node("d-tolerated", ssd, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "tolerated", Effect: corev1.TaintEffectNoExecute}}
		}),
		node("e-cordoned", ssd, func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		node("f-small", ssd, func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("1") }),
		node("g-no-pod-slots", ssd, func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("0") }),
		node("h-prefer", ssd, tainted(corev1.TaintEffectPreferNoSchedule)),
	}
	p := Place(in, &spec, nil, 0)
	if want := []string{"a-fits", "d-tolerated", "h-prefer"}; !slices.Equal(p.Pending, want) || p.Desired != 3 {
		t.Errorf("pending %v (desired %d), want %v", p.Pending, p.Desired, want)
	}
}

func TestParallelism(t *testing.T) {
	for _, tt := range []struct {
		p       *intstr.IntOrString
		desired int
		want    int32
	}{
		{nil, 10, 1<<31 - 1},
		{ptr.To(intstr.FromInt32(3)), 10, 3},
		{ptr.To(intstr.FromString("100%")), 500, 500},
		{ptr.To(intstr.FromString("25%")), 10, 3},
		{ptr.To(intstr.FromString("0%")), 10, 0},
		{ptr.To(intstr.FromString("three")), 10, 1<<31 - 1},
	} {
		if got := Parallelism(tt.p, tt.desired); got != tt.want {
			t.Errorf("Parallelism(%v, %d) = %d, want %d", tt.p, tt.desired, got, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	pods := []*corev1.Pod{
		pod("pending", "n", corev1.PodPending), pod("running", "n", corev1.PodRunning), pod("ok", "n", corev1.PodSucceeded),
		pod("bad", "n", corev1.PodFailed), pod("deleting", "n", corev1.PodRunning, deleting),
		pod("deleted-ok", "n", corev1.PodSucceeded, deleting),
		pod("restarted", "n", corev1.PodRunning, restarts(corev1.RestartPolicyOnFailure, 1)),
	}
	c := Classify(pods, 0)
	if got := [3][]string{names(c.Active), names(c.Succeeded), names(c.Failed)}; !cmp.Equal(got, [3][]string{
		{"pending", "running"}, {"ok", "deleted-ok"}, {"bad", "restarted"}}) {
		t.Errorf("active, succeeded, failed = %v", got)
	}
}

func TestNewPod(t *testing.T) {
	j := job(func(j *kruiseappsv1alpha1.BroadcastJob) {
		j.Spec.Template.Annotations = map[string]string{"a": "b"}
		j.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
	})
	p := NewPod(j, "node-7")
	ref := p.OwnerReferences[0]
	if p.GenerateName != "bcj-" || p.Namespace != "ns" || ref.Kind != "BroadcastJob" || ref.UID != "uid-1" || !*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Errorf("identity: generateName %q namespace %q owner %+v", p.GenerateName, p.Namespace, ref)
	}
	if diff := cmp.Diff(map[string]string{"app": "counter", "broadcastjob-name": "bcj", "broadcastjob-controller-uid": "uid-1"}, p.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if pinnedTo(p) != "node-7" || p.Spec.Affinity.PodAntiAffinity == nil || p.Annotations["a"] != "b" || p.Spec.NodeName != "" {
		t.Errorf("pinned to %q, anti-affinity kept %v, annotations %v, nodeName %q", pinnedTo(p), p.Spec.Affinity.PodAntiAffinity != nil, p.Annotations, p.Spec.NodeName)
	}
	if j.Spec.Template.Labels["broadcastjob-name"] != "" || j.Spec.Template.Spec.Affinity.NodeAffinity != nil {
		t.Error("NewPod changed the template")
	}
}
