package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-dev/flotilla/test/e2e/framework"
)

// Serial: several seed examples share a name and must not overlap.
var _ = Describe("Seed examples", Serial, func() {
	for _, s := range mustLoadSeeds() {
		if s.Fragment != "" {
			It(fmt.Sprintf("%s (seed line %d) is a fragment of a served kind", s.File, s.Line), func() {
				expectServedKinds(s)
			})
			continue
		}
		if s.ExpectRejected != "" {
			It(fmt.Sprintf("%s (seed line %d) is refused by admission, naming %s", s.File, s.Line, s.ExpectRejected), func(ctx SpecContext) {
				expectSeedRejected(ctx, s)
			})
			continue
		}
		It(fmt.Sprintf("%s (seed line %d) applies and reads back without pruned fields", s.File, s.Line), func(ctx SpecContext) {
			expectSeedRoundTrip(ctx, s)
		})
	}
})

func expectServedKinds(s framework.Seed) {
	for _, obj := range s.Objects {
		_, err := targetFor(obj)
		Expect(err).NotTo(HaveOccurred())
	}
}

// expectSeedRejected applies an example that upstream's admission webhooks refuse: it must be refused with
// the expected text and leave nothing behind. While no Flotilla webhook covers the kind yet, the example is
// pending, not a pass.
func expectSeedRejected(ctx context.Context, s framework.Seed) {
	obj := framework.ForApply(s.Object())
	t, err := targetFor(obj)
	Expect(err).NotTo(HaveOccurred())
	if !admissionCovers(ctx, t.gvr, obj.GetLabels()) {
		Skip(fmt.Sprintf("pending: upstream rejects this example (%q), and no Flotilla admission webhook covers %s yet",
			s.ExpectRejected, t.gvr.GroupResource()))
	}
	_, err = applyAndCleanUp(ctx, obj)
	Expect(err).To(MatchError(ContainSubstring(s.ExpectRejected)))
	expectGone(ctx, t, obj.GetName())
}

// expectSeedRoundTrip applies a complete example: the stored object must keep every field that was sent
// (v1alpha1 Rollouts cross the conversion webhook both ways on the way).
func expectSeedRoundTrip(ctx context.Context, s framework.Seed) {
	obj := framework.ForApply(s.Object())
	_, err := targetFor(obj)
	Expect(err).NotTo(HaveOccurred())
	got, err := applyAndCleanUp(ctx, obj)
	Expect(err).NotTo(HaveOccurred(), "applying %s", s.File)
	Expect(framework.Missing(framework.ComparedFields(obj.Object), got.Object)).To(BeEmpty(),
		"fields of %s that the server did not keep", s.File)
}

var _ = Describe("Schema validation", func() {
	const ns = "e2e-schema"

	DescribeTable("rejects invalid values with a message naming the field",
		func(ctx SpecContext, obj *unstructured.Unstructured, field string) {
			obj.SetNamespace(ns)
			_, err := applyAndCleanUp(ctx, obj)
			Expect(err).To(HaveOccurred(), "the server accepted %s", field)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want a schema (422 Invalid) error, got: %v", err)
			Expect(err.Error()).NotTo(ContainSubstring("admission webhook"), "rejected by a webhook, not the schema")
			Expect(err.Error()).To(ContainSubstring(field))
		},
		Entry("CloneSet updateStrategy.type Foo",
			withField(cloneSet("bad-type"), "Foo", "spec", "updateStrategy", "type"), "spec.updateStrategy.type"),
		Entry("CloneSet replicas -1",
			withField(cloneSet("bad-replicas"), int64(-1), "spec", "replicas"), "spec.replicas"),
		Entry("CloneSet partition 150%",
			withField(cloneSet("bad-partition-percent"), "150%", "spec", "updateStrategy", "partition"), "spec.updateStrategy.partition"),
		Entry("CloneSet partition abc",
			withField(cloneSet("bad-partition-text"), "abc", "spec", "updateStrategy", "partition"), "spec.updateStrategy.partition"),
		Entry("Advanced StatefulSet updateStrategy.type Foo",
			withField(advancedStatefulSet("bad-type"), "Foo", "spec", "updateStrategy", "type"), "spec.updateStrategy.type"),
	)
})

// cloneSet is the smallest valid CloneSet.
func cloneSet(name string) *unstructured.Unstructured {
	return workload("apps.kruise.io/v1alpha1", "CloneSet", name)
}

// advancedStatefulSet is the smallest valid Advanced StatefulSet.
func advancedStatefulSet(name string) *unstructured.Unstructured {
	return workload("apps.kruise.io/v1beta1", "StatefulSet", name)
}

func workload(apiVersion, kind, name string) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{
					map[string]any{"name": "main", "image": "nginx:latest"},
				}},
			},
		},
	}}
}

func withField(obj *unstructured.Unstructured, value any, path ...string) *unstructured.Unstructured {
	if err := unstructured.SetNestedField(obj.Object, value, path...); err != nil {
		panic(fmt.Sprintf("setting %v: %v", path, err))
	}
	return obj
}

var _ = Describe("CustomResourceDefinitions", func() {
	It("are listed by kubectl get crd", func(ctx SpecContext) {
		out, err := testCluster.Kubectl(ctx, "get", "crd")
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		listed := firstFields(string(out))
		for _, w := range upstreamCRDs {
			Expect(listed).To(ContainElement(w.name()))
		}
	})

	It("include none in the kruise groups that upstream lacks", func(ctx SpecContext) {
		list, err := crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		var known, extra []string
		for _, w := range upstreamCRDs {
			known = append(known, w.name())
		}
		for _, crd := range list.Items {
			if isKruiseGroup(crd.Spec.Group) && !slices.Contains(known, crd.Name) {
				extra = append(extra, crd.Name)
			}
		}
		Expect(extra).To(BeEmpty())
	})

	DescribeTable("match upstream's scope, short names, versions and storage version",
		func(ctx SpecContext, w crdWant) {
			crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, w.name(), metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(string(crd.Spec.Scope)).To(Equal(w.scope), "scope")
			Expect(crd.Spec.Names.ShortNames).To(ConsistOf(w.shortNames), "short names")
			Expect(servedVersions(crd)).To(ConsistOf(w.versions), "served versions")
			Expect(storageVersion(crd)).To(Equal(w.storage), "storage version")
		},
		crdEntries(),
	)
})

func crdEntries() []TableEntry {
	var entries []TableEntry
	for _, w := range upstreamCRDs {
		entries = append(entries, Entry(w.name(), w))
	}
	return entries
}

func isKruiseGroup(group string) bool {
	return group == appsGroup || group == policyGroup || group == rolloutsGroup
}

func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// firstFields returns the first word of every line.
func firstFields(out string) []string {
	var words []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			words = append(words, f[0])
		}
	}
	return words
}

var _ = Describe("Printer columns", func() {
	DescribeTable("the server's table for every kind has upstream's columns",
		func(ctx SpecContext, w columnsWant) {
			Expect(serverColumns(ctx, w)).To(Equal(concat(cols("NAME"), w.columns)))
		},
		columnEntries(),
	)

	Context("kubectl get", Ordered, Serial, func() {
		const ns = "e2e-printer"

		BeforeAll(func(ctx SpecContext) {
			applied := map[string]bool{}
			for _, file := range printedBySeed {
				if applied[file] {
					continue
				}
				applied[file] = true
				obj := seedObject(file)
				obj.SetName("e2e-printer-" + obj.GetName())
				obj.SetNamespace(ns)
				_, err := applyAndCleanUp(ctx, obj)
				Expect(err).NotTo(HaveOccurred(), "applying %s", file)
			}
		})

		DescribeTable("prints upstream's header",
			func(ctx SpecContext, w columnsWant, wideOutput bool) {
				args := []string{"get", w.resource(), "-A"}
				if wideOutput {
					args = append(args, "-o", "wide")
				}
				out, err := testCluster.Kubectl(ctx, args...)
				Expect(err).NotTo(HaveOccurred(), "%s", out)
				Expect(headerLine(string(out))).To(Equal(kubectlHeader(w, wideOutput)))
			},
			kubectlEntries(),
		)
	})
})

func columnEntries() []TableEntry {
	var entries []TableEntry
	for _, w := range upstreamColumns {
		entries = append(entries, Entry(w.resource(), w))
	}
	return entries
}

func kubectlEntries() []TableEntry {
	var entries []TableEntry
	for _, w := range upstreamColumns {
		if _, ok := printedBySeed[w.resource()]; ok {
			entries = append(entries,
				Entry(w.resource(), w, false),
				Entry(w.resource()+" -o wide", w, true))
		}
	}
	return entries
}

// tableAccept asks the apiserver for the table kubectl renders.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

func serverColumns(ctx context.Context, w columnsWant) []column {
	raw, err := disco.RESTClient().Get().AbsPath("/apis", w.group, w.version, w.plural).
		Param("limit", "1").SetHeader("Accept", tableAccept).Do(ctx).Raw()
	Expect(err).NotTo(HaveOccurred(), "listing %s as a table", w.resource())
	var table metav1.Table
	Expect(json.Unmarshal(raw, &table)).To(Succeed())
	var out []column
	for _, c := range table.ColumnDefinitions {
		out = append(out, column{name: strings.ToUpper(c.Name), priority: c.Priority})
	}
	return out
}

// kubectlHeader is what kubectl prints above the rows of an all-namespaces
// listing.
func kubectlHeader(w columnsWant, wideOutput bool) []string {
	var header []string
	if isNamespaced(w.plural, w.group) {
		header = append(header, "NAMESPACE")
	}
	header = append(header, "NAME")
	for _, c := range w.columns {
		if c.priority == 0 || wideOutput {
			header = append(header, c.name)
		}
	}
	return header
}

func isNamespaced(plural, group string) bool {
	for _, w := range upstreamCRDs {
		if w.plural == plural && w.group == group {
			return w.scope == namespaced
		}
	}
	return false
}

// headerLine finds kubectl's header among its output lines.
func headerLine(out string) []string {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "NAME" || f[0] == "NAMESPACE") {
			return f
		}
	}
	return nil
}

var _ = Describe("Rollout conversion", func() {
	const ns = "e2e-conversion"
	v1alpha1 := schema.GroupVersionResource{Group: rolloutsGroup, Version: "v1alpha1", Resource: "rollouts"}
	v1beta1 := v1alpha1.GroupResource().WithVersion("v1beta1")

	It("is a webhook served by the manager over TLS", func(ctx SpecContext) {
		crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "rollouts."+rolloutsGroup, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		conv := crd.Spec.Conversion
		Expect(conv).NotTo(BeNil())
		Expect(conv.Strategy).To(Equal(apiextensionsv1.WebhookConverter))
		Expect(conv.Webhook).NotTo(BeNil())
		Expect(conv.Webhook.ClientConfig).NotTo(BeNil())
		Expect(conv.Webhook.ClientConfig.CABundle).NotTo(BeEmpty())
		Expect(conv.Webhook.ClientConfig.URL).To(HaveValue(HavePrefix(fmt.Sprintf("https://127.0.0.1:%d/", manager.WebhookPort))))
	})

	It("reads a v1alpha1 Rollout back as v1beta1", func(ctx SpecContext) {
		in := rolloutV1alpha1("conv-from-v1alpha1", "conv-a")
		in.SetNamespace(ns)
		_, err := applyAndCleanUp(ctx, in)
		Expect(err).NotTo(HaveOccurred())

		out, err := dyn.Resource(v1beta1).Namespace(ns).Get(ctx, in.GetName(), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.GetAPIVersion()).To(Equal(rolloutsGroup + "/v1beta1"))
		Expect(nested(out, "spec", "workloadRef")).To(Equal(map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "name": "conv-a",
		}))
		Expect(nested(out, "spec", "objectRef")).To(BeNil())
		// v1alpha1 Rollouts of Deployments default to canary style.
		Expect(nested(out, "spec", "strategy", "canary", "enableExtraWorkloadForCanary")).To(Equal(true))
		steps := stepsOf(out)
		Expect(steps).To(HaveLen(3))
		Expect(steps[0]).To(And(HaveKeyWithValue("traffic", "20%"), HaveKeyWithValue("replicas", int64(1))))
		Expect(steps[1]).To(And(HaveKeyWithValue("traffic", "60%"), HaveKeyWithValue("replicas", "50%")))
		Expect(steps[1]).To(HaveKeyWithValue("pause", map[string]any{"duration": int64(10)}))
		Expect(steps[2]).To(And(HaveKeyWithValue("replicas", "100%"), Not(HaveKey("traffic"))))
		for _, s := range steps {
			Expect(s).NotTo(HaveKey("weight"))
		}
	})

	It("reads a v1beta1 Rollout back as v1alpha1", func(ctx SpecContext) {
		in := rolloutV1beta1("conv-from-v1beta1", "conv-b")
		in.SetNamespace(ns)
		_, err := applyAndCleanUp(ctx, in)
		Expect(err).NotTo(HaveOccurred())

		out, err := dyn.Resource(v1alpha1).Namespace(ns).Get(ctx, in.GetName(), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.GetAPIVersion()).To(Equal(rolloutsGroup + "/v1alpha1"))
		Expect(nested(out, "spec", "objectRef", "workloadRef")).To(Equal(map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "name": "conv-b",
		}))
		Expect(nested(out, "spec", "workloadRef")).To(BeNil())
		steps := stepsOf(out)
		Expect(steps).To(HaveLen(2))
		Expect(steps[0]).To(And(HaveKeyWithValue("weight", int64(10)), HaveKeyWithValue("replicas", int64(1))))
		Expect(steps[1]).To(And(HaveKeyWithValue("replicas", "100%"), Not(HaveKey("weight"))))
		for _, s := range steps {
			Expect(s).NotTo(HaveKey("traffic"))
		}
	})
})

func rolloutV1alpha1(name, workload string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rolloutsGroup + "/v1alpha1",
		"kind":       "Rollout",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"objectRef": map[string]any{"workloadRef": deploymentRef(workload)},
			"strategy": map[string]any{"canary": map[string]any{
				"steps": []any{
					map[string]any{"weight": int64(20), "replicas": int64(1)},
					map[string]any{"weight": int64(60), "replicas": "50%", "pause": map[string]any{"duration": int64(10)}},
					map[string]any{"replicas": "100%"},
				},
				"trafficRoutings": trafficRoutings(workload),
			}},
		},
	}}
}

func rolloutV1beta1(name, workload string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rolloutsGroup + "/v1beta1",
		"kind":       "Rollout",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"workloadRef": deploymentRef(workload),
			"strategy": map[string]any{"canary": map[string]any{
				"steps": []any{
					map[string]any{"traffic": "10%", "replicas": int64(1)},
					map[string]any{"replicas": "100%"},
				},
				"trafficRoutings": trafficRoutings(workload),
			}},
		},
	}}
}

func deploymentRef(name string) map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
}

func trafficRoutings(name string) []any {
	return []any{map[string]any{
		"service": name,
		"ingress": map[string]any{"classType": "nginx", "name": name},
	}}
}

func nested(obj *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	return v
}

func stepsOf(obj *unstructured.Unstructured) []map[string]any {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "spec", "strategy", "canary", "steps")
	var steps []map[string]any
	for _, s := range raw {
		m, ok := s.(map[string]any)
		Expect(ok).To(BeTrue(), "step %v is not an object", s)
		steps = append(steps, m)
	}
	return steps
}
