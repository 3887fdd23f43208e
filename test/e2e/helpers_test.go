package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

const (
	fieldManager = "flotilla-e2e"
	seedDir      = "testdata/seed"
	// goneTimeout covers finalizers that the manager removes on deletion.
	goneTimeout = 90 * time.Second
	poll        = 250 * time.Millisecond
)

// mustLoadSeeds runs while the spec tree is built, where an error can only
// stop the suite.
func mustLoadSeeds() []framework.Seed {
	seeds, err := framework.LoadSeeds(seedDir)
	if err != nil {
		panic(fmt.Sprintf("loading seed examples: %v", err))
	}
	return seeds
}

// seedObject returns the object of a complete seed example by file name.
func seedObject(file string) *unstructured.Unstructured {
	s, err := framework.LoadSeed(filepath.Join(seedDir, file))
	Expect(err).NotTo(HaveOccurred())
	return framework.ForApply(s.Object())
}

// target is where an object lives in the API.
type target struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	namespace  string
}

func targetFor(obj *unstructured.Unstructured) (target, error) {
	gvk := obj.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return target{}, fmt.Errorf("%s is not served: %w", gvk, err)
	}
	t := target{gvr: m.Resource, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
	if t.namespaced {
		t.namespace = obj.GetNamespace()
		if t.namespace == "" {
			t.namespace = metav1.NamespaceDefault
		}
	}
	return t, nil
}

func (t target) client() dynamic.ResourceInterface {
	if t.namespaced {
		return dyn.Resource(t.gvr).Namespace(t.namespace)
	}
	return dyn.Resource(t.gvr)
}

// apply sends obj with server-side apply; unknown fields are errors rather
// than silently dropped. It returns the object as the server stored it.
func apply(ctx context.Context, t target, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	opts := metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true), FieldValidation: "Strict"}
	return t.client().Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
}

// applyAndCleanUp applies obj and, if it was created, deletes it again
// when the current node ends.
func applyAndCleanUp(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t, err := targetFor(obj)
	Expect(err).NotTo(HaveOccurred())
	if t.namespaced {
		ensureNamespace(ctx, t.namespace)
	}
	got, err := apply(ctx, t, obj)
	if err == nil {
		DeferCleanup(deleteAndWait, t, obj.GetName(), NodeTimeout(2*goneTimeout))
	}
	return got, err
}

func ensureNamespace(ctx context.Context, name string) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred(), "creating namespace %s", name)
	}
}

// deleteAndWait deletes an object and waits until it is gone, so a later
// example with the same name starts from nothing.
func deleteAndWait(ctx SpecContext, t target, name string) {
	policy := metav1.DeletePropagationBackground
	err := t.client().Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred(), "deleting %s %s", t.gvr.Resource, name)
	}
	expectGone(ctx, t, name)
}

func expectGone(ctx context.Context, t target, name string) {
	Eventually(func() bool {
		_, err := t.client().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(goneTimeout).WithPolling(poll).
		Should(BeTrue(), "%s %s still exists", t.gvr.Resource, name)
}

// admissionCovers reports whether any webhook configuration in the cluster
// intercepts creation of the resource with these labels: without one,
// upstream's admission checks cannot run and only the schema applies.
func admissionCovers(ctx context.Context, gvr schema.GroupVersionResource, objLabels map[string]string) bool {
	adm := kube.AdmissionregistrationV1()
	validating, err := adm.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	mutating, err := adm.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var rules []admissionregistrationv1.RuleWithOperations
	for _, w := range validating.Items {
		for _, h := range w.Webhooks {
			if selects(h.ObjectSelector, objLabels) {
				rules = append(rules, h.Rules...)
			}
		}
	}
	for _, w := range mutating.Items {
		for _, h := range w.Webhooks {
			if selects(h.ObjectSelector, objLabels) {
				rules = append(rules, h.Rules...)
			}
		}
	}
	return slices.ContainsFunc(rules, func(r admissionregistrationv1.RuleWithOperations) bool {
		return ruleCoversCreate(r, gvr)
	})
}

// selects reports whether a webhook's objectSelector admits an object with these labels.
func selects(sel *metav1.LabelSelector, objLabels map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	Expect(err).NotTo(HaveOccurred())
	return s.Matches(labels.Set(objLabels))
}

func ruleCoversCreate(r admissionregistrationv1.RuleWithOperations, gvr schema.GroupVersionResource) bool {
	return matchesAny(r.APIGroups, gvr.Group) &&
		matchesAny(r.APIVersions, gvr.Version) &&
		matchesAny(r.Resources, gvr.Resource) &&
		(slices.Contains(r.Operations, admissionregistrationv1.Create) ||
			slices.Contains(r.Operations, admissionregistrationv1.OperationAll))
}

func matchesAny(values []string, want string) bool {
	return slices.Contains(values, "*") || slices.Contains(values, want)
}

// describePods is what a failed wait for a workload shows: every pod selector matches with its node, phase and
// conditions, and every claim of the namespace with its phase and volume.
func describePods(ns, selector string) string {
	// Its own context: the spec's may be what ended the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	if pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector}); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s on %q: phase %s, conditions %v, deleting %v\n", p.Name, p.Spec.NodeName,
				p.Status.Phase, podConditions(p), p.DeletionTimestamp != nil)
		}
	}
	if claims, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, c := range claims.Items {
			fmt.Fprintf(&b, "claim %s: phase %s, volume %q, deleting %v\n", c.Name, c.Status.Phase, c.Spec.VolumeName,
				c.DeletionTimestamp != nil)
		}
	}
	return b.String()
}

// expectEvents waits until the event notes get returns satisfy matcher: controllers write their events in the
// background, so the state a story waited for can be visible before the event that reports it.
func expectEvents(ctx context.Context, get func() []string, matcher gomegatypes.GomegaMatcher) {
	GinkgoHelper()
	Eventually(get).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(matcher)
}
