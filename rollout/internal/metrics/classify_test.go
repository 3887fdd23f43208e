package metrics

import (
	"net/url"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		method, url    string
		verb, resource string
	}{
		{"GET", "/api/v1/namespaces/demo/pods/web-0", "get", "pods"},
		{"GET", "/api/v1/namespaces/demo/pods", "list", "pods"},
		{"GET", "/api/v1/pods?limit=500", "list", "pods"},
		{"GET", "/api/v1/pods?watch=true&resourceVersion=7", "watch", "pods"},
		{"GET", "/api/v1/namespaces/demo/pods?watch=1", "watch", "pods"},
		{"GET", "/api/v1/watch/namespaces/demo/pods", "watch", "pods"},
		{"GET", "/apis/apps/v1/namespaces/demo/deployments/web", "get", "deployments"},
		{"GET", "/apis/rollouts.kruise.io/v1beta1/rollouts?watch=true", "watch", "rollouts"},
		{"POST", "/apis/apps/v1/namespaces/demo/deployments", "create", "deployments"},
		{"PUT", "/apis/apps/v1/namespaces/demo/deployments/web", "update", "deployments"},
		{"PATCH", "/apis/apps/v1/namespaces/demo/deployments/web/status", "patch", "deployments/status"},
		{"PATCH", "/apis/apps/v1/namespaces/demo/deployments/web/scale", "patch", "deployments/scale"},
		{"DELETE", "/api/v1/namespaces/demo/pods/web-0", "delete", "pods"},
		{"DELETE", "/api/v1/namespaces/demo/pods", "deletecollection", "pods"},
		{"POST", "/api/v1/namespaces/demo/pods/web-0/eviction", "create", "pods/eviction"},
		{"GET", "/api/v1/namespaces/demo/pods/web-0/log/extra/segments", "get", "pods/log"},
		// Namespaces themselves: a name, and their own subresources.
		{"GET", "/api/v1/namespaces", "list", "namespaces"},
		{"GET", "/api/v1/namespaces/demo", "get", "namespaces"},
		{"PUT", "/api/v1/namespaces/demo/finalize", "update", "namespaces/finalize"},
		{"PATCH", "/api/v1/namespaces/demo/status", "patch", "namespaces/status"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/flotilla", "update", "leases"},
		// Cluster-scoped resources with subresources.
		{"PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rollouts.rollouts.kruise.io", "patch", "customresourcedefinitions"},
		{"PUT", "/api/v1/nodes/n1/status", "update", "nodes/status"},
		// Discovery and other non-resource paths.
		{"GET", "/api", "get", NonResource},
		{"GET", "/api/v1", "get", NonResource},
		{"GET", "/apis", "get", NonResource},
		{"GET", "/apis/apps", "get", NonResource},
		{"GET", "/apis/apps/v1", "get", NonResource},
		{"GET", "/version", "get", NonResource},
		{"GET", "/openapi/v3/apis/apps/v1", "get", NonResource},
		{"GET", "/api/v1/watch", "get", NonResource},
		{"OPTIONS", "/api/v1/pods", "options", "pods"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		verb, resource := Classify(tt.method, u)
		if verb != tt.verb || resource != tt.resource {
			t.Errorf("%s %s = %s %s, want %s %s", tt.method, tt.url, verb, resource, tt.verb, tt.resource)
		}
	}
}
