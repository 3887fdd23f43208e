package revision

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestTemplateOfReadsWhatTemplatePatchWrites(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}, Annotations: map[string]string{"k": "v"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x:1", Env: []corev1.EnvVar{{Name: "N", Value: "1"}}}}},
	}
	data, err := TemplatePatch(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := TemplateOf(&appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: data}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tmpl, got); diff != "" {
		t.Errorf("template (-written +read):\n%s", diff)
	}
	if _, err := TemplateOf(&appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte("{")}}); err == nil {
		t.Error("broken data decoded")
	}
	if _, err := TemplateOf(nil); !errors.Is(err, ErrNilRevision) {
		t.Errorf("nil revision: %v", err)
	}
}
