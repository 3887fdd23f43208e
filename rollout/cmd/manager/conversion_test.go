package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/rollout/module"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	kruiseappsv1beta1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/workloads/api/apps/v1beta1/promoted"
)

// chartCRDs are the CRDs the chart installs.
func chartCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob("../../../charts/flotilla/crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("chart CRDs: %v (%d files)", err, len(files))
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		crds = append(crds, crd)
	}
	return crds
}

func convertsByWebhook(crd *apiextensionsv1.CustomResourceDefinition) bool {
	c := crd.Spec.Conversion
	return c != nil && c.Strategy == apiextensionsv1.WebhookConverter
}

// The CRDs the modules name for conversion are exactly the chart's CRDs with Webhook conversion, so the
// manager reads those by name and no other.
func TestConversionCRDsMatchTheChart(t *testing.T) {
	var webhook []string
	for _, crd := range chartCRDs(t) {
		if convertsByWebhook(crd) {
			webhook = append(webhook, crd.Name)
		}
	}
	got := conversionCRDs(modules)
	slices.Sort(got)
	slices.Sort(webhook)
	if !slices.Equal(got, webhook) {
		t.Errorf("modules name %v for conversion; the chart's CRDs with Webhook conversion are %v", got, webhook)
	}
}

// A CRD the API server converts by changing apiVersion alone (strategy None) keeps what a client writes in any
// served version only if the stored version's schema holds every field of it: the Advanced StatefulSet's
// v1alpha1 is a part of the stored v1beta1, as upstream serves it, and the v1beta1 BroadcastJob, ImagePullJob,
// ImageListPullJob and AdvancedCronJob (workloads/api/apps/v1beta1/promoted) are exactly their stored v1alpha1.
func TestCRDsWithoutConversionWebhookStoreEveryServedField(t *testing.T) {
	sameShape := []string{"broadcastjobs.apps.kruise.io", "imagepulljobs.apps.kruise.io", "imagelistpulljobs.apps.kruise.io",
		"advancedcronjobs.apps.kruise.io"}
	for _, crd := range chartCRDs(t) {
		if convertsByWebhook(crd) || len(crd.Spec.Versions) < 2 {
			continue
		}
		stored := crd.Spec.Versions[slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Storage })]
		for _, v := range crd.Spec.Versions {
			if path := notStored(v.Schema.OpenAPIV3Schema, stored.Schema.OpenAPIV3Schema, "."); path != "" {
				t.Errorf("%s: %s serves %s, which the stored %s does not hold", crd.Name, v.Name, path, stored.Name)
			}
			if slices.Contains(sameShape, crd.Name) && !equality.Semantic.DeepEqual(v.Schema, stored.Schema) {
				t.Errorf("%s: %s is not the stored %s's schema", crd.Name, v.Name, stored.Name)
			}
		}
		sameShape = slices.DeleteFunc(sameShape, func(name string) bool { return name == crd.Name })
	}
	if len(sameShape) != 0 {
		t.Errorf("%v: not served in several versions without a conversion webhook", sameShape)
	}
}

// notStored is the first path of served that stored does not hold with the same type ("" when none).
func notStored(served, stored *apiextensionsv1.JSONSchemaProps, path string) string {
	switch {
	case served == nil:
		return ""
	case stored == nil || served.Type != stored.Type || served.XIntOrString != stored.XIntOrString:
		return path
	case served.Items != nil:
		if stored.Items == nil {
			return path + "[]"
		}
		return notStored(served.Items.Schema, stored.Items.Schema, path+"[].")
	case served.AdditionalProperties != nil && stored.AdditionalProperties != nil:
		return notStored(served.AdditionalProperties.Schema, stored.AdditionalProperties.Schema, path+"*.")
	}
	for name, p := range served.Properties {
		s, ok := stored.Properties[name]
		if !ok {
			return path + name
		}
		if missing := notStored(&p, &s, path+name+"."); missing != "" {
			return missing
		}
	}
	return ""
}

// An engine-only manager points only the engine's CRDs at itself.
func TestConversionCRDsOfTheModulesThatRun(t *testing.T) {
	engine := slices.IndexFunc(modules, func(m module.Module) bool { return m.Name == "rollout" })
	if got := conversionCRDs(modules[engine : engine+1]); !slices.Equal(got, modules[engine].ConversionCRDs) || len(got) != 2 {
		t.Errorf("engine only: %v", got)
	}
	if got := conversionCRDs(nil); !slices.Equal(got, modules[engine].ConversionCRDs) {
		t.Errorf("no module: %v", got)
	}
}

// Every module that names CRDs to convert brings their conversions.
func TestConvertingModulesConvert(t *testing.T) {
	if _, err := registerConversions(newScheme(), converting(modules)); err != nil {
		t.Fatal(err)
	}
	if got := len(converting(modules)); got != 3 {
		t.Errorf("%d converting modules, want the engine, daemonset and sidecarset", got)
	}
}

// A module switched off still has its CRDs installed, so their conversion is served while this installation
// owns their group: the DaemonSet's with the cloneset module alone.
func TestConversionCRDsOfModulesSwitchedOff(t *testing.T) {
	cloneset := slices.IndexFunc(modules, func(m module.Module) bool { return m.Name == "cloneset" })
	got := conversionCRDs(modules[cloneset : cloneset+1])
	if !slices.Contains(got, "daemonsets.apps.kruise.io") || !slices.Contains(got, "rollouts.rollouts.kruise.io") {
		t.Errorf("cloneset only: %v", got)
	}
	registry, err := registerConversions(newScheme(), converting(modules[cloneset:cloneset+1]))
	if err != nil {
		t.Fatalf("registering the conversions: %v", err)
	}
	stored := &kruiseappsv1alpha1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "DaemonSet"}}
	stored.Status.DaemonSetHash = "5d8f"
	converter, ok := registry.GetConverter(kruiseappsv1alpha1.GroupVersion.WithKind("DaemonSet").GroupKind())
	served := &kruiseappsv1beta1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet"}}
	if !ok {
		t.Fatal("no DaemonSet converter")
	}
	if err := converter.ConvertObject(t.Context(), stored, served); err != nil || served.Status.UpdateRevision != "5d8f" {
		t.Errorf("converted %+v: %v", served.Status, err)
	}
	storedSet := &kruiseappsv1alpha1.SidecarSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "SidecarSet"}}
	storedSet.Labels = map[string]string{kruiseappsv1alpha1.SidecarSetCustomVersionLabel: "v2"}
	converter, ok = registry.GetConverter(kruiseappsv1alpha1.GroupVersion.WithKind("SidecarSet").GroupKind())
	servedSet := &promoted.SidecarSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "SidecarSet"}}
	if !ok {
		t.Fatal("no SidecarSet converter")
	}
	if err := converter.ConvertObject(t.Context(), storedSet, servedSet); err != nil || servedSet.Spec.CustomVersion != "v2" {
		t.Errorf("converted %+v: %v", servedSet.Spec, err)
	}
}

// The v1beta1 SidecarSet is v1alpha1's but for its two differences: no namespace, and customVersion.
func TestSidecarSetV1beta1DiffersInTwoFields(t *testing.T) {
	crds := chartCRDs(t)
	crd := crds[slices.IndexFunc(crds, func(c *apiextensionsv1.CustomResourceDefinition) bool { return c.Name == "sidecarsets.apps.kruise.io" })]
	schemaOf := func(version string) apiextensionsv1.JSONSchemaProps {
		v := crd.Spec.Versions[slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version })]
		return *v.Schema.OpenAPIV3Schema.DeepCopy()
	}
	alpha, beta := schemaOf("v1alpha1"), schemaOf("v1beta1")
	delete(alpha.Properties["spec"].Properties, "namespace")
	if _, ok := beta.Properties["spec"].Properties["customVersion"]; !ok {
		t.Fatal("v1beta1 has no spec.customVersion")
	}
	delete(beta.Properties["spec"].Properties, "customVersion")
	for _, s := range []*apiextensionsv1.JSONSchemaProps{&alpha, &beta} {
		spec := s.Properties["spec"]
		spec.Description = ""
		s.Properties["spec"] = spec
	}
	if !equality.Semantic.DeepEqual(alpha, beta) {
		t.Error("v1alpha1 and v1beta1 SidecarSets differ in more than namespace and customVersion")
	}
}
