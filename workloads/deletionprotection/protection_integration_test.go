package deletionprotection

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The API server calls the module's webhooks through the chart's entries; one manager serves the subtests.
func TestDeletionProtectionThroughTheAPIServer(t *testing.T) {
	e := start(t)
	t.Run("a Cascading namespace with a running pod", e.cascadingNamespace)
	t.Run("a Cascading namespace with a Bound claim", e.namespaceWithClaim)
	t.Run("an Always Deployment", e.alwaysDeployment)
	t.Run("a Cascading CloneSet", e.cascadingCloneSet)
	t.Run("a Cascading CustomResourceDefinition", e.cascadingCRD)
	t.Run("label values that protect nothing", e.labelValues)
}

// protectedNamespace creates a namespace labelled with protection and its default ServiceAccount.
func (e *env) protectedNamespace(t *testing.T, protection string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "protected-", Labels: map[string]string{protectionKey: protection}}}
	managertest.Create(t, e.c, ns)
	managertest.Create(t, e.c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "default"}})
	return ns
}

func (e *env) cascadingNamespace(t *testing.T) {
	ns := e.protectedNamespace(t, "Cascading")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}}}
	managertest.Create(t, e.c, pod)

	expectRefused(t, e.c.Delete(t.Context(), ns),
		"forbidden by ResourcesDeletionProtection: namespace "+ns.Name+" has 1 active pod, label policy.kruise.io/delete-protection=Cascading")
	e.stillThere(t, ns)
	e.stillThere(t, pod)

	// Unscheduled, the pod goes at once.
	if err := e.c.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(t.Context(), ns); err != nil {
		t.Fatalf("deleting the namespace without its pod: %v", err)
	}
	e.gone(t, ns)
}

func (e *env) namespaceWithClaim(t *testing.T) {
	ns := e.protectedNamespace(t, "Cascading")
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resourceGi}}}}
	managertest.Create(t, e.c, pvc)
	if err := e.c.Delete(t.Context(), ns); err != nil {
		t.Fatalf("a Pending claim protects nothing, yet: %v", err)
	}
	e.gone(t, ns)

	ns = e.protectedNamespace(t, "Cascading")
	pvc = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "data"}, Spec: pvc.Spec}
	managertest.Create(t, e.c, pvc)
	pvc.Status.Phase = corev1.ClaimBound
	if err := e.c.Status().Update(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
	expectRefused(t, e.c.Delete(t.Context(), ns), "namespace "+ns.Name+" has 1 Bound PersistentVolumeClaim, label policy.kruise.io/delete-protection=Cascading")
	// Without a controller-manager the claim keeps its pvc-protection finalizer: being deleted, it no longer counts.
	if err := e.c.Delete(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(t.Context(), ns); err != nil {
		t.Fatalf("deleting the namespace whose claim is being deleted: %v", err)
	}
	e.gone(t, ns)
}

func (e *env) alwaysDeployment(t *testing.T) {
	ns := managertest.Namespace(t, e.c, "always")
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{protectionKey: "Always"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels)},
	}
	managertest.Create(t, e.c, d)
	expectRefused(t, e.c.Delete(t.Context(), d),
		"forbidden by ResourcesDeletionProtection: deployment "+ns+"/web is protected, label policy.kruise.io/delete-protection=Always")
	e.stillThere(t, d)

	e.relabel(t, d, "")
	if err := e.c.Delete(t.Context(), d); err != nil {
		t.Fatalf("deleting the unlabelled Deployment: %v", err)
	}
	e.gone(t, d)
}

func (e *env) cascadingCloneSet(t *testing.T) {
	ns := managertest.Namespace(t, e.c, "cascading")
	labels := map[string]string{"app": "web"}
	cs := &kruiseappsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{protectionKey: "Cascading"}},
		Spec: kruiseappsv1alpha1.CloneSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels)},
	}
	managertest.Create(t, e.c, cs)
	expectRefused(t, e.c.Delete(t.Context(), cs),
		"forbidden by ResourcesDeletionProtection: cloneset "+ns+"/web has 2 replicas, label policy.kruise.io/delete-protection=Cascading")
	e.stillThere(t, cs)

	if err := e.c.Patch(t.Context(), cs, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`))); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(t.Context(), cs); err != nil {
		t.Fatalf("deleting the CloneSet scaled to 0: %v", err)
	}
	e.gone(t, cs)
}

func (e *env) cascadingCRD(t *testing.T) {
	group := e.run + ".deletionprotection.flotilla.dev"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group, Labels: map[string]string{protectionKey: "Cascading"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	managertest.Create(t, e.c, crd)
	ns := managertest.Namespace(t, e.c, "widgets")
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": ns, "name": "w"}}}
	managertest.Eventually(t, itTimeout, "a widget created once the CRD is served", func(ctx context.Context) (bool, error) {
		err := e.c.Create(ctx, widget.DeepCopy())
		return err == nil, err
	})

	expectRefused(t, e.c.Delete(t.Context(), crd), "forbidden by ResourcesDeletionProtection: customresourcedefinition widgets."+group+
		" has 1 custom resource, label policy.kruise.io/delete-protection=Cascading")
	e.stillThere(t, crd)

	if err := e.c.Delete(t.Context(), widget); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(t.Context(), crd); err != nil {
		t.Fatalf("deleting the CRD without its widget: %v", err)
	}
	e.gone(t, crd)
}

// The API server sends only writes that set an unsupported value, and the webhook refuses them; a value set
// before the webhooks existed survives other updates.
func (e *env) labelValues(t *testing.T) {
	ns := managertest.Namespace(t, e.c, "labels")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "typo", Labels: map[string]string{protectionKey: "always"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	err := e.c.Create(t.Context(), svc)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(),
		`metadata.labels[policy.kruise.io/delete-protection]: Unsupported value: "always": supported values: "Always"`) {
		t.Fatalf("creating a Service labelled always: %v", err)
	}
	svc.Labels[protectionKey] = "Cascading"
	if err := e.c.Create(t.Context(), svc); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `supported values: "Always"`) {
		t.Fatalf("creating a Service labelled Cascading: %v", err)
	}
	svc.Labels[protectionKey] = "Always"
	managertest.Create(t, e.c, svc)

	legacy := e.legacy
	if err := e.c.Patch(t.Context(), legacy, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"a"}}}`))); err != nil {
		t.Fatalf("an update keeping the legacy value: %v", err)
	}
	if err := e.c.Patch(t.Context(), legacy, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"labels":{"`+protectionKey+`":"no"}}}`))); !apierrors.IsInvalid(err) {
		t.Fatalf("changing the legacy value to another unsupported one: %v", err)
	}
	e.relabel(t, legacy, "Always")
}

var resourceGi = resource.MustParse("1Gi")

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}}}
}
