package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/podreadiness"
	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
	"github.com/flotilla-dev/flotilla/workloads/statefulset/admission"
)

// clusterConfig is nil when the tests run with -short: no control plane.
var clusterConfig *rest.Config

// itTimeout bounds each wait of the integration tests.
const itTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	opts := cluster.Options{
		ControllerManager: true,
		Controllers:       []string{"garbage-collector-controller", "serviceaccount-controller", "persistentvolume-binder-controller"},
		Scheduler:         true,
		Nodes:             2,
	}
	os.Exit(managertest.Main(m, opts, &clusterConfig))
}

func testScheme(t *testing.T) *runtime.Scheme {
	return managertest.Scheme(t, clientgoscheme.AddToScheme, kruiseappsv1alpha1.AddToScheme, kruiseappsv1beta1.AddToScheme)
}

// startController runs the Advanced StatefulSet and pod readiness controllers in-process until the test
// ends, with upstream's default gates unless configure changes them, and returns a direct client.
func startController(t *testing.T, configure ...func(*Reconciler)) client.Client {
	t.Helper()
	managertest.RequireCluster(t, clusterConfig)
	scheme := testScheme(t)
	r := &Reconciler{RetainClaims: true, IndexLabel: true}
	for _, c := range configure {
		c(r)
	}
	managertest.Start(t, clusterConfig, scheme, func(mgr ctrl.Manager) error {
		return errors.Join(r.SetupWithManager(mgr), podreadiness.SetupWithManager(mgr))
	})
	return managertest.DirectClient(t, clusterConfig, scheme)
}

var nsCounter atomic.Int32

// eventually polls cond until it holds; what names the state in the failure.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	managertest.Eventually(t, itTimeout, what, cond)
}

// consistently requires cond to hold for two seconds.
func consistently(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if ok, err := cond(t.Context()); !ok {
			t.Fatalf("%s no longer holds (error: %v)", what, err)
		}
	}
}

// newSet is a Parallel set of replicas pods running image, defaulted as the webhook would, changed by mutate.
func newSet(ns, name string, replicas int32, image string, mutate ...func(*kruiseappsv1beta1.StatefulSet)) *kruiseappsv1beta1.StatefulSet {
	s := &kruiseappsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kruiseappsv1beta1.StatefulSetSpec{
			Replicas: ptr.To(replicas), ServiceName: name, PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
			},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	admission.Default(s, admission.Options{AutoDeletePVC: true})
	podtemplate.Default(&s.Spec.Template)
	return s
}

func ordered(s *kruiseappsv1beta1.StatefulSet) {
	s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
}

func maxUnavailable(v intstr.IntOrString) func(*kruiseappsv1beta1.StatefulSet) {
	return func(s *kruiseappsv1beta1.StatefulSet) { rolling(s).MaxUnavailable = &v }
}

func rolling(s *kruiseappsv1beta1.StatefulSet) *kruiseappsv1beta1.RollingUpdateStatefulSetStrategy {
	if s.Spec.UpdateStrategy.RollingUpdate == nil {
		s.Spec.UpdateStrategy.RollingUpdate = &kruiseappsv1beta1.RollingUpdateStatefulSetStrategy{}
	}
	return s.Spec.UpdateStrategy.RollingUpdate
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	managertest.Create(t, c, obj)
}

// update re-reads the set and applies change to it, as a user's kubectl edit does.
func update(t *testing.T, c client.Client, s *kruiseappsv1beta1.StatefulSet, change func(*kruiseappsv1beta1.StatefulSet)) {
	t.Helper()
	managertest.Update(t, c, s, func(s *kruiseappsv1beta1.StatefulSet) {
		change(s)
		podtemplate.Default(&s.Spec.Template)
	})
}

// livePods lists the set's pods not being deleted, by name.
func livePods(ctx context.Context, c client.Client, s *kruiseappsv1beta1.StatefulSet) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	err := c.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels(s.Spec.Selector.MatchLabels))
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// settled waits until the set reports every pod updated and available at the current generation, with
// only the pods of its replicas left, and returns them.
func settled(t *testing.T, c client.Client, s *kruiseappsv1beta1.StatefulSet, updated int32) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	eventually(t, fmt.Sprintf("StatefulSet %s with %d updated available pods", s.Name, updated), func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return false, err
		}
		st, replicas := s.Status, *s.Spec.Replicas
		all := &corev1.PodList{}
		err := c.List(ctx, all, client.InNamespace(s.Namespace), client.MatchingLabels(s.Spec.Selector.MatchLabels))
		out, _ = livePods(ctx, c, s)
		return st.ObservedGeneration == s.Generation && st.Replicas == replicas && st.AvailableReplicas == replicas &&
			st.UpdatedAvailableReplicas == updated && len(all.Items) == int(replicas), err
	})
	return out
}

func names(ps []corev1.Pod) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// eventNotes are the notes of the set's events by reason.
func eventNotes(t *testing.T, c client.Client, s *kruiseappsv1beta1.StatefulSet) map[string][]string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := c.List(t.Context(), list, client.InNamespace(s.Namespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.Regarding.Name == s.Name && e.Regarding.Kind == "StatefulSet" {
			out[e.Reason] = append(out[e.Reason], e.Note)
		}
	}
	return out
}

// watcher samples a set's pods until stopped and keeps the worst it saw: the most pods of the set that were
// not serving at once, every pod it saw, and each sample whose live pods were not ordinals 0..k-1.
type watcher struct {
	mu             sync.Mutex
	maxUnavailable int
	seen           map[string]bool
	notPrefix      []string
	stop           context.CancelFunc
	done           chan struct{}
}

func watch(t *testing.T, c client.Client, s *kruiseappsv1beta1.StatefulSet) *watcher {
	ctx, cancel := context.WithCancel(t.Context())
	w := &watcher{seen: map[string]bool{}, stop: cancel, done: make(chan struct{})}
	replicas := int(*s.Spec.Replicas)
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			if pods, err := livePods(ctx, c, s); err == nil {
				w.sample(pods, replicas)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return w
}

func (w *watcher) sample(pods []corev1.Pod, replicas int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	serving := 0
	for _, p := range pods {
		w.seen[p.Name] = true
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				serving++
			}
		}
	}
	w.maxUnavailable = max(w.maxUnavailable, replicas-serving)
	for i, p := range pods {
		if p.Name != pods[0].Name[:strings.LastIndex(pods[0].Name, "-")+1]+strconv.Itoa(i) {
			w.notPrefix = append(w.notPrefix, strings.Join(names(pods), ","))
			break
		}
	}
}

// gaps stops the watch and returns the samples whose live pods were not ordinals 0..k-1.
func (w *watcher) gaps() []string {
	w.worst()
	return w.notPrefix
}

// worst stops the watch and returns the most unavailable pods at once and every pod name it saw.
func (w *watcher) worst() (int, []string) {
	w.stop()
	<-w.done
	var seen []string
	for n := range w.seen {
		seen = append(seen, n)
	}
	sort.Strings(seen)
	return w.maxUnavailable, seen
}
