package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/rollout/internal/plan"
	"github.com/flotilla-dev/flotilla/trafficrouting"
)

// prepareServices makes the canary Service select the new revision and the stable Service only the stable
// one. With disableGenerateCanaryService both are the stable Service, which is left alone.
func (n *network) prepareServices(ctx context.Context, t plan.TrafficTask) (bool, error) {
	if !n.generate {
		return true, nil
	}
	stable, err := n.stableService(ctx)
	if err != nil {
		return false, err
	}
	canaryDone, err := n.ensureCanaryService(ctx, stable, t.CanaryRevision)
	if err != nil {
		return false, err
	}
	stableDone, err := n.setStableSelector(ctx, stable, t.StableRevision)
	return canaryDone && stableDone, err
}

func (n *network) stableService(ctx context.Context) (*corev1.Service, error) {
	svc := &corev1.Service{}
	err := n.c.Get(ctx, client.ObjectKey{Namespace: n.cfg.Namespace, Name: n.cfg.StableService}, svc)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("stable Service %s/%s (trafficRoutings[0].service) not found", n.cfg.Namespace, n.cfg.StableService)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Service %s/%s: %w", n.cfg.Namespace, n.cfg.StableService, err)
	}
	return svc, nil
}

// ensureCanaryService creates the canary Service from the stable one, or points its selector at revision.
func (n *network) ensureCanaryService(ctx context.Context, stable *corev1.Service, revision string) (bool, error) {
	want := n.canarySelector(stable.Spec.Selector, revision)
	svc := &corev1.Service{}
	err := n.c.Get(ctx, client.ObjectKey{Namespace: n.cfg.Namespace, Name: n.cfg.CanaryService}, svc)
	if apierrors.IsNotFound(err) {
		if err := n.c.Create(ctx, n.newCanaryService(stable, want)); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("creating canary Service %s/%s: %w", n.cfg.Namespace, n.cfg.CanaryService, err)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading Service %s/%s: %w", n.cfg.Namespace, n.cfg.CanaryService, err)
	}
	if maps.Equal(svc.Spec.Selector, want) {
		return true, nil
	}
	return false, patchService(ctx, n.c, svc, map[string]any{"spec": map[string]any{"selector": trafficrouting.ReplaceMapPatch(svc.Spec.Selector, want)}})
}

// canarySelector is the stable selector narrowed to the new revision; patchPodTemplateMetadata labels replace
// selector keys they share, and are appended with the AppendPodSelector gate.
func (n *network) canarySelector(stable map[string]string, revision string) map[string]string {
	sel := maps.Clone(stable)
	if sel == nil {
		sel = map[string]string{}
	}
	for k, v := range n.podLabels {
		if _, ok := sel[k]; ok || n.appendLabels {
			sel[k] = v
		}
	}
	sel[n.revisionKey] = revision
	return sel
}

// newCanaryService copies the stable Service without anything the apiserver allocates, so it gets its own.
func (n *network) newCanaryService(stable *corev1.Service, selector map[string]string) *corev1.Service {
	svc := &corev1.Service{}
	svc.Name, svc.Namespace = n.cfg.CanaryService, n.cfg.Namespace
	svc.Labels, svc.Annotations = maps.Clone(stable.Labels), maps.Clone(stable.Annotations)
	svc.OwnerReferences = append(svc.OwnerReferences, n.cfg.Owner)
	svc.Spec = *stable.Spec.DeepCopy()
	svc.Spec.Selector = selector
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.ExternalIPs = "", nil, nil
	svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy, svc.Spec.LoadBalancerIP = nil, nil, ""
	svc.Spec.HealthCheckNodePort = 0
	for i := range svc.Spec.Ports {
		svc.Spec.Ports[i].NodePort = 0
	}
	return svc
}

// setStableSelector pins the stable Service to revision ("" removes the pin).
func (n *network) setStableSelector(ctx context.Context, stable *corev1.Service, revision string) (bool, error) {
	current, pinned := stable.Spec.Selector[n.revisionKey]
	if (revision == "" && !pinned) || (revision != "" && current == revision) {
		return true, nil
	}
	var value any = revision
	if revision == "" {
		value = nil
	}
	patch := map[string]any{"spec": map[string]any{"selector": map[string]any{n.revisionKey: value}}}
	return false, patchService(ctx, n.c, stable, patch)
}

// restoreStable removes the revision pin from the stable Service.
func (n *network) restoreStable(ctx context.Context) (bool, error) {
	if !n.generate {
		return true, nil
	}
	stable, err := n.stableService(ctx)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return n.setStableSelector(ctx, stable, "")
}

// removeCanaryService deletes the canary Service this Rollout created.
func (n *network) removeCanaryService(ctx context.Context) (bool, error) {
	if !n.generate {
		return true, nil
	}
	svc := &corev1.Service{}
	err := n.c.Get(ctx, client.ObjectKey{Namespace: n.cfg.Namespace, Name: n.cfg.CanaryService}, svc)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading Service %s/%s: %w", n.cfg.Namespace, n.cfg.CanaryService, err)
	}
	if !trafficrouting.OwnedBy(svc, n.cfg.Owner) {
		return true, nil
	}
	if err := n.c.Delete(ctx, svc); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("deleting canary Service %s/%s: %w", n.cfg.Namespace, n.cfg.CanaryService, err)
	}
	return false, nil
}

func patchService(ctx context.Context, c client.Client, svc *corev1.Service, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, svc, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("patching Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}
