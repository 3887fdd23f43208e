package imagejob_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/imagejob/plan"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	succeeded = kruiseappsv1alpha1.ImagePhaseSucceeded
	failed    = kruiseappsv1alpha1.ImagePhaseFailed
	pulling   = kruiseappsv1alpha1.ImagePhasePulling
)

// A job of parallelism 2 on three nodes: two nodes get the tag, with the job's policies and the copy of its
// pull secret; the third once one finished; then the job completes and takes everything back.
func TestParallelismAndSuccess(t *testing.T) {
	e := start(t)
	nodes := e.nodes(3)
	managertest.Create(t, e.c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "registry"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}})
	before := managertest.Counter(t, imagejob.FinishedName, map[string]string{"result": "succeeded"})
	job := e.job("web", "registry.example.com/team/web:v2", func(j *kruiseappsv1alpha1.ImagePullJob) {
		j.Spec.Selector = e.selector()
		j.Spec.Parallelism = ptr.To(intstr.FromInt32(2))
		j.Spec.PullSecrets = []string{"registry"}
	})
	const image, tag = "registry.example.com/team/web", "v2"
	job = e.waitJob(job, "two nodes pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Desired == 3 && s.Active == 2 })
	active := e.ownedBy(job, image, tag, nodes)
	if !slices.Equal(active, nodes[:2]) {
		t.Fatalf("nodes pulling %v, want the first two by name of %v", active, nodes)
	}
	e.consistently("parallelism 2 respected", func() bool { return len(e.ownedBy(job, image, tag, nodes)) == 2 })

	cp := e.checkStarted(job, nodes, image, tag)

	e.report(nodes[0], image, tag, succeeded, "")
	e.waitJob(job, "the third node started", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Succeeded == 1 && s.Active == 2 })
	if got := e.ownedBy(job, image, tag, nodes); len(got) != 3 {
		t.Fatalf("nodes with the job's tag %v", got)
	}
	e.report(nodes[1], image, tag, succeeded, "")
	e.report(nodes[2], image, tag, succeeded, "")
	job = e.waitJob(job, "completed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	if s := job.Status; s.Desired != 3 || s.Succeeded != 3 || s.Failed != 0 || s.Message != "job has completed" {
		t.Errorf("final status %+v", s)
	}
	managertest.Eventually(t, itTimeout, "tags, copy and finalizer taken back", func(ctx context.Context) (bool, error) {
		if err := e.get(job); err != nil {
			return false, err
		}
		copyErr := e.c.Get(ctx, client.ObjectKeyFromObject(cp), &corev1.Secret{})
		return len(e.ownedBy(job, image, tag, nodes)) == 0 && apierrors.IsNotFound(copyErr) && len(job.Finalizers) == 0,
			fmt.Errorf("owned by %v, finalizers %v, copy: %w", e.ownedBy(job, image, tag, nodes), job.Finalizers, copyErr)
	})
	if _, ok := e.tag(nodes[0], image, tag); ok {
		t.Error("a tag left without owners stayed")
	}
	e.waitReasons("ImagePullJob", "web", plan.ReasonStarted, plan.ReasonCompleted)
	if got := managertest.Counter(t, imagejob.FinishedName, map[string]string{"result": "succeeded"}); got != before+1 {
		t.Errorf("%s{succeeded} = %v, want %v", imagejob.FinishedName, got, before+1)
	}
}

// checkStarted checks what a running job with pull secret "registry" wrote: its tag in the first node's
// NodeImage with the job's policies, the copy of its secret the image names, its finalizer and its record of
// the active nodes (the first two). It returns the copy.
func (e *env) checkStarted(job *kruiseappsv1alpha1.ImagePullJob, nodes []string, image, tag string) *corev1.Secret {
	e.t.Helper()
	spec, _ := e.tag(nodes[0], image, tag)
	wantPolicy := kruiseappsv1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3)}
	if spec.CreatedAt == nil || spec.Version != 0 || spec.ImagePullPolicy != kruiseappsv1alpha1.PullIfNotPresent ||
		!equality.Semantic.DeepEqual(*spec.PullPolicy, wantPolicy) || spec.OwnerReferences[0].Kind != "ImagePullJob" || spec.OwnerReferences[0].Name != job.Name {
		e.t.Errorf("tag %+v, pull policy %+v", spec, spec.PullPolicy)
	}
	copyName := plan.CopyName(e.ns, "registry")
	secrets := e.nodeImage(nodes[0]).Spec.Images[image].PullSecrets
	if !slices.Equal(secrets, []kruiseappsv1alpha1.ReferenceObject{{Namespace: e.cfgNS, Name: copyName}}) {
		e.t.Errorf("image pull secrets %v, want the copy %s/%s", secrets, e.cfgNS, copyName)
	}
	cp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.cfgNS, Name: copyName}}
	if err := e.get(cp); err != nil || cp.Annotations[kruiseappsv1alpha1.ImagePullJobSecretSourceKeyAnnotation] != e.ns+"/registry" ||
		cp.Annotations[kruiseappsv1alpha1.ImagePullJobSecretReferencesAnnotation] != e.ns+"/"+job.Name || cp.Type != corev1.SecretTypeDockerConfigJson {
		e.t.Fatalf("copy %v: %v", cp.ObjectMeta, err)
	}
	if !slices.Contains(job.Finalizers, kruiseappsv1alpha1.DeletionProtectionFinalizer) || job.Annotations[plan.ActiveNodesAnnotation] != strings.Join(nodes[:2], ",") {
		e.t.Errorf("job metadata: finalizers %v, annotations %v", job.Finalizers, job.Annotations)
	}
	return cp
}

// A failed pull, reported by the agent after its retries, shows in the job with the agent's message.
func TestFailureWithBackoffReported(t *testing.T) {
	e := start(t)
	nodes := e.nodes(2)
	job := e.job("private", "registry.example.com/private:v1", func(j *kruiseappsv1alpha1.ImagePullJob) {
		j.Spec.Selector = e.selector()
		j.Spec.Parallelism = ptr.To(intstr.FromString("2"))
		j.Spec.PullPolicy = &kruiseappsv1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](2), TimeoutSeconds: ptr.To[int32](30)}
	})
	const image, tag = "registry.example.com/private", "v1"
	e.waitJob(job, "both nodes pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Active == 2 })
	if spec, _ := e.tag(nodes[1], image, tag); *spec.PullPolicy.BackoffLimit != 2 || *spec.PullPolicy.TimeoutSeconds != 30 {
		t.Errorf("the agent is not told the job's backoff: %+v", spec.PullPolicy)
	}
	e.report(nodes[0], image, tag, succeeded, "")
	e.report(nodes[1], image, tag, pulling, "attempt 2 of 3: 401 Unauthorized")
	e.waitJob(job, "still pulling between attempts", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Succeeded == 1 && s.Active == 1 })
	const reason = "pulling image registry.example.com/private:v1 failed after 3 attempts: 401 Unauthorized"
	e.report(nodes[1], image, tag, failed, reason)
	job = e.waitJob(job, "completed with a failure", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	if s := job.Status; s.Failed != 1 || !slices.Equal(s.FailedNodes, nodes[1:]) || !strings.Contains(s.Message, nodes[1]+": "+reason) {
		t.Errorf("status %+v", s)
	}
}

// Past activeDeadlineSeconds the nodes still pulling and those never started fail, and the pulls stop.
func TestDeadline(t *testing.T) {
	e := start(t)
	nodes := e.nodes(2)
	job := e.job("slow", "nginx:1.27", func(j *kruiseappsv1alpha1.ImagePullJob) {
		j.Spec.Selector = e.selector()
		j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](3)
	})
	e.waitJob(job, "one node pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Active == 1 })
	if spec, _ := e.tag(nodes[0], "nginx", "1.27"); spec.PullPolicy.ActiveDeadlineSeconds == nil || *spec.PullPolicy.ActiveDeadlineSeconds > 3 {
		t.Errorf("the agent is not told the job's deadline: %+v", spec.PullPolicy)
	}
	job = e.waitJob(job, "failed by its deadline", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	if s := job.Status; s.Failed != 2 || !slices.Equal(s.FailedNodes, nodes) || !strings.HasPrefix(s.Message, "job exceeds activeDeadlineSeconds") ||
		!strings.Contains(s.Message, plan.MessageDeadlinePulling) || !strings.Contains(s.Message, plan.MessageDeadlineWaiting) {
		t.Errorf("status %+v", s)
	}
	e.waitReasons("ImagePullJob", "slow", plan.ReasonDeadlineExceeded)
	managertest.Eventually(t, itTimeout, "the pull stopped: its tag taken back", func(context.Context) (bool, error) {
		return len(e.ownedBy(job, "nginx", "1.27", nodes)) == 0, nil
	})
}

// A finished job goes ttlSecondsAfterFinished after it completed.
func TestTTLDeletesTheFinishedJob(t *testing.T) {
	e := start(t)
	nodes := e.nodes(1)
	job := e.job("short-lived", "nginx:1.27", func(j *kruiseappsv1alpha1.ImagePullJob) {
		j.Spec.Selector = &kruiseappsv1alpha1.ImagePullJobNodeSelector{Names: nodes}
		j.Spec.CompletionPolicy.TTLSecondsAfterFinished = ptr.To[int32](2)
	})
	e.waitJob(job, "pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Active == 1 })
	e.report(nodes[0], "nginx", "1.27", succeeded, "")
	e.waitJob(job, "completed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	e.gone(job, "the job deleted after its TTL")
}

// A job deleted while it runs leaves no reference in the NodeImages: a tag it alone asked for goes, a tag
// another job shares stays with that job. A reference to a job that never existed goes too.
func TestOwnerReferencesOfGoneJobsArePruned(t *testing.T) {
	e := start(t)
	nodes := e.nodes(1)
	names := &kruiseappsv1alpha1.ImagePullJobNodeSelector{Names: nodes}
	a := e.job("a", "nginx:1.27", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.Selector = names })
	e.waitJob(a, "a pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Active == 1 })
	b := e.job("b", "nginx:1.27", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.Selector = names })
	alone := e.job("alone", "redis:7", func(j *kruiseappsv1alpha1.ImagePullJob) { j.Spec.Selector = names })
	e.waitJob(b, "b pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Active == 1 })
	e.waitJob(alone, "alone pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Active == 1 })
	shared, _ := e.tag(nodes[0], "nginx", "1.27")
	if len(shared.OwnerReferences) != 2 || shared.Version != 1 {
		t.Fatalf("shared tag %+v: want both jobs, one version past the first job's", shared)
	}
	for _, j := range []*kruiseappsv1alpha1.ImagePullJob{a, alone} {
		if err := e.c.Delete(t.Context(), j); err != nil {
			t.Fatal(err)
		}
	}
	managertest.Eventually(t, itTimeout, "the deleted jobs' references pruned", func(context.Context) (bool, error) {
		nginx, okNginx := e.tag(nodes[0], "nginx", "1.27")
		_, okRedis := e.tag(nodes[0], "redis", "7")
		return okNginx && len(nginx.OwnerReferences) == 1 && nginx.OwnerReferences[0].UID == b.UID && !okRedis,
			fmt.Errorf("nginx %+v (%v), redis %v", nginx.OwnerReferences, okNginx, okRedis)
	})

	managertest.Update(t, e.c, e.nodeImage(nodes[0]), func(ni *kruiseappsv1alpha1.NodeImage) {
		ni.Spec.Images["busybox"] = kruiseappsv1alpha1.ImageSpec{Tags: []kruiseappsv1alpha1.ImageTagSpec{{Tag: "1", CreatedAt: ptr.To(metav1.Now()),
			OwnerReferences: []corev1.ObjectReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob", Namespace: e.ns, Name: "never-was", UID: "x"}}}}}
	})
	managertest.Eventually(t, itTimeout, "a reference to a job that never existed pruned", func(context.Context) (bool, error) {
		_, ok := e.tag(nodes[0], "busybox", "1")
		return !ok, nil
	})
}

// A node whose NodeImage goes while it pulls counts as failed, with a message that says so.
func TestGoneNodeFails(t *testing.T) {
	e := start(t)
	nodes := e.nodes(2)
	job := e.job("gone", "nginx:1.27", func(j *kruiseappsv1alpha1.ImagePullJob) {
		j.Spec.Selector = e.selector()
		j.Spec.Parallelism = ptr.To(intstr.FromInt32(2))
	})
	e.waitJob(job, "both pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Active == 2 })
	managertest.Eventually(t, itTimeout, "the active nodes recorded", func(ctx context.Context) (bool, error) {
		err := e.get(job)
		return job.Annotations[plan.ActiveNodesAnnotation] == strings.Join(nodes, ","), err
	})
	if err := e.c.Delete(t.Context(), &kruiseappsv1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: nodes[1]}}); err != nil {
		t.Fatal(err)
	}
	e.waitJob(job, "the gone node failed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool {
		return s.Failed == 1 && s.Desired == 2 && slices.Equal(s.FailedNodes, nodes[1:]) && strings.Contains(s.Message, plan.MessageNodeGone)
	})
	e.waitReasons("ImagePullJob", "gone", plan.ReasonNodeGone)
	e.report(nodes[0], "nginx", "1.27", succeeded, "")
	job = e.waitJob(job, "completed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	if s := job.Status; s.Succeeded != 1 || s.Failed != 1 || s.Desired != 2 {
		t.Errorf("final status %+v", s)
	}
}

// A node whose agent never reports the tag (dead, or the node NotReady) fails a minute after the tag was
// written, naming the node and why; a node whose agent reported in time keeps pulling, and the job completes.
// The controller's clock is moved instead of waiting the minute; the other nodes' reports wake the job.
func TestSilentNodeFails(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	e := startWithClock(t, clk)
	nodes := e.nodes(3)
	job := e.job("silent", "nginx:1.27", func(j *kruiseappsv1alpha1.ImagePullJob) {
		j.Spec.Selector = e.selector()
		j.Spec.Parallelism = ptr.To(intstr.FromInt32(3))
	})
	e.waitJob(job, "three nodes pulling", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.Active == 3 })

	clk.Step(plan.ResponseTimeout / 2)
	e.report(nodes[0], "nginx", "1.27", pulling, "")
	e.waitJob(job, "all still pulling half a minute on", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool {
		return s.Active == 3 && s.Failed == 0
	})
	clk.Step(plan.ResponseTimeout/2 + time.Second)
	e.report(nodes[2], "nginx", "1.27", succeeded, "")
	job = e.waitJob(job, "the silent node failed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool {
		return s.Failed == 1 && s.Succeeded == 1 && s.Active == 1 && s.CompletionTime == nil
	})
	if s := job.Status; !slices.Equal(s.FailedNodes, nodes[1:2]) || !strings.Contains(s.Message, nodes[1]+": "+plan.MessageNoResponse) {
		t.Errorf("status %+v", s)
	}
	if active := job.Annotations[plan.ActiveNodesAnnotation]; active != nodes[0] {
		t.Errorf("active nodes %q, want only %s, which reported in time", active, nodes[0])
	}
	e.waitReasons("ImagePullJob", "silent", plan.ReasonNoNodeAgent)

	e.report(nodes[0], "nginx", "1.27", succeeded, "")
	job = e.waitJob(job, "completed", func(s kruiseappsv1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
	if s := job.Status; s.Succeeded != 2 || s.Failed != 1 || s.Desired != 3 || !slices.Equal(s.FailedNodes, nodes[1:2]) {
		t.Errorf("final status %+v", s)
	}
	managertest.Eventually(t, itTimeout, "the silent node's tag taken back", func(context.Context) (bool, error) {
		return len(e.ownedBy(job, "nginx", "1.27", nodes)) == 0, nil
	})
}
