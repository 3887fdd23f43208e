package jsonpatch

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestOpsEncode(t *testing.T) {
	ops := []Op{Test("/spec/paused", false), Add("/metadata/annotations/"+Escape("a/b~c"), "x"), Replace("/spec/replicas", 0), Remove("/metadata/labels/k")}
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/spec/paused","value":false},{"op":"add","path":"/metadata/annotations/a~1b~0c","value":"x"},` +
		`{"op":"replace","path":"/spec/replicas","value":0},{"op":"remove","path":"/metadata/labels/k"}]`
	if string(raw) != want {
		t.Errorf("ops encode as\n%s\nwant\n%s", raw, want)
	}
}

func TestApply(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	// A failed test op is answered 422 Unprocessable Entity, as NewInvalid makes it.
	failedTest := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", nil)
	tests := []struct {
		name         string
		patchErr     error
		wantConflict bool
		wantErr      bool
	}{
		{"written", nil, false, false},
		{"a failed test reads as a conflict", failedTest, true, true},
		{"other errors pass through", apierrors.NewNotFound(gr, "cm"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
			c := fake.NewClientBuilder().WithObjects(cm).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if tt.patchErr != nil {
						return tt.patchErr
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			}).Build()
			got := cm.DeepCopy()
			err := Apply(context.Background(), c, gr, got, []Op{Test("/data/k", "v"), Add("/data/k", "w")})
			if (err != nil) != tt.wantErr || apierrors.IsConflict(err) != tt.wantConflict {
				t.Fatalf("Apply = %v; want error %v, conflict %v", err, tt.wantErr, tt.wantConflict)
			}
			if err == nil && got.Data["k"] != "w" {
				t.Errorf("response not written into obj: data %v", got.Data)
			}
		})
	}
}
