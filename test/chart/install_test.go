package chart

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/test/managertest"
)

// fakeCABundle stands for the CA bundle the manager injects.
var fakeCABundle = []byte("-----BEGIN CERTIFICATE-----\nflotilla-chart-test\n-----END CERTIFICATE-----\n")

// TestInstallUpgradeUninstall runs Helm itself against the control plane: install beside CRDs that already
// exist (Helm skips them), an upgrade to engineOnly that drops the CloneSet module's webhooks but keeps the CA
// bundle the manager injected into the others, and an uninstall that removes the webhook configurations and
// leaves the CRDs. No manager runs: the cluster has no kubelet.
func TestInstallUpgradeUninstall(t *testing.T) {
	managertest.RequireCluster(t, cfg)
	kubeconfig := adminKubeconfig(t)
	helmAt := func(args ...string) {
		t.Helper()
		if _, err := runHelm(t, append([]string{"--kubeconfig", kubeconfig}, args...)...); err != nil {
			t.Fatal(err)
		}
	}
	const ns = "flotilla-helm"
	helmAt("install", "flotilla", chartDir, "--namespace", ns, "--create-namespace")
	t.Cleanup(func() { _, _ = runHelm(t, "--kubeconfig", kubeconfig, "uninstall", "flotilla", "--namespace", ns) })
	c := newClient(t, cfg)
	injectCABundle(t, c)
	helmAt("upgrade", "flotilla", chartDir, "--namespace", ns, "--set", "engineOnly=true")
	checkUpgradedWebhooks(t, c)
	helmAt("uninstall", "flotilla", "--namespace", ns)
	checkUninstalled(t, c)
}

// injectCABundle sets every webhook's caBundle as the manager's certificate manager would, with a patch.
func injectCABundle(t *testing.T, c client.Client) {
	t.Helper()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	getObject(t, c, mutatingConfigName, cfg)
	patch := client.MergeFrom(cfg.DeepCopy())
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig.CABundle = fakeCABundle
	}
	if err := c.Patch(context.Background(), cfg, patch); err != nil {
		t.Fatal(err)
	}
}

// checkUpgradedWebhooks checks that the upgrade removed the CloneSet module's webhooks and kept the
// injected CA bundle of the others.
func checkUpgradedWebhooks(t *testing.T, c client.Client) {
	t.Helper()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	getObject(t, c, mutatingConfigName, cfg)
	var names []string
	for _, w := range cfg.Webhooks {
		names = append(names, w.Name)
		if w.ClientConfig.Service != nil && !engineOnlyPaths(w.Name, ptrValue(w.ClientConfig.Service.Path)) {
			t.Errorf("engineOnly upgrade kept the webhook %s of a workload module", w.Name)
		}
		if string(w.ClientConfig.CABundle) != string(fakeCABundle) {
			t.Errorf("upgrade reset the caBundle of %s to %q", w.Name, base64.StdEncoding.EncodeToString(w.ClientConfig.CABundle))
		}
	}
	if len(names) == 0 {
		t.Error("upgrade left no mutating webhook")
	}
}

func checkUninstalled(t *testing.T, c client.Client) {
	t.Helper()
	for _, obj := range []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfiguration{},
	} {
		name := mutatingConfigName
		if _, ok := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration); ok {
			name = validatingConfigName
		}
		if err := c.Get(context.Background(), types.NamespacedName{Name: name}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%s after uninstall: %v, want NotFound", name, err)
		}
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	getObject(t, c, "rollouts.rollouts.kruise.io", crd)
}

func getObject(t *testing.T, c client.Client, name string, obj client.Object) {
	t.Helper()
	if err := c.Get(context.Background(), types.NamespacedName{Name: name}, obj); err != nil {
		t.Fatal(fmt.Errorf("reading %T %s: %w", obj, name, err))
	}
}

// adminKubeconfig writes a kubeconfig with the test's admin credentials.
func adminKubeconfig(t *testing.T) string {
	t.Helper()
	return writeKubeconfig(t, "admin", &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData})
}

// writeKubeconfig writes a kubeconfig for the control plane with the given credentials.
func writeKubeconfig(t *testing.T, name string, user *clientcmdapi.AuthInfo) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = user
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
