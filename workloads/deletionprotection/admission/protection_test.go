package admission

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

const key = "policy.kruise.io/delete-protection"

var (
	on      = Options{Enabled: true, CRDCascading: true}
	noCRD   = Options{Enabled: true}
	widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

func labelled(value string) map[string]string { return map[string]string{key: value, "app": "web"} }

func ns(value string) Target {
	return Target{Kind: "Namespace", Name: "ns-1", Labels: labelled(value)}
}

func deploy(value string, replicas *int32) Target {
	return Target{Group: "apps", Kind: "Deployment", Namespace: "default", Name: "web", Labels: labelled(value), Replicas: replicas}
}

func crdTarget(value string) Target {
	return Target{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com",
		Labels: labelled(value), CustomResources: widgets}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name string
		t    Target
		o    Options
		d    Dependents
		want string // "" allows
	}{
		{name: "gate off allows Always", t: deploy("Always", ptr.To[int32](3)), o: Options{}},
		{name: "gate off allows Cascading", t: ns("Cascading"), o: Options{}, d: Dependents{ActivePods: 3}},
		{name: "no label", t: Target{Group: "apps", Kind: "Deployment", Name: "web", Replicas: ptr.To[int32](3)}, o: on},
		{name: "unknown value is ignored", t: deploy("always", ptr.To[int32](3)), o: on},
		{name: "already being deleted", t: func() Target { t := deploy("Always", nil); t.Deleting = true; return t }(), o: on},
		{name: "unprotected kind", t: Target{Kind: "ConfigMap", Name: "c", Labels: labelled("Always")}, o: on},
		{name: "Always Deployment", t: deploy("Always", ptr.To[int32](0)), o: on,
			want: "forbidden by ResourcesDeletionProtection: deployment default/web is protected, label policy.kruise.io/delete-protection=Always"},
		{name: "Cascading Deployment with replicas", t: deploy("Cascading", ptr.To[int32](3)), o: on,
			want: "forbidden by ResourcesDeletionProtection: deployment default/web has 3 replicas, label policy.kruise.io/delete-protection=Cascading"},
		{name: "Cascading Deployment with one replica", t: deploy("Cascading", ptr.To[int32](1)), o: on,
			want: "forbidden by ResourcesDeletionProtection: deployment default/web has 1 replica, label policy.kruise.io/delete-protection=Cascading"},
		{name: "Cascading Deployment scaled to 0", t: deploy("Cascading", ptr.To[int32](0)), o: on},
		{name: "Cascading workload without replicas", t: deploy("Cascading", nil), o: on},
		{name: "Cascading CloneSet", o: on,
			t:    Target{Group: "apps.kruise.io", Kind: "CloneSet", Namespace: "ns", Name: "cs", Labels: labelled("Cascading"), Replicas: ptr.To[int32](2)},
			want: "forbidden by ResourcesDeletionProtection: cloneset ns/cs has 2 replicas, label policy.kruise.io/delete-protection=Cascading"},
		{name: "Cascading Advanced StatefulSet", o: on,
			t:    Target{Group: "apps.kruise.io", Kind: "StatefulSet", Namespace: "ns", Name: "db", Labels: labelled("Cascading"), Replicas: ptr.To[int32](5)},
			want: "forbidden by ResourcesDeletionProtection: statefulset ns/db has 5 replicas, label policy.kruise.io/delete-protection=Cascading"},
		{name: "Cascading UnitedDeployment scaled to 0", o: on,
			t: Target{Group: "apps.kruise.io", Kind: "UnitedDeployment", Namespace: "ns", Name: "ud", Labels: labelled("Cascading"), Replicas: ptr.To[int32](0)}},
		{name: "Always namespace", t: ns("Always"), o: on,
			want: "forbidden by ResourcesDeletionProtection: namespace ns-1 is protected, label policy.kruise.io/delete-protection=Always"},
		{name: "Cascading namespace with pods", t: ns("Cascading"), o: on, d: Dependents{ActivePods: 3},
			want: "forbidden by ResourcesDeletionProtection: namespace ns-1 has 3 active pods, label policy.kruise.io/delete-protection=Cascading"},
		{name: "Cascading namespace with a claim", t: ns("Cascading"), o: on, d: Dependents{BoundClaims: 1},
			want: "forbidden by ResourcesDeletionProtection: namespace ns-1 has 1 Bound PersistentVolumeClaim, label policy.kruise.io/delete-protection=Cascading"},
		{name: "Cascading namespace with both", t: ns("Cascading"), o: on, d: Dependents{ActivePods: 1, BoundClaims: 2},
			want: "forbidden by ResourcesDeletionProtection: namespace ns-1 has 1 active pod and 2 Bound PersistentVolumeClaims, label policy.kruise.io/delete-protection=Cascading"},
		{name: "empty Cascading namespace", t: ns("Cascading"), o: on},
		{name: "Always Service", t: Target{Kind: "Service", Namespace: "default", Name: "web", Labels: labelled("Always")}, o: on,
			want: "forbidden by ResourcesDeletionProtection: service default/web is protected, label policy.kruise.io/delete-protection=Always"},
		{name: "Cascading Service protects nothing", t: Target{Kind: "Service", Namespace: "default", Name: "web", Labels: labelled("Cascading")}, o: on},
		{name: "Cascading Ingress protects nothing", o: on,
			t: Target{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "default", Name: "web", Labels: labelled("Cascading")}},
		{name: "Always Ingress", o: on, t: Target{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "default", Name: "web", Labels: labelled("Always")},
			want: "forbidden by ResourcesDeletionProtection: ingress default/web is protected, label policy.kruise.io/delete-protection=Always"},
		{name: "Always CRD", t: crdTarget("Always"), o: noCRD,
			want: "forbidden by ResourcesDeletionProtection: customresourcedefinition widgets.example.com is protected, label policy.kruise.io/delete-protection=Always"},
		{name: "Cascading CRD with objects", t: crdTarget("Cascading"), o: on, d: Dependents{CustomResources: 2},
			want: "forbidden by ResourcesDeletionProtection: customresourcedefinition widgets.example.com has 2 custom resources, label policy.kruise.io/delete-protection=Cascading"},
		{name: "empty Cascading CRD", t: crdTarget("Cascading"), o: on},
		{name: "Cascading CRD without its gate", t: crdTarget("Cascading"), o: noCRD,
			want: "forbidden by ResourcesDeletionProtection: customresourcedefinition widgets.example.com cannot be checked for custom resources " +
				"without the feature gate DeletionProtectionForCRDCascadingGate, label policy.kruise.io/delete-protection=Cascading"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.t, tc.o, tc.d)
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != "" && got == nil:
				t.Errorf("allowed, want %q", tc.want)
			case got != nil && got.Error() != tc.want:
				t.Errorf("refusal\n got %q\nwant %q", got.Error(), tc.want)
			case got != nil && got.Protection != tc.t.Labels[key]:
				t.Errorf("protection %q", got.Protection)
			}
		})
	}
}

func TestNeeds(t *testing.T) {
	deleting := ns("Cascading")
	deleting.Deleting = true
	tests := []struct {
		name string
		t    Target
		o    Options
		want Need
	}{
		{"Cascading namespace", ns("Cascading"), on, NeedPodsAndClaims},
		{"Always namespace", ns("Always"), on, NeedNothing},
		{"gate off", ns("Cascading"), Options{}, NeedNothing},
		{"namespace being deleted", deleting, on, NeedNothing},
		{"Cascading CRD", crdTarget("Cascading"), on, NeedCustomResources},
		{"Cascading CRD without its gate", crdTarget("Cascading"), noCRD, NeedNothing},
		{"Cascading workload", deploy("Cascading", ptr.To[int32](1)), on, NeedNothing},
	}
	for _, tc := range tests {
		if got := Needs(tc.t, tc.o); got != tc.want {
			t.Errorf("%s: need %v, want %v", tc.name, got, tc.want)
		}
	}
}
