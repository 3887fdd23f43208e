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

	"github.com/flotilla-dev/flotilla/test/managertest"
)

// fieldOwner is the field manager of the test's applies.
const fieldOwner = client.FieldOwner("flotilla-chart-test")

// TestServerSideDryRun applies every object of every rendering with a server-side dry run, so the local
// apiserver validates them (schemas, defaulting, admission), in namespaces that warn about pods below the
// restricted Pod Security level: the manager's pod template must raise no warning, the node agent's only
// those its job needs (agentExemptions).
func TestServerSideDryRun(t *testing.T) {
	managertest.RequireCluster(t, cfg)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, c.rel)
			ensureRestrictedNamespace(t, c.rel.namespace)
			for _, obj := range r.objs {
				if ns := obj.GetNamespace(); ns != "" && ns != c.rel.namespace {
					// The configuration namespace a user names exists already.
					ensureRestrictedNamespace(t, ns)
				}
				warnings := dryRunApply(t, obj)
				if obj.GetKind() == "DaemonSet" {
					warnings = beyondAgentExemptions(warnings)
				}
				if len(warnings) > 0 {
					t.Errorf("%s %s: apiserver warnings %q", obj.GetKind(), obj.GetName(), warnings)
				}
			}
		})
	}
}

// agentExemptions are the restricted-level checks the node agent fails by design: it reaches the host's CRI
// socket (a hostPath volume, as root, the socket's owner) and the pods' preStop endpoints from the node
// (hostNetwork). docs/nodeagent.md says so.
var agentExemptions = []string{
	`host namespaces (hostNetwork=true)`,
	`restricted volume types (volume "host-var-run" uses restricted volume type "hostPath")`,
	`runAsNonRoot != true (pod or container "nodeagent" must set securityContext.runAsNonRoot=true)`,
	`runAsUser=0 (container "nodeagent" must not set runAsUser=0)`,
}

// beyondAgentExemptions drops from each Pod Security warning the checks the node agent is exempt from, and
// returns what is left.
func beyondAgentExemptions(warnings []string) []string {
	var out []string
	for _, w := range warnings {
		prefix, checks, ok := strings.Cut(w, `would violate PodSecurity "restricted:latest": `)
		if !ok {
			out = append(out, w)
			continue
		}
		for _, e := range agentExemptions {
			checks = strings.Replace(checks, e, "", 1)
		}
		if rest := strings.Trim(checks, ", "); rest != "" {
			out = append(out, prefix+rest)
		}
	}
	return out
}

// TestServerSideDryRunWarns shows that TestServerSideDryRun would notice a pod below the restricted level.
func TestServerSideDryRunWarns(t *testing.T) {
	managertest.RequireCluster(t, cfg)
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
