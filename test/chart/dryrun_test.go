package chart

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldOwner is the field manager of the test's applies.
const fieldOwner = client.FieldOwner("flotilla-chart-test")

// TestServerSideDryRun applies every object of every rendering with a server-side dry run, so the local
// apiserver validates them (schemas, defaulting, admission), in namespaces that warn about pods below the
// restricted Pod Security level: the manager's pod template must raise no warning.
func TestServerSideDryRun(t *testing.T) {
	needCluster(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, c.rel)
			ensureRestrictedNamespace(t, c.rel.namespace)
			for _, obj := range r.objs {
				if warnings := dryRunApply(t, obj); len(warnings) > 0 {
					t.Errorf("%s %s: apiserver warnings %q", obj.GetKind(), obj.GetName(), warnings)
				}
			}
		})
	}
}

// TestServerSideDryRunWarns shows that TestServerSideDryRun would notice a pod below the restricted level.
func TestServerSideDryRunWarns(t *testing.T) {
	needCluster(t)
	rel := defaultRelease("--set", "podSecurityContext=null")
	ensureRestrictedNamespace(t, rel.namespace)
	warnings := dryRunApply(t, render(t, rel).one(t, "Deployment"))
	if !strings.Contains(strings.Join(warnings, "\n"), "restricted") {
		t.Errorf("no restricted Pod Security warning for a pod without runAsNonRoot and seccomp: %q", warnings)
	}
}

// ensureRestrictedNamespace creates ns labelled to warn about pod templates below the restricted level.
func ensureRestrictedNamespace(t *testing.T, name string) {
	t.Helper()
	c := newClient(t, cfg)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted",
	}}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// dryRunApply server-side applies obj with dryRun=All and returns the warnings the apiserver sent.
func dryRunApply(t *testing.T, obj *unstructured.Unstructured) []string {
	t.Helper()
	w := &warningRecorder{}
	rc := rest.CopyConfig(cfg)
	rc.WarningHandlerWithContext = w
	c := newClient(t, rc)
	err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
		fieldOwner, client.ForceOwnership, client.DryRunAll)
	if err != nil {
		t.Errorf("dry-run apply of %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return w.list()
}

func newClient(t *testing.T, rc *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// warningRecorder collects the Warning headers of a client's responses.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, fmt.Sprintf("%d %s", code, text))
}

func (w *warningRecorder) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}
