package imagepuller

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// attempt pulls the tag once (or finds it present under IfNotPresent) and reports the image as
// "<name>@<id>", as upstream does.
func (r *Reconciler) attempt(ctx context.Context, s Start) Result {
	ref := s.Key.Ref()
	if s.Tag.ImagePullPolicy != kruiseappsv1alpha1.PullAlways {
		if img, err := r.Images.ImageStatus(ctx, ref); err == nil && img.Present {
			return Result{ImageID: s.Key.Image + "@" + img.ID}
		}
	}
	auths, err := r.credentials(ctx, s.Key.Image, s.Image.PullSecrets)
	if err != nil {
		return Result{Err: err, Reason: ReasonAuth}
	}
	id, err := r.pull(ctx, ref, auths, s.Image.SandboxConfig)
	if err != nil {
		// The runtime's words for its caller's deadline ("context deadline exceeded") do not say which
		// deadline: say it is the tag's timeout, as the plan does when it times an attempt out itself.
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Result{Err: timedOut(s.Key, s.Timeout), Reason: ReasonTimeout}
		}
		return Result{Err: err, Reason: Classify(err)}
	}
	// The runtime's image ID is what the kubelet reports too; the pull's answer is the fallback.
	if img, err := r.Images.ImageStatus(ctx, ref); err == nil && img.Present {
		id = img.ID
	}
	return Result{ImageID: s.Key.Image + "@" + id}
}

// pull tries each matching credential in turn, and pulls anonymously only when no secret has one for the
// image: a wrong password should fail, not fall back.
func (r *Reconciler) pull(ctx context.Context, ref string, auths []cri.Auth, sandbox *kruiseappsv1alpha1.SandboxConfig) (string, error) {
	req := cri.PullRequest{Image: ref, SandboxAnnotations: map[string]string{}}
	if sandbox != nil {
		req.SandboxLabels = sandbox.Labels
		maps.Copy(req.SandboxAnnotations, sandbox.Annotations)
	}
	req.SandboxAnnotations[kruiseappsv1alpha1.PullingImageByAnnotation] = kruiseappsv1alpha1.PullingImageByKruiseDaemon
	if len(auths) == 0 {
		return r.Images.PullImage(ctx, req)
	}
	var errs []error
	for _, a := range auths {
		req.Auth = &a
		id, err := r.Images.PullImage(ctx, req)
		if err == nil {
			return id, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// credentials reads the pull secrets and picks those for image. A missing secret is skipped: the pull may
// not need it, and if it does the registry says so.
func (r *Reconciler) credentials(ctx context.Context, image string, refs []kruiseappsv1alpha1.ReferenceObject) ([]cri.Auth, error) {
	var secrets []corev1.Secret
	for _, ref := range refs {
		s := corev1.Secret{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &s)
		switch {
		case apierrors.IsNotFound(err):
			ctrl.LoggerFrom(ctx).Info("Pull secret not found", "secret", ref.Namespace+"/"+ref.Name, "image", image)
		case err != nil:
			return nil, fmt.Errorf("reading pull secret %s/%s: %w", ref.Namespace, ref.Name, err)
		default:
			secrets = append(secrets, s)
		}
	}
	return Credentials(image, secrets), nil
}
