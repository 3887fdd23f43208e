package realnode

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var advancedCronJobs = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "advancedcronjobs"}

var _ = Describe("AdvancedCronJobs against the installed manager", func() {
	// The manager's image holds nothing but its binary: the zones it judges come from the binary itself.
	It("accepts an IANA time zone and refuses an unknown one", func(ctx SpecContext) {
		ns := newNamespace(ctx, "acj-")
		create := func(name, zone string) error {
			obj := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(`apiVersion: apps.kruise.io/v1alpha1
kind: AdvancedCronJob
metadata: {name: `+name+`}
spec:
  schedule: "0 3 * * *"
  timeZone: `+zone+`
  template:
    jobTemplate:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: c, image: example.invalid/never:v1}]
`), &obj.Object)).To(Succeed())
			_, err := dyn.Resource(advancedCronJobs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return err
		}
		Expect(create("shanghai", "Asia/Shanghai")).To(Succeed())
		err := create("mars", "Mars/Olympus_Mons")
		Expect(err).To(HaveOccurred(), "the manager's webhook judges the zone")
		Expect(err.Error()).To(ContainSubstring("spec.timeZone"))
	})
})
