package cluster

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
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// InstallCRDs creates or updates every CustomResourceDefinition found in
// the YAML/JSON files of dirs (multi-document files allowed, other kinds
// skipped, missing directories ignored) and waits until each is
// Established.
func InstallCRDs(ctx context.Context, cfg *rest.Config, dirs ...string) error {
	crds, err := ReadCRDs(dirs...)
	if err != nil || len(crds) == 0 {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("apiextensions client: %w", err)
	}
	crdClient := client.ApiextensionsV1().CustomResourceDefinitions()
	// Large schemas make each call slow; in parallel they overlap.
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(crdParallelism)
	for _, crd := range crds {
		g.Go(func() error {
			if err := applyCRD(ctx, crdClient, crd); err != nil {
				return err
			}
			return waitEstablished(ctx, crdClient, crd.Name)
		})
	}
	return g.Wait()
}

// crdParallelism bounds concurrent CRD writes.
const crdParallelism = 8

// ReadCRDs decodes the CRDs in the *.yaml, *.yml and *.json files of dirs.
func ReadCRDs(dirs ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		files, err := manifestFiles(dir)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			found, err := readCRDFile(file)
			if err != nil {
				return nil, err
			}
			crds = append(crds, found...)
		}
	}
	return crds, nil
}

func manifestFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read CRD dir: %w", err)
	}
	var files []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if !e.IsDir() && slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, nil
}

func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var crds []*apiextensionsv1.CustomResourceDefinition
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return crds, nil
		}
		if err != nil {
			return nil, fmt.Errorf("split %s: %w", path, err)
		}
		crd, err := decodeCRD(doc)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if crd != nil {
			crds = append(crds, crd)
		}
	}
}

// decodeCRD returns nil for empty documents and other kinds.
func decodeCRD(doc []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	if meta.Kind != "CustomResourceDefinition" {
		return nil, nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(doc, crd); err != nil {
		return nil, err
	}
	return crd, nil
}

type crdInterface interface {
	Create(context.Context, *apiextensionsv1.CustomResourceDefinition, metav1.CreateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Update(context.Context, *apiextensionsv1.CustomResourceDefinition, metav1.UpdateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Get(context.Context, string, metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}

// applyCRD creates crd, or replaces the spec of an existing one.
func applyCRD(ctx context.Context, client crdInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	_, err := client.Create(ctx, crd.DeepCopy(), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
		return nil
	}
	existing, err := client.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get CRD %s: %w", crd.Name, err)
	}
	existing.Spec = crd.Spec
	existing.Labels, existing.Annotations = crd.Labels, crd.Annotations
	if _, err := client.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update CRD %s: %w", crd.Name, err)
	}
	return nil
}

func waitEstablished(ctx context.Context, client crdInterface, name string) error {
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // transient; retried until ctx ends
		}
		return crdCondition(crd, apiextensionsv1.Established), nil
	})
	if err != nil {
		return fmt.Errorf("wait for CRD %s to be Established: %w", name, err)
	}
	return nil
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
