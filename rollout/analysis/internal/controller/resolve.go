package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	analysisv1alpha1 "github.com/flotilla-dev/flotilla/rollout/analysis/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/rollout/analysis/internal/plan"
)

// resolve is what a run measures now: its templates' metrics and its own, with every argument substituted.
func (r *Reconciler) resolve(ctx context.Context, run *analysisv1alpha1.AnalysisRun) ([]analysisv1alpha1.Metric, error) {
	templates, err := r.templates(ctx, run)
	if err != nil {
		return nil, err
	}
	resolved, err := plan.Resolve(&run.Spec, templates)
	if err != nil {
		return nil, unresolvablef("%v", err)
	}
	values, err := r.argValues(ctx, run.Namespace, resolved.Args)
	if err != nil {
		return nil, err
	}
	for i := range resolved.Metrics {
		m := &resolved.Metrics[i]
		if m.Provider, err = plan.Substitute(m.Provider, values); err != nil {
			return nil, unresolvablef("metric %q: %v", m.Name, err)
		}
	}
	return resolved.Metrics, nil
}

// templates reads the templates a run names. A template missing from the cache is looked up on the API server
// before the run is given up: a run created right after its template may reach the controller first.
func (r *Reconciler) templates(ctx context.Context, run *analysisv1alpha1.AnalysisRun) ([]plan.Template, error) {
	out := make([]plan.Template, 0, len(run.Spec.Templates))
	for _, ref := range run.Spec.Templates {
		t := plan.Template{Ref: ref}
		var obj client.Object = &analysisv1alpha1.AnalysisTemplate{}
		key := client.ObjectKey{Namespace: run.Namespace, Name: ref.Name}
		if ref.ClusterScope {
			obj, key.Namespace = &analysisv1alpha1.ClusterAnalysisTemplate{}, ""
		}
		err := r.Client.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			err = r.APIReader.Get(ctx, key, obj)
		}
		if apierrors.IsNotFound(err) {
			return nil, unresolvablef("%s not found", t)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", t, err)
		}
		switch o := obj.(type) {
		case *analysisv1alpha1.AnalysisTemplate:
			t.Spec = o.Spec
		case *analysisv1alpha1.ClusterAnalysisTemplate:
			t.Spec = o.Spec
		}
		out = append(out, t)
	}
	return out, nil
}

// argValues reads every argument's value: its own, or its Secret key's.
func (r *Reconciler) argValues(ctx context.Context, ns string, args []analysisv1alpha1.Argument) (map[string]string, error) {
	values := make(map[string]string, len(args))
	for _, a := range args {
		switch {
		case a.Value != nil:
			values[a.Name] = *a.Value
		case a.ValueFrom != nil && a.ValueFrom.SecretKeyRef != nil:
			v, err := r.secret(ctx, ns, a.ValueFrom.SecretKeyRef)
			if err != nil {
				return nil, fmt.Errorf("argument %q: %w", a.Name, err)
			}
			values[a.Name] = string(v)
		}
	}
	return values, nil
}

// secret reads a key of a Secret from the API server. A Secret or key that does not exist makes the run
// unresolvable, unless the reference is optional (then the value is empty).
func (r *Reconciler) secret(ctx context.Context, ns string, ref *corev1.SecretKeySelector) ([]byte, error) {
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, s)
	optional := ref.Optional != nil && *ref.Optional
	switch {
	case apierrors.IsNotFound(err) && optional:
		return nil, nil
	case apierrors.IsNotFound(err):
		return nil, unresolvablef("Secret %s/%s not found", ns, ref.Name)
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, ref.Name, err)
	}
	v, ok := s.Data[ref.Key]
	if !ok && !optional {
		return nil, unresolvablef("Secret %s/%s has no key %s", ns, ref.Name, ref.Key)
	}
	return v, nil
}
