package imagepuller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

// The puller needs only the API server: the tests write the NodeImage as the manager would, and the
// critest runtime plays the node's runtime and the registry behind it.
func TestMain(m *testing.M) {
	os.Exit(managertest.Main(m, cluster.Options{}, &clusterConfig))
}

var nodeCounter atomic.Int32

// agent is one test's node: a puller for a node name of its own and the in-memory runtime it pulls through.
type agent struct {
	t    *testing.T
	c    client.Client
	rt   *critest.Runtime
	node string
}

func startPuller(t *testing.T) *agent { return startPullerWith(t, nil) }

// startPullerWith starts a puller whose runtime is wrap of the in-memory one (when wrap is set).
func startPullerWith(t *testing.T, wrap func(cri.Images) cri.Images) *agent {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	a := &agent{t: t, rt: critest.Start(t), node: fmt.Sprintf("pull-node-%d", nodeCounter.Add(1))}
	scheme := managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme)
	a.c = managertest.DirectClient(t, clusterConfig, scheme)
	var rt cri.Images = a.rt.Dial(t)
	if wrap != nil {
		rt = wrap(rt)
	}
	managertest.Start(t, clusterConfig, scheme, (&Reconciler{NodeName: a.node, Images: rt, MaxParallel: 2}).SetupWithManager,
		func(o *ctrl.Options) { o.Cache = cache.Options{ByObject: CacheByObject(a.node)} })
	return a
}

// create writes the node's NodeImage as the manager and ImagePullJobs leave it.
func (a *agent) create(images map[string]kruiseappsv1alpha1.ImageSpec) {
	a.t.Helper()
	ni := &kruiseappsv1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: a.node, Labels: map[string]string{
		kruiseappsv1alpha1.FakeNodeImageLabelKey: "true"}}, Spec: kruiseappsv1alpha1.NodeImageSpec{Images: images}}
	if err := a.c.Create(a.t.Context(), ni); err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { _ = a.c.Delete(context.Background(), ni) })
}

func (a *agent) get() *kruiseappsv1alpha1.NodeImage {
	a.t.Helper()
	ni := &kruiseappsv1alpha1.NodeImage{}
	if err := a.c.Get(a.t.Context(), client.ObjectKey{Name: a.node}, ni); err != nil {
		a.t.Fatal(err)
	}
	return ni
}

// tag is the status of the image's tag "1" (every test pulls that tag) now, or the zero status.
func (a *agent) tag(image string) kruiseappsv1alpha1.ImageTagStatus {
	for _, s := range a.get().Status.ImageStatuses[image].Tags {
		if s.Tag == "1" {
			return s
		}
	}
	return kruiseappsv1alpha1.ImageTagStatus{}
}

func (a *agent) eventually(what string, cond func() bool) {
	a.t.Helper()
	managertest.Eventually(a.t, itTimeout, what, func(context.Context) (bool, error) { return cond(), nil })
}

func tags(t ...kruiseappsv1alpha1.ImageTagSpec) kruiseappsv1alpha1.ImageSpec {
	return kruiseappsv1alpha1.ImageSpec{Tags: t}
}

func TestPullsTheImagesOfItsNode(t *testing.T) {
	a := startPuller(t)
	ns := managertest.Namespace(t, a.c, "pull")
	a.rt.SetRegistryImage("example.com/web:1", critest.RegistryImage{ID: "sha256:web"})
	a.rt.SetRegistryImage("example.com/private:1", critest.RegistryImage{ID: "sha256:private", Auth: &cri.Auth{Username: "me", Password: "pw"}})
	a.rt.AddImage("example.com/cached:1", "sha256:cached", 1)
	secret := pullSecret(t, a.c, ns, "example.com", "me", "pw")
	a.create(map[string]kruiseappsv1alpha1.ImageSpec{
		"example.com/web": {Tags: []kruiseappsv1alpha1.ImageTagSpec{{Tag: "1"}},
			SandboxConfig: &kruiseappsv1alpha1.SandboxConfig{Labels: map[string]string{"team": "a"}}},
		"example.com/private": {Tags: []kruiseappsv1alpha1.ImageTagSpec{{Tag: "1"}},
			PullSecrets: []kruiseappsv1alpha1.ReferenceObject{{Namespace: ns, Name: secret}}},
		"example.com/cached": tags(kruiseappsv1alpha1.ImageTagSpec{Tag: "1"}),
	})

	a.eventually("every tag succeeded", func() bool {
		s := a.get().Status
		return s.Desired == 3 && s.Succeeded == 3 && s.FirstSyncStatus != nil
	})
	got := a.get().Status
	if got.FirstSyncStatus.Status != kruiseappsv1alpha1.SyncStatusSucceeded {
		t.Errorf("firstSyncStatus = %+v", got.FirstSyncStatus)
	}
	for image, id := range map[string]string{"example.com/web": "sha256:web", "example.com/private": "sha256:private", "example.com/cached": "sha256:cached"} {
		s := a.tag(image)
		if s.ImageID != image+"@"+id || s.Progress != 100 || s.StartTime == nil || s.CompletionTime == nil {
			t.Errorf("%s: %+v", image, s)
		}
	}
	pulls := a.rt.Pulls()
	if slices.ContainsFunc(pulls, func(p critest.Pull) bool { return p.Image == "example.com/cached:1" }) {
		t.Error("an image already present was pulled under IfNotPresent")
	}
	web := pulls[slices.IndexFunc(pulls, func(p critest.Pull) bool { return p.Image == "example.com/web:1" })]
	if web.SandboxLabels["team"] != "a" || web.SandboxAnnotations[kruiseappsv1alpha1.PullingImageByAnnotation] != kruiseappsv1alpha1.PullingImageByKruiseDaemon {
		t.Errorf("sandbox config of the pull: %+v", web)
	}
	a.eventually("a PullImageSucceed event", func() bool { return slices.Contains(a.eventNotes(EventPullSucceeded), "Image example.com/web:1") })
	if n := managertest.Counter(t, PullsName, map[string]string{"result": "succeeded"}); n < 3 {
		t.Errorf("%s{result=succeeded} = %v, want at least the 3 tags", PullsName, n)
	}
}

func TestFailedPulls(t *testing.T) {
	a := startPuller(t)
	a.rt.SetRegistryImage("example.com/stuck:1", critest.RegistryImage{Hang: true})
	a.rt.SetRegistryImage("example.com/private:1", critest.RegistryImage{Auth: &cri.Auth{Username: "me", Password: "pw"}})
	once := &kruiseappsv1alpha1.ImageTagPullPolicy{BackoffLimit: ptr.To[int32](0), TimeoutSeconds: ptr.To[int32](1)}
	a.create(map[string]kruiseappsv1alpha1.ImageSpec{
		"example.com/missing": tags(kruiseappsv1alpha1.ImageTagSpec{Tag: "1", PullPolicy: once}),
		"example.com/stuck":   tags(kruiseappsv1alpha1.ImageTagSpec{Tag: "1", PullPolicy: once}),
		"example.com/private": tags(kruiseappsv1alpha1.ImageTagSpec{Tag: "1", PullPolicy: once}),
	})

	a.eventually("every tag failed", func() bool { s := a.get().Status; return s.Desired == 3 && s.Failed == 3 })
	if s := a.tag("example.com/missing"); !strings.Contains(s.Message, "not found") || s.CompletionTime == nil {
		t.Errorf("missing image: %+v", s)
	}
	if fs := a.get().Status.FirstSyncStatus; fs == nil || fs.Status != kruiseappsv1alpha1.SyncStatusFailed {
		t.Errorf("firstSyncStatus = %+v", fs)
	}
	for _, reason := range []string{ReasonNotFound, ReasonTimeout, ReasonAuth} {
		if managertest.Counter(t, PullsName, map[string]string{"result": reason}) < 1 {
			t.Errorf("%s{result=%s} not counted", PullsName, reason)
		}
	}
	for image, reason := range map[string]string{"example.com/missing:1": ReasonNotFound, "example.com/stuck:1": ReasonTimeout,
		"example.com/private:1": ReasonAuth} {
		a.eventually("a PullImageFailed event for "+image, func() bool {
			return slices.ContainsFunc(a.eventNotes(EventPullFailed), func(n string) bool {
				return strings.HasPrefix(n, "Image "+image+": "+reason)
			})
		})
	}
}

func TestRetriesAndAVersionBump(t *testing.T) {
	a := startPuller(t)
	a.rt.SetRegistryImage("example.com/web:1", critest.RegistryImage{ID: "sha256:web"})
	// Two failures, then the image appears: the third attempt (after 1s and 2s) succeeds.
	a.create(map[string]kruiseappsv1alpha1.ImageSpec{"example.com/flaky": tags(kruiseappsv1alpha1.ImageTagSpec{Tag: "1"}),
		"example.com/web": tags(kruiseappsv1alpha1.ImageTagSpec{Tag: "1", ImagePullPolicy: kruiseappsv1alpha1.PullAlways})})
	a.eventually("two failed attempts", func() bool { return a.pullsOf("example.com/flaky:1") >= 2 })
	a.rt.SetRegistryImage("example.com/flaky:1", critest.RegistryImage{ID: "sha256:flaky"})
	a.eventually("the flaky image pulled", func() bool {
		return a.tag("example.com/flaky").Phase == kruiseappsv1alpha1.ImagePhaseSucceeded
	})
	a.eventually("the web image pulled", func() bool { return a.tag("example.com/web").Phase == kruiseappsv1alpha1.ImagePhaseSucceeded })

	// A new version of a tag under Always pulls it again, though it is present.
	managertest.Update(t, a.c, a.get(), func(ni *kruiseappsv1alpha1.NodeImage) {
		img := ni.Spec.Images["example.com/web"]
		img.Tags[0].Version = 2
		ni.Spec.Images["example.com/web"] = img
	})
	a.eventually("version 2 pulled", func() bool {
		s := a.tag("example.com/web")
		return s.Version == 2 && s.Phase == kruiseappsv1alpha1.ImagePhaseSucceeded
	})
	if n := a.pullsOf("example.com/web:1"); n != 2 {
		t.Errorf("web pulled %d times, want 2", n)
	}
}

// stubbornImages is a runtime whose pulls of one reference ignore their caller's deadline and hold until
// the test ends, as a runtime that does not give up on a stuck registry would; it records when each began.
type stubbornImages struct {
	cri.Images
	ref     string
	release chan struct{}
	mu      sync.Mutex
	starts  []time.Time
}

func (s *stubbornImages) PullImage(ctx context.Context, req cri.PullRequest) (string, error) {
	if req.Image != s.ref {
		return s.Images.PullImage(ctx, req)
	}
	s.mu.Lock()
	s.starts = append(s.starts, time.Now())
	s.mu.Unlock()
	<-s.release
	return "", errors.New("released at the end of the test")
}

func (s *stubbornImages) pullStarts() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.starts)
}

// The agent enforces timeoutSeconds and backoffLimit itself: against a runtime that never answers, each
// attempt is timed out, the next one waits the backoff, and the task fails after backoffLimit retries,
// counted and reported as a timeout.
func TestTimesOutAPullTheRuntimeHolds(t *testing.T) {
	const ref = "example.com/held:1"
	stubborn := &stubbornImages{ref: ref, release: make(chan struct{})}
	a := startPullerWith(t, func(rt cri.Images) cri.Images { stubborn.Images = rt; return stubborn })
	t.Cleanup(func() { close(stubborn.release) })
	timeouts := func() float64 { return managertest.Counter(t, PullsName, map[string]string{"result": ReasonTimeout}) }
	before := timeouts()
	const timeout, limit = time.Second, 2
	a.create(map[string]kruiseappsv1alpha1.ImageSpec{"example.com/held": tags(kruiseappsv1alpha1.ImageTagSpec{Tag: "1",
		PullPolicy: &kruiseappsv1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](1), BackoffLimit: ptr.To[int32](limit)}})})

	a.eventually("the tag failed", func() bool { return a.tag("example.com/held").Phase == kruiseappsv1alpha1.ImagePhaseFailed })
	if s := a.tag("example.com/held"); s.Message != "pulling image "+ref+" timed out after 1s" || s.CompletionTime == nil {
		t.Errorf("status %+v", s)
	}
	starts := stubborn.pullStarts()
	if len(starts) != limit+1 {
		t.Fatalf("%d attempts (%v), want backoffLimit+1 = %d", len(starts), starts, limit+1)
	}
	// The runtime sees each attempt a little after the agent starts it; the slack covers that difference.
	const slack = 100 * time.Millisecond
	for i := 1; i < len(starts); i++ {
		if gap, want := starts[i].Sub(starts[i-1]), timeout+backoff(int32(i)); gap < want-slack {
			t.Errorf("attempt %d began %v after attempt %d, want at least the timeout and the backoff, %v", i+1, gap, i, want)
		}
	}
	if got := timeouts() - before; got != 1 {
		t.Errorf("%s{result=%s} grew by %v, want 1", PullsName, ReasonTimeout, got)
	}
	a.eventually("a PullImageFailed event for the timeout", func() bool {
		return slices.Contains(a.eventNotes(EventPullFailed), "Image "+ref+": "+ReasonTimeout+": pulling image "+ref+" timed out after 1s")
	})
}

// A tag's activeDeadlineSeconds ends its task, however long its timeout and however many retries it has left:
// against a runtime that never answers, the one attempt is stopped at the deadline and the tag fails with
// upstream's message, counted and reported as a deadline.
func TestStopsAPullAtItsActiveDeadline(t *testing.T) {
	const ref = "example.com/late:1"
	stubborn := &stubbornImages{ref: ref, release: make(chan struct{})}
	a := startPullerWith(t, func(rt cri.Images) cri.Images { stubborn.Images = rt; return stubborn })
	t.Cleanup(func() { close(stubborn.release) })
	deadlines := func() float64 { return managertest.Counter(t, PullsName, map[string]string{"result": ReasonDeadline}) }
	before := deadlines()
	a.create(map[string]kruiseappsv1alpha1.ImageSpec{"example.com/late": tags(kruiseappsv1alpha1.ImageTagSpec{Tag: "1",
		PullPolicy: &kruiseappsv1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](600), BackoffLimit: ptr.To[int32](3),
			ActiveDeadlineSeconds: ptr.To[int64](2)}})})

	a.eventually("the tag failed", func() bool { return a.tag("example.com/late").Phase == kruiseappsv1alpha1.ImagePhaseFailed })
	s := a.tag("example.com/late")
	if s.Message != MessageDeadlineExceeded || s.StartTime == nil || s.CompletionTime == nil {
		t.Fatalf("status %+v", s)
	}
	if took := s.CompletionTime.Sub(s.StartTime.Time); took < 1500*time.Millisecond || took > 4*time.Second {
		t.Errorf("the task ran %v, want about its 2 s deadline", took)
	}
	if starts := stubborn.pullStarts(); len(starts) != 1 {
		t.Errorf("%d attempts, want the one the deadline stopped", len(starts))
	}
	if got := deadlines() - before; got != 1 {
		t.Errorf("%s{result=%s} grew by %v, want 1", PullsName, ReasonDeadline, got)
	}
	a.eventually("a PullImageFailed event for the deadline", func() bool {
		return slices.Contains(a.eventNotes(EventPullFailed), "Image "+ref+": "+ReasonDeadline+": "+MessageDeadlineExceeded)
	})
}

func (a *agent) pullsOf(ref string) int {
	n := 0
	for _, p := range a.rt.Pulls() {
		if p.Image == ref {
			n++
		}
	}
	return n
}

// eventNotes are the notes of the events with reason about the test's NodeImage.
func (a *agent) eventNotes(reason string) []string {
	a.t.Helper()
	list := &eventsv1.EventList{}
	if err := a.c.List(a.t.Context(), list); err != nil {
		a.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Kind == "NodeImage" && e.Regarding.Name == a.node {
			out = append(out, strings.SplitN(e.Note, ",", 2)[0])
		}
	}
	return out
}

func pullSecret(t *testing.T, c client.Client, ns, registry, user, password string) string {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"auths": map[string]any{registry: map[string]string{"username": user, "password": password}}})
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: raw}}
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	return s.Name
}
