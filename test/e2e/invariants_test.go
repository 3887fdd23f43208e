package e2e

import (
	"context"
	"fmt"
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
// once, the fewest serving (Ready and not being deleted), and every pod it ever saw.
type podWatch struct {
	mu sync.Mutex
	// maxPods is the most pods not being deleted seen at once, maxAll the most with those being deleted.
	maxPods, maxAll int
	minReady        int
	seen            map[types.UID]string
	// versions holds the VERSION each seen pod ran.
	versions map[types.UID]string
	last     map[types.UID]bool
	stop     context.CancelFunc
	done     chan struct{}
	// podDeletes is the manager's count of pod deletions sent when the watch started.
	podDeletes int
}

// watchPods watches the seed CloneSet's pods, watchAppPods the pods of a story's app.
func watchPods(ctx context.Context, ns string) *podWatch {
	return watchSelected(ctx, ns, "app="+seedCloneSet)
}

func watchAppPods(ctx context.Context, ns string) *podWatch {
	return watchSelected(ctx, ns, "app="+appName)
}

func watchSelected(ctx context.Context, ns, selector string) *podWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &podWatch{minReady: -1, seen: map[types.UID]string{}, versions: map[types.UID]string{}, stop: cancel, done: make(chan struct{}), podDeletes: managerPodDeletes(ctx)}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		for ctx.Err() == nil {
			list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err == nil {
				w.sample(list.Items)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return w
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
	w.maxPods, w.maxAll = max(w.maxPods, active), max(w.maxAll, len(pods))
	if w.minReady < 0 || ready < w.minReady {
		w.minReady = ready
	}
}

// expect stops the watch and checks the invariants of a workload's update: never more than maxPods pods not
// being deleted (replicas + maxSurge), never fewer than minReady serving (replicas - maxUnavailable), and no pod lost:
// every pod that went away was deleted by its controller (a SuccessfulDelete event names it, or the
// deletions it folded count it) or by the test (deletedByTest).
func (w *podWatch) expect(ctx context.Context, ns string, maxPods, minReady int, deletedByTest ...types.UID) {
	GinkgoHelper()
	w.stop()
	<-w.done
	// Pods being deleted do not count, as kube-controller-manager counts neither for maxSurge: a ReplicaSet's
	// replicas leave out its terminating pods.
	Expect(w.maxPods).To(BeNumerically("<=", maxPods), "pods not being deleted at once (%d with those being deleted)", w.maxAll)
	Expect(w.minReady).To(BeNumerically(">=", minReady), "serving pods at once")
	deleted := reportedDeletes(ctx, ns)
	var unnamed []string
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
	budget := deleted.replicaSetUncounted + max(managerPodDeletes(ctx)-w.podDeletes-w.namedGone(deleted.byCloneSet), 0)
	Expect(len(unnamed)).To(BeNumerically("<=", budget), "pods disappeared without being deleted: %v", unnamed)
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

// deletions are the pod deletions the namespace's ReplicaSets and CloneSets reported: the pods their
// SuccessfulDelete events name, and how many more the ReplicaSets' folded events
// counted without naming them.
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
			var pod, set string
			if _, err := fmt.Sscanf(e.Note, "Delete Pod %s in StatefulSet %s successful", &pod, &set); err == nil {
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
