package imagepullspec

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// The rules are those of the node agent's webhooks, which test them one by one; here: each error names its
// field under the path the caller gives.
func TestErrorsNameTheFieldUnderTheCallersPath(t *testing.T) {
	p := field.NewPath("spec", "template", "imageListPullJobTemplate", "spec")
	list := &kruiseappsv1alpha1.ImageListPullJobSpec{Images: []string{"nginx:1", "Nginx:1", "nginx:1"}}
	list.Parallelism = ptr.To(intstr.FromString("50%"))
	list.CompletionPolicy.Type = "Sometimes"
	want := []string{
		`spec.template.imageListPullJobTemplate.spec.images[1]: Invalid value: "Nginx:1": not an image reference`,
		`spec.template.imageListPullJobTemplate.spec.images[2]: Duplicate value: "nginx:1"`,
		`spec.template.imageListPullJobTemplate.spec.parallelism: Invalid value: "50%"`,
		`spec.template.imageListPullJobTemplate.spec.completionPolicy.type: Unsupported value: "Sometimes"`,
	}
	got := ValidateListPullJob(list, p).ToAggregate().Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("errors %q lack %q", got, w)
		}
	}
	if errs := ValidateListPullJob(&kruiseappsv1alpha1.ImageListPullJobSpec{}, p); errs.ToAggregate().Error() !=
		"spec.template.imageListPullJobTemplate.spec.images: Required value: at least one image to pull" {
		t.Errorf("an empty list: %v", errs)
	}
	if errs := ValidatePullJob(&kruiseappsv1alpha1.ImagePullJobSpec{Image: "nginx@sha256:12"}, field.NewPath("spec")); len(errs) != 1 ||
		errs[0].Field != "spec.image" {
		t.Errorf("a bad digest: %v", errs)
	}
}
