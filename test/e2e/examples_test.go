package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// The manifests under docs/examples are what the README and the sandbox tell people to apply: each applies
// cleanly and its Rollout settles Healthy.
var _ = Describe("docs/examples", func() {
	root, err := cluster.RepoRoot()
	if err != nil {
		panic(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "docs/examples/*.yaml"))
	for _, file := range files {
		It("applies "+filepath.Base(file)+" and its Rollout becomes Healthy", func(ctx SpecContext) {
			data, err := os.ReadFile(file)
			Expect(err).NotTo(HaveOccurred())
			ns := newNamespace(ctx, "example-")
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
			Expect(rollouts).NotTo(BeEmpty())
			for _, name := range rollouts {
				Eventually(func() string {
					obj, err := dyn.Resource(rolloutsV1alpha1).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
					Expect(err).NotTo(HaveOccurred())
					phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
					return phase
				}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Equal("Healthy"))
			}
		})
	}
})
