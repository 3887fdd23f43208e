package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/rollout/module"
)

// The CRDs the modules name for conversion are exactly the chart's CRDs with Webhook conversion, so the
// manager reads those by name and no other.
func TestConversionCRDsMatchTheChart(t *testing.T) {
	files, err := filepath.Glob("../../../charts/flotilla/crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("chart CRDs: %v (%d files)", err, len(files))
	}
	var webhook []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c := crd.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.WebhookConverter {
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

// An engine-only manager points only the engine's CRDs at itself.
func TestConversionCRDsOfTheModulesThatRun(t *testing.T) {
	engine := slices.IndexFunc(modules, func(m module.Module) bool { return m.Name == "rollout" })
	if got := conversionCRDs(modules[engine : engine+1]); !slices.Equal(got, modules[engine].ConversionCRDs) || len(got) != 2 {
		t.Errorf("engine only: %v", got)
	}
	if got := conversionCRDs(nil); len(got) != 0 {
		t.Errorf("no module: %v", got)
	}
}
