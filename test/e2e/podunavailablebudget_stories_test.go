package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	kruisepolicyv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/policy/v1alpha1"
)

var podUnavailableBudgets = schema.GroupVersionResource{Group: "policy.kruise.io", Version: "v1alpha1", Resource: "podunavailablebudgets"}

// The user story of a PodUnavailableBudget: a Deployment of ten pods under a budget of maxUnavailable 1.
// A drain-like storm of evictions, one per pod and all at once, evicts exactly one pod; every other eviction
// gets 429, which kubectl drain retries, as for a PodDisruptionBudget. Once the Deployment has replaced the
// evicted pod the budget allows one again.
var _ = Describe("PodUnavailableBudget stories", func() {
	It("a PUB of maxUnavailable 1 holds an eviction storm", func(ctx SpecContext) {
		ns := newNamespace(ctx, "pub-")
		d := nginxDeployment(ns)
		d.Spec.Replicas = ptr.To[int32](10)
		_, err := kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		pub := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget", "metadata": map[string]any{"name": "nginx-pub"},
			"spec": map[string]any{
				"targetRef":      map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"},
				"maxUnavailable": int64(1),
			},
		}}
		_, err = dyn.Resource(podUnavailableBudgets).Namespace(ns).Create(ctx, pub, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		waitBudget(ctx, ns, "nginx-pub", 1, 10, 9, 10)
		rows := kubectlGet(ctx, ns, "pub", "nginx-pub")
		Expect(strings.Fields(rows[0])).To(Equal([]string{"NAME", "ALLOWED", "CURRENT", "DESIRED", "TOTAL"}))
		Expect(strings.Fields(rows[1])).To(Equal([]string{"nginx-pub", "1", "10", "9", "10"}))
		pods := budgetPods(ctx, ns, "nginx-pub", 10)

		By("ten evictions, one per pod, all at once")
		evicted, tooMany := evictionStorm(ctx, ns, pods)
		Expect(evicted).To(HaveLen(1), "evictions that went through")
		Expect(tooMany).To(Equal(9), "evictions answered 429")

		By("the Deployment replaces the evicted pod, and the budget allows one again")
		Eventually(func(g Gomega) {
			dep, err := kube.AppsV1().Deployments(ns).Get(ctx, "nginx", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(dep.Status.AvailableReplicas).To(Equal(int32(10)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
		waitBudget(ctx, ns, "nginx-pub", 1, 10, 9, 10)
	})
})

// waitBudget waits for the budget's status of its current generation.
func waitBudget(ctx context.Context, ns, name string, allowed, current, desired, total int32) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		obj, err := dyn.Resource(podUnavailableBudgets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		pub := &kruisepolicyv1alpha1.PodUnavailableBudget{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pub)).To(Succeed())
		st := pub.Status
		g.Expect(st.ObservedGeneration).To(Equal(pub.Generation))
		g.Expect([]int32{st.UnavailableAllowed, st.CurrentAvailable, st.DesiredAvailable, st.TotalReplicas}).
			To(Equal([]int32{allowed, current, desired, total}), "allowed, current, desired, total")
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), "PodUnavailableBudget %s status", name)
}

// budgetPods waits until want running pods of the namespace carry the budget's related-pub annotation and
// returns their names.
func budgetPods(ctx context.Context, ns, budget string, want int) []string {
	GinkgoHelper()
	var names []string
	Eventually(func(g Gomega) {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		names = nil
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning &&
				p.Annotations[kruisepolicyv1alpha1.PodRelatedPubAnnotation] == budget {
				names = append(names, p.Name)
			}
		}
		g.Expect(names).To(HaveLen(want))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), "pods marked with %s", budget)
	return names
}

// evictionStorm sends one eviction per name, all at once, and returns the pods evicted and the number of
// evictions answered 429. An eviction of a pod already gone (404) counts as neither; any other answer fails.
func evictionStorm(ctx context.Context, ns string, pods []string) (evicted []string, tooMany int) {
	GinkgoHelper()
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i, name := range pods {
		wg.Go(func() {
			<-gate
			errs[i] = kube.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
		})
	}
	close(gate)
	wg.Wait()
	for i, err := range errs {
		var st apierrors.APIStatus
		switch {
		case err == nil:
			evicted = append(evicted, pods[i])
		case apierrors.IsNotFound(err):
		case errors.As(err, &st) && st.Status().Code == http.StatusTooManyRequests:
			tooMany++
		default:
			Fail("evicting " + pods[i] + ": " + err.Error())
		}
	}
	return evicted, tooMany
}
