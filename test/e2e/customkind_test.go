package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// gameSets are a StatefulSet-like custom kind: spec.replicas, spec.template and
// spec.updateStrategy.rollingUpdate.partition, and the StatefulSet status. The tests play its controller
// (simulateGameSet); no pod runs.
var gameSets = schema.GroupVersionResource{Group: "games.e2e.flotilla.dev", Version: "v1", Resource: "gamesets"}

func ensureGameSetCRD(ctx context.Context) {
	GinkgoHelper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: gameSets.Resource + "." + gameSets.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gameSets.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gamesets", Singular: "gameset", Kind: "GameSet", ListKind: "GameSetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
	_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Eventually(func() error {
		_, err := dyn.Resource(gameSets).Namespace("default").List(ctx, metav1.ListOptions{})
		return err
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
}

func newGameSet(ns string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gameSets.GroupVersion().String(), "kind": "GameSet",
		"metadata": map[string]any{"name": appName, "namespace": ns},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": appName}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": appName}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "example.com/app:1",
					"env": []any{map[string]any{"name": "VERSION", "value": "v1"}}}}}},
			"updateStrategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": int64(0)}},
		},
	}}
}

// simulateGameSet plays the GameSet's controller until ctx ends: the revision is the template's VERSION,
// and the pods below the partition (all of them once it is lifted) run the update revision, ready at once.
func simulateGameSet(ctx context.Context, ns string) {
	go func() {
		defer GinkgoRecover()
		for ctx.Err() == nil {
			if obj, err := dyn.Resource(gameSets).Namespace(ns).Get(ctx, appName, metav1.GetOptions{}); err == nil {
				if syncGameSetStatus(obj) {
					_, _ = dyn.Resource(gameSets).Namespace(ns).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
}

// syncGameSetStatus writes the status a StatefulSet controller would into obj and reports whether it changed.
func syncGameSetStatus(obj *unstructured.Unstructured) bool {
	replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	partition, _, _ := unstructured.NestedInt64(obj.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	update := fmt.Sprint(containers[0].(map[string]any)["env"].([]any)[0].(map[string]any)["value"])
	current, _, _ := unstructured.NestedString(obj.Object, "status", "currentRevision")
	if current == "" {
		current = update
	}
	updated := replicas
	if current != update {
		updated = replicas - min(max(partition, 0), replicas)
	}
	if updated == replicas {
		current = update
	}
	want := map[string]any{
		"observedGeneration": obj.GetGeneration(), "replicas": replicas, "readyReplicas": replicas,
		"updatedReplicas": updated, "updatedReadyReplicas": updated, "currentRevision": current, "updateRevision": update,
	}
	if st, _, _ := unstructured.NestedMap(obj.Object, "status"); fmt.Sprint(st) == fmt.Sprint(want) {
		return false
	}
	_ = unstructured.SetNestedMap(obj.Object, want, "status")
	return true
}

func (s *story) gameSetPartition(ctx context.Context) int64 {
	GinkgoHelper()
	obj, err := dyn.Resource(gameSets).Namespace(s.ns).Get(ctx, appName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	p, _, _ := unstructured.NestedInt64(obj.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
	return p
}
