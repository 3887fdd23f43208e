package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/test/cluster"
)

// WebhookConfigurationsFile is where the chart keeps Flotilla's admission webhook configurations.
const WebhookConfigurationsFile = "charts/flotilla/webhooks/webhook-configurations.yaml"

// InstallWebhookConfigurations creates (or replaces) the admission webhook configurations the way an
// installation does; the manager's certificate manager then points them at itself. The webhooks named in
// without are left out, as the chart leaves out those of the modules a manager does not run.
func InstallWebhookConfigurations(ctx context.Context, cfg *rest.Config, without ...string) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(root, WebhookConfigurationsFile))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	docs, err := splitYAML(raw)
	if err != nil {
		return err
	}
	var errs []error
	for _, doc := range docs {
		errs = append(errs, installWebhookDoc(ctx, cs, doc, without))
	}
	return errors.Join(errs...)
}

func splitYAML(raw []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufioReader(raw))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

func installWebhookDoc(ctx context.Context, cs kubernetes.Interface, doc []byte, without []string) error {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	api := cs.AdmissionregistrationV1()
	switch meta.Kind {
	case "MutatingWebhookConfiguration":
		obj := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return err
		}
		obj.Webhooks = slices.DeleteFunc(obj.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return slices.Contains(without, w.Name) })
		return replace(ctx, obj.Name, func() error { return api.MutatingWebhookConfigurations().Delete(ctx, obj.Name, metav1.DeleteOptions{}) },
			func() error {
				_, err := api.MutatingWebhookConfigurations().Create(ctx, obj, metav1.CreateOptions{})
				return err
			})
	case "ValidatingWebhookConfiguration":
		obj := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return err
		}
		obj.Webhooks = slices.DeleteFunc(obj.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return slices.Contains(without, w.Name) })
		return replace(ctx, obj.Name, func() error {
			return api.ValidatingWebhookConfigurations().Delete(ctx, obj.Name, metav1.DeleteOptions{})
		},
			func() error {
				_, err := api.ValidatingWebhookConfigurations().Create(ctx, obj, metav1.CreateOptions{})
				return err
			})
	default:
		return fmt.Errorf("%s: unexpected kind %q", WebhookConfigurationsFile, meta.Kind)
	}
}

// replace deletes then creates, so a run starts from the file's content.
func replace(_ context.Context, name string, del, create func() error) error {
	if err := del(); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", name, err)
	}
	if err := create(); err != nil {
		return fmt.Errorf("creating %s: %w", name, err)
	}
	return nil
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// SidecarSetPodWebhookOn tells whether the manager has switched msidecarset-pod.kb.io on for every pod (its
// sidecarsets-or-launch-priority condition true), which it does once it has seen a SidecarSet: a pod created
// before that is not injected.
func SidecarSetPodWebhookOn(ctx context.Context, cs kubernetes.Interface) (bool, error) {
	cfg, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "flotilla-mutating-webhook-configuration",
		metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	for _, w := range cfg.Webhooks {
		for _, c := range w.MatchConditions {
			if w.Name == "msidecarset-pod.kb.io" && c.Name == "sidecarsets-or-launch-priority" {
				return c.Expression == "true", nil
			}
		}
	}
	return false, nil
}

// SidecarSetInjects tells whether the API server now sends the pods of ns that carry labels through the
// SidecarSet pod webhook and gets sidecars back: a dry-run creation of such a pod returns with more than its
// one container. The API server reads webhook configurations through its own informer, so a pod created just
// after SidecarSetPodWebhookOn turns true may still go uninjected.
func SidecarSetInjects(ctx context.Context, cs kubernetes.Interface, ns string, labels map[string]string) (bool, error) {
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "injection-probe-", Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "injection-probe", Image: "injection-probe"}}},
	}
	out, err := cs.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return false, err
	}
	return len(out.Spec.Containers)+len(out.Spec.InitContainers) > 1, nil
}
