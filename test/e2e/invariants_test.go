package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podWatch samples a workload's pods until stopped and keeps what the invariants need: the most pods at
// once, the fewest serving (Ready and not being deleted), every pod it ever saw, and for a StatefulSet
// (set names it) every sample in which two pods held one ordinal.
type podWatch struct {
	mu sync.Mutex
	// maxPods is the most pods not being deleted seen at once, maxAll the most with those being deleted,
	// maxNotReady the most of them not Ready.
	maxPods, maxAll, maxNotReady int
	minReady                     int
	seen                         map[types.UID]string
	// versions holds the VERSION each seen pod ran.
	versions map[types.UID]string
	last     map[types.UID]bool
	stop     context.CancelFunc
	done     chan struct{}
	// list reads the watched pods.
	list func(context.Context) ([]corev1.Pod, error)
	// podDeletes is the manager's count of pod deletions sent when the watch started.
	podDeletes int
	// set is the StatefulSet whose ordinals the pods' names carry ("" for other workloads); sharedOrdinals
	// lists the samples in which two pods, being deleted or not, held one ordinal.
	set            string
	sharedOrdinals []string
}

// watchPods watches the seed CloneSet's pods, watchAppPods the pods of a story's app.
func watchPods(ctx context.Context, ns string) *podWatch {
	return watchSelected(ctx, ns, "app="+seedCloneSet)
}

func watchAppPods(ctx context.Context, ns string) *podWatch {
	return watchSelected(ctx, ns, "app="+appName)
}

func watchSelected(ctx context.Context, ns, selector string) *podWatch {
	return watchWorkload(ctx, ns, selector, "")
}

// watchSetPods watches the pods of an Advanced StatefulSet named set, whose ordinals it checks too.
func watchSetPods(ctx context.Context, ns, set string) *podWatch {
	return watchWorkload(ctx, ns, "app="+set, set)
}

func watchWorkload(ctx context.Context, ns, selector, set string) *podWatch {
	list := func(ctx context.Context) ([]corev1.Pod, error) {
		l, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	watchCtx, cancel := context.WithCancel(ctx)
	w := &podWatch{minReady: -1, seen: map[types.UID]string{}, versions: map[types.UID]string{}, stop: cancel, done: make(chan struct{}),
		podDeletes: managerPodDeletes(ctx), set: set, list: list}
	// The first sample is taken before the caller changes anything: a pod replaced before an asynchronous first
	// sample would never be seen.
	w.sampleNow(ctx)
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		for watchCtx.Err() == nil {
			w.sampleNow(watchCtx)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return w
}

func (w *podWatch) sampleNow(ctx context.Context) {
	if pods, err := w.list(ctx); err == nil {
		w.sample(pods)
	}
}

// finish stops the watch and takes a last sample, so the state the caller just waited for is part of it even
// when it came about after the watch's last periodic sample.
func (w *podWatch) finish(ctx context.Context) {
	GinkgoHelper()
	w.stop()
	<-w.done
	pods, err := w.list(ctx)
	Expect(err).NotTo(HaveOccurred())
	w.sample(pods)
}

func (w *podWatch) sample(pods []corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ready, active := 0, 0
	w.last = map[types.UID]bool{}
	for i := range pods {
		if pods[i].DeletionTimestamp == nil {
			active++
			if podReady(pods[i]) {
				ready++
			}
		}
		w.seen[pods[i].UID] = pods[i].Name
		w.versions[pods[i].UID] = versionOf(pods[i].Spec.Containers[0])
		w.last[pods[i].UID] = true
	}
	w.maxPods, w.maxAll, w.maxNotReady = max(w.maxPods, active), max(w.maxAll, len(pods)), max(w.maxNotReady, active-ready)
	if w.minReady < 0 || ready < w.minReady {
		w.minReady = ready
	}
	if w.set != "" && !distinctOrdinals(w.set, pods) {
		w.sharedOrdinals = append(w.sharedOrdinals, podNamesOf(pods))
	}
}

// distinctOrdinals reports whether no two pods hold one ordinal of set (read as a number, so "web-01" and
// "web-1" would share one).
func distinctOrdinals(set string, pods []corev1.Pod) bool {
	seen := map[int]bool{}
	for _, p := range pods {
		n, err := strconv.Atoi(strings.TrimPrefix(p.Name, set+"-"))
		if err != nil {
			continue
		}
		if seen[n] {
			return false
		}
		seen[n] = true
	}
	return true
}

func podNamesOf(pods []corev1.Pod) string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return strings.Join(names, ",")
}

// expect stops the watch and checks the invariants of a workload's update: never more than maxPods pods not
// being deleted (replicas + maxSurge), never fewer than minReady serving (replicas - maxUnavailable), and no pod lost:
// every pod that went away was deleted by its controller (a SuccessfulDelete event names it, or the
// deletions it folded count it) or by the test (deletedByTest).
func (w *podWatch) expect(ctx context.Context, ns string, maxPods, minReady int, deletedByTest ...types.UID) {
	GinkgoHelper()
	w.finish(ctx)
	// Pods being deleted do not count, as kube-controller-manager counts neither for maxSurge: a ReplicaSet's
	// replicas leave out its terminating pods.
	Expect(w.maxPods).To(BeNumerically("<=", maxPods), "pods not being deleted at once (%d with those being deleted)", w.maxAll)
	Expect(w.minReady).To(BeNumerically(">=", minReady), "serving pods at once")
	Expect(w.sharedOrdinals).To(BeEmpty(), "pods sharing an ordinal")
	// Controllers write their events in the background, so a deletion may be seen before its event: a pod stays
	// unaccounted for only if no event names or counts it within the wait.
	var unnamed []string
	Eventually(func() int {
		var budget int
		unnamed, budget = w.unaccounted(ctx, ns, deletedByTest)
		return len(unnamed) - budget
	}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(poll).Should(BeNumerically("<=", 0),
		func() string { return fmt.Sprintf("pods disappeared without being deleted: %v", unnamed) })
}

// unaccounted lists the pods the watch saw go that no deletion event names (none of deletedByTest), and how
// many deletions the events and the manager counted without naming them.
func (w *podWatch) unaccounted(ctx context.Context, ns string, deletedByTest []types.UID) (unnamed []string, budget int) {
	deleted := reportedDeletes(ctx, ns)
	for uid, name := range w.seen {
		gone := !w.last[uid] && !deleted.byReplicaSet[name] && !deleted.byCloneSet[name] && !deleted.byStatefulSet[name]
		for _, d := range deletedByTest {
			gone = gone && uid != d
		}
		if gone {
			unnamed = append(unnamed, name+" ("+string(uid)+")")
		}
	}
	// Past ten deletions in ten minutes, similar events fold and name only their first pod. The ReplicaSets'
	// folded events count every deletion; the CloneSets' series count is written only now and then, so the
	// manager's own count of pod deletions during the watch stands in for it (less those its events named).
	named := w.namedGone(deleted.byCloneSet) + w.namedGone(deleted.byStatefulSet)
	return unnamed, deleted.replicaSetUncounted + max(managerPodDeletes(ctx)-w.podDeletes-named, 0)
}

// notReady is the most pods, not being deleted, that were not Ready at once.
func (w *podWatch) notReady() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxNotReady
}

// created counts the pods of a version the watch has seen so far, gone or not.
func (w *podWatch) created(version string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, v := range w.versions {
		if v == version {
			n++
		}
	}
	return n
}

// namedGone counts the pods the watch saw go that names holds.
func (w *podWatch) namedGone(names map[string]bool) int {
	n := 0
	for uid, name := range w.seen {
		if !w.last[uid] && names[name] {
			n++
		}
	}
	return n
}

// managerPodDeletes is how many pod deletions the manager has sent.
func managerPodDeletes(ctx context.Context) int {
	GinkgoHelper()
	return managerCounter(ctx, "flotilla_client_requests_total{", `resource="pods",verb="delete"`)
}

// deletions are the pod deletions the namespace's ReplicaSets, CloneSets and Advanced StatefulSets reported:
// the pods their SuccessfulDelete events name, and how many more the ReplicaSets' folded events counted
// without naming them.
type deletions struct {
	byReplicaSet, byCloneSet map[string]bool
	// byStatefulSet names pods, not pod UIDs: a StatefulSet recreates a pod under the same name, and the
	// events of both deletions are one event counted twice.
	byStatefulSet       map[string]bool
	replicaSetUncounted int
}

func reportedDeletes(ctx context.Context, ns string) deletions {
	GinkgoHelper()
	list, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	out := deletions{byReplicaSet: map[string]bool{}, byCloneSet: map[string]bool{}, byStatefulSet: map[string]bool{}}
	for _, e := range list.Items {
		if e.Reason != "SuccessfulDelete" {
			continue
		}
		switch e.Regarding.Kind {
		case "CloneSet":
			out.byCloneSet[strings.TrimPrefix(e.Note, "succeed to delete pod ")] = true
		case "StatefulSet":
			// The native controller title-cases the verb ("Delete Pod"), the Advanced one does not ("delete Pod").
			var verb, pod, set string
			_, err := fmt.Sscanf(e.Note, "%s Pod %s in StatefulSet %s successful", &verb, &pod, &set)
			if err == nil && strings.EqualFold(verb, "delete") {
				out.byStatefulSet[pod] = true
			}
		case "ReplicaSet":
			// kube-controller-manager's correlator marks its folded events in the note and counts in them.
			note := strings.TrimPrefix(e.Note, "(combined from similar events): ")
			out.byReplicaSet[strings.TrimPrefix(note, "Deleted pod: ")] = true
			out.replicaSetUncounted += max(int(e.DeprecatedCount), 1) - 1
		}
	}
	return out
}
