package webhooks

import (
	"context"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// benchPod is a pod as a Deployment's template makes it: one container with ports, env, resources, probes
// and a mount.
const benchPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-5d9c7b8f6-","namespace":"ns",` +
	`"labels":{"app":"web","pod-template-hash":"5d9c7b8f6"},"annotations":{"team":"payments"},` +
	`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d9c7b8f6","uid":"0b3f","controller":true,"blockOwnerDeletion":true}]},` +
	`"spec":{"containers":[{"name":"app","image":"example.com/web:v1","ports":[{"containerPort":8080,"protocol":"TCP"}],` +
	`"env":[{"name":"MODE","value":"prod"},{"name":"POD_IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}}],` +
	`"resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"memory":"256Mi"}},` +
	`"readinessProbe":{"httpGet":{"path":"/healthz","port":8080},"periodSeconds":5},` +
	`"volumeMounts":[{"name":"data","mountPath":"/data"}],"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}],` +
	`"volumes":[{"name":"data","emptyDir":{}}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst",` +
	`"serviceAccountName":"default","schedulerName":"default-scheduler"}}`

// addSidecars is a mutation that adds n sidecar containers with a mount and an env each, and an annotation.
func addSidecars(n int) PodMutation {
	return func(_ context.Context, pod *corev1.Pod) (bool, error) {
		for i := range n {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
				Name: fmt.Sprintf("sidecar-%d", i), Image: "example.com/sidecar:1.0", Command: []string{"sleep", "999d"},
				Env:          []corev1.EnvVar{{Name: "IS_INJECTED", Value: "true"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/log"}},
			})
		}
		pod.Annotations["kruise.io/sidecarset-hash"] = `{"a":{"hash":"x"}}`
		return true, nil
	}
}

// BenchmarkPodChain times the pod webhook's own work on one creation: decoding the pod, the mutations, and
// the patch against the request's object.
func BenchmarkPodChain(b *testing.B) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("%d-sidecars", n), func(b *testing.B) {
			h := &podChainHandler{decoder: admission.NewDecoder(scheme), mutations: []PodMutation{addSidecars(n)}}
			req := chainRequest(admissionv1.Create, benchPod)
			b.ReportAllocs()
			for b.Loop() {
				if resp := h.mutate(context.Background(), req); !resp.Allowed || len(resp.Patches) == 0 {
					b.Fatalf("no patch: %+v", resp.Result)
				}
			}
		})
	}
}
