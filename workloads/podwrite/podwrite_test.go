package podwrite

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func podNamed() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "a"}}}
}

// conflictOnce fails the first pod patch as a lost race, as the API server does when the pod changed since read.
func conflictOnce() interceptor.Funcs {
	failed := false
	return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if !failed {
			failed = true
			return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, obj.GetName(), nil)
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
}

func label(v string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { p.Labels["step"] = v; return true }
}

// A patch that lost to a write of the pod's status alone is applied again to the pod as it is now; one that
// lost to any other change is the caller's to plan again.
func TestPatchRetriesAfterAStatusOnlyWrite(t *testing.T) {
	for _, tc := range []struct {
		name     string
		meantime func(*corev1.Pod)
		retried  bool
	}{
		{"the kubelet wrote the status", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, true},
		{"someone changed the labels", func(p *corev1.Pod) { p.Labels["other"] = "x" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			stored := podNamed()
			tc.meantime(stored)
			c := fake.NewClientBuilder().WithObjects(stored).WithInterceptorFuncs(conflictOnce()).Build()
			var wrote []string
			w := Writer{Client: c, APIReader: c, Wrote: func(pod, _ string) { wrote = append(wrote, pod) }}
			// The pod as read before the meantime write.
			err := w.Patch(ctx, podNamed(), label("1"))
			if (err == nil) != tc.retried || apierrors.IsConflict(err) == tc.retried {
				t.Fatalf("error %v, want a retry: %v", err, tc.retried)
			}
			if !tc.retried {
				return
			}
			got := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(stored), got); err != nil || got.Labels["step"] != "1" || len(wrote) != 1 {
				t.Errorf("stored labels %v, expectations told %v: %v", got.Labels, wrote, err)
			}
		})
	}
}

// Without an APIReader the conflict is returned as it is; a change that changes nothing writes nothing.
func TestPatchWithoutReaderAndNoChange(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithObjects(podNamed()).WithInterceptorFuncs(conflictOnce()).Build()
	w := Writer{Client: c, Wrote: func(string, string) { t.Error("told a write that did not happen") }}
	if err := w.Patch(ctx, podNamed(), func(*corev1.Pod) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if err := w.Patch(ctx, podNamed(), label("1")); !apierrors.IsConflict(err) {
		t.Fatalf("error %v, want the conflict", err)
	}
}
