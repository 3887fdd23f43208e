package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// exampleFiles are the manifests under docs/examples, which the README and the sandbox tell people to apply.
func exampleFiles() []string {
	root, err := cluster.RepoRoot()
	if err != nil {
		panic(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs/examples/*.yaml"))
	if err != nil {
		panic(err)
	}
	return files
}

// Each documented example runs the release it documents: applied, its Rollout settles Healthy; a new
// template starts a release; every step that waits for a person is approved; the release ends Healthy with
// every pod of the workload on the new template.
var _ = Describe("docs/examples", func() {
	files := exampleFiles()
	It("are there to run", func() {
		Expect(files).NotTo(BeEmpty(), "docs/examples holds no example")
	})
	for _, file := range files {
		It("releases "+filepath.Base(file)+" as documented", func(ctx SpecContext) {
			ns := newNamespace(ctx, "example-")
			rollouts := applyExample(ctx, file, ns)
			Expect(rollouts).NotTo(BeEmpty(), "%s holds no Rollout", filepath.Base(file))
			for _, name := range rollouts {
				runExampleRelease(ctx, ns, name)
			}
		})
	}
})

// applyExample applies every document of file in ns and returns the names of its Rollouts.
func applyExample(ctx context.Context, file, ns string) []string {
	GinkgoHelper()
	data, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	var rollouts []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
		if len(obj.Object) == 0 {
			continue
		}
		_, err := applyAndCleanUp(ctx, inNamespace(obj, ns))
		Expect(err).NotTo(HaveOccurred(), "%s in %s", obj.GetName(), filepath.Base(file))
		if obj.GetKind() == "Rollout" {
			rollouts = append(rollouts, obj.GetName())
		}
	}
	return rollouts
}

func runExampleRelease(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Eventually(func() string { return exampleState(ctx, ns, name) }).WithContext(ctx).WithTimeout(time.Minute).
		WithPolling(poll).Should(Equal("Healthy/Completed"))
	workload := exampleWorkload(ctx, ns, name)
	By("a new template for " + workload.GetKind() + " " + workload.GetName())
	patch := []byte(`{"spec":{"template":{"metadata":{"annotations":{"example.flotilla.dev/release":"2"}}}}}`)
	gvr := workloadResource(workload)
	_, err := dyn.Resource(gvr).Namespace(ns).Patch(ctx, workload.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() string { return exampleState(ctx, ns, name) }).WithContext(ctx).WithTimeout(time.Minute).
		WithPolling(poll).ShouldNot(Equal("Healthy/Completed"), "the release starts")
	approveUntilDone(ctx, ns, name)
	Eventually(func() []string { return podsWithout(ctx, ns, workload, "example.flotilla.dev/release") }).WithContext(ctx).
		WithTimeout(2*time.Minute).WithPolling(poll).Should(BeEmpty(), "every pod runs the new template")
}

// approveUntilDone approves each step that waits for a person until the release completes.
func approveUntilDone(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Eventually(func() string {
		state := exampleState(ctx, ns, name)
		if state == "Progressing/StepPaused" && awaitsApproval(ctx, ns, name) {
			approveRollout(ctx, ns, name)
		}
		return state
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Equal("Healthy/Completed"))
}

// exampleState is a Rollout's phase and step state.
func exampleState(ctx context.Context, ns, name string) string {
	obj, err := dyn.Resource(rolloutsV1beta1).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	state, _, _ := unstructured.NestedString(obj.Object, "status", "currentStepState")
	return phase + "/" + state
}

// awaitsApproval: the Rollout's Reconciling condition says it waits for a person, not for a timed pause.
func awaitsApproval(ctx context.Context, ns, name string) bool {
	return strings.HasPrefix(readCondition(ctx, ns, name, "Reconciling"), "True/AwaitingApproval")
}

func exampleWorkload(ctx context.Context, ns, name string) *unstructured.Unstructured {
	GinkgoHelper()
	ro, err := dyn.Resource(rolloutsV1beta1).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	ref, _, _ := unstructured.NestedStringMap(ro.Object, "spec", "workloadRef")
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(ref["apiVersion"])
	obj.SetKind(ref["kind"])
	got, err := dyn.Resource(workloadResource(obj)).Namespace(ns).Get(ctx, ref["name"], metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return got
}

func workloadResource(obj *unstructured.Unstructured) schema.GroupVersionResource {
	GinkgoHelper()
	gvk := obj.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	Expect(err).NotTo(HaveOccurred())
	return m.Resource
}

// podsWithout names the workload's live pods that lack the template annotation key.
func podsWithout(ctx context.Context, ns string, workload *unstructured.Unstructured, key string) []string {
	GinkgoHelper()
	sel, _, _ := unstructured.NestedStringMap(workload.Object, "spec", "selector", "matchLabels")
	var terms []string
	for k, v := range sel {
		terms = append(terms, k+"="+v)
	}
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: strings.Join(terms, ",")})
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Annotations[key] == "" {
			out = append(out, fmt.Sprintf("%s (ready %v)", p.Name, podReady(p)))
		}
	}
	if len(list.Items) == 0 {
		out = append(out, "no pod at all")
	}
	return out
}
