package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// ValidatePodPath is upstream's path of the pod validating webhook.
const ValidatePodPath = "/validate-pod"

// PodOperation is what a request the pod validating webhook sees does to a pod; the values are upstream's
// names of the operations a PodUnavailableBudget protects.
type PodOperation string

const (
	// PodUpdate is an update of the pod itself (not of a subresource).
	PodUpdate PodOperation = "UPDATE"
	// PodDelete is a deletion of the pod.
	PodDelete PodOperation = "DELETE"
	// PodEvict is the creation of an eviction of the pod.
	PodEvict PodOperation = "EVICT"
)

// PodDisruption is a request that may take a pod out of service: an update, a deletion or an eviction.
type PodDisruption struct {
	Operation PodOperation
	// Pod is the pod as stored before the request: the pod the request disrupts. For an eviction it is read
	// from the manager's cache, where the pod of a native workload is slim (workloads/podcache).
	Pod *corev1.Pod
	// Updated is the pod as an update would leave it; nil for deletions and evictions.
	Updated *corev1.Pod
	// DryRun: the request changes nothing, so a validation must not record anything either.
	DryRun bool
	// UserName is who sent the request.
	UserName string
}

// PodValidation decides about a pod disruption: nil admits it, an error refuses it. An error that carries an
// API status (apierrors.APIStatus, such as apierrors.NewTooManyRequests) is answered with that status, whose
// code the API server returns to the client: an eviction refused with 429 is retried by kubectl drain as one a
// PodDisruptionBudget refused. Any other error is answered 403 with its message.
type PodValidation func(ctx context.Context, d PodDisruption) error

// PodValidationChain gathers the modules' pod validations at wiring time, as PodChain gathers their
// mutations: upstream has one pod validating webhook for everything that guards pods, so every module that
// does is served on ValidatePodPath through one chain. Validations run in the order they were added; the
// first refusal answers the request. The zero value is an empty chain.
type PodValidationChain struct {
	validations []PodValidation
}

// Add appends v to the chain. Call it before RegisterPodValidationChain.
func (c *PodValidationChain) Add(v PodValidation) {
	c.validations = append(c.validations, v)
}

// RegisterPodValidationChain serves chain's validations on ValidatePodPath of srv, for updates and deletions
// of pods and creations of their evictions. An eviction names its pod only: pods reads it (the manager's
// cache). An empty chain is not served, so a manager whose modules guard no pod answers no pod validating
// webhook. scheme must know core/v1. Call it once, after the modules added their validations and before the
// server starts.
func RegisterPodValidationChain(srv webhook.Server, scheme *runtime.Scheme, pods client.Reader, chain *PodValidationChain) error {
	if srv == nil || scheme == nil || pods == nil || chain == nil {
		return errors.New("registering the pod validating webhook: server, scheme, pod reader and chain are required")
	}
	if len(chain.validations) == 0 {
		return nil
	}
	h := &podValidationHandler{decoder: admission.NewDecoder(scheme), pods: pods, validations: slices.Clone(chain.validations)}
	srv.Register(ValidatePodPath, &webhook.Admission{Handler: admission.HandlerFunc(h.validate)})
	return nil
}

// podValidationHandler answers the pod validating webhook with the first refusal of its chain.
type podValidationHandler struct {
	decoder     admission.Decoder
	pods        client.Reader
	validations []PodValidation
}

func (h *podValidationHandler) validate(ctx context.Context, req admission.Request) admission.Response {
	d, ok, err := h.disruption(ctx, req)
	var unread podReadError
	if errors.As(err, &unread) {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if !ok {
		return admission.Allowed("")
	}
	for _, v := range h.validations {
		if err := v(ctx, d); err != nil {
			return podRefusal(err)
		}
	}
	return admission.Allowed("")
}

// disruption reads what req does to which pod; ok is false for requests no validation looks at.
func (h *podValidationHandler) disruption(ctx context.Context, req admission.Request) (PodDisruption, bool, error) {
	d := PodDisruption{DryRun: req.DryRun != nil && *req.DryRun, UserName: req.UserInfo.Username}
	switch {
	case req.Operation == admissionv1.Update && req.SubResource == "":
		return h.update(req, d)
	case req.Operation == admissionv1.Delete && req.SubResource == "" && len(req.OldObject.Raw) > 0:
		d.Operation, d.Pod = PodDelete, &corev1.Pod{}
		if err := h.decoder.DecodeRaw(req.OldObject, d.Pod); err != nil {
			return d, false, fmt.Errorf("decoding the stored pod: %w", err)
		}
		return d, true, nil
	case req.Operation == admissionv1.Create && req.SubResource == "eviction":
		return h.eviction(ctx, req, d)
	}
	return d, false, nil
}

func (h *podValidationHandler) update(req admission.Request, d PodDisruption) (PodDisruption, bool, error) {
	d.Operation, d.Pod, d.Updated = PodUpdate, &corev1.Pod{}, &corev1.Pod{}
	if err := h.decoder.DecodeRaw(req.OldObject, d.Pod); err != nil {
		return d, false, fmt.Errorf("decoding the stored pod: %w", err)
	}
	if err := h.decoder.DecodeRaw(req.Object, d.Updated); err != nil {
		return d, false, fmt.Errorf("decoding the pod: %w", err)
	}
	return d, true, nil
}

// eviction reads the evicted pod. A pod the cache does not hold is let through: the eviction answers for it
// (404 if it is gone), and no budget counts a pod the controllers have not seen.
func (h *podValidationHandler) eviction(ctx context.Context, req admission.Request, d PodDisruption) (PodDisruption, bool, error) {
	var body struct {
		DeleteOptions *metav1.DeleteOptions `json:"deleteOptions"`
	}
	if err := json.Unmarshal(req.Object.Raw, &body); err != nil {
		return d, false, fmt.Errorf("decoding the eviction: %w", err)
	}
	if body.DeleteOptions != nil && slices.Contains(body.DeleteOptions.DryRun, metav1.DryRunAll) {
		d.DryRun = true
	}
	d.Operation, d.Pod = PodEvict, &corev1.Pod{}
	err := h.pods.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, d.Pod)
	if apierrors.IsNotFound(err) {
		return d, false, nil
	}
	if err != nil {
		return d, false, podReadError{fmt.Errorf("reading the evicted pod: %w", err)}
	}
	return d, true, nil
}

// podReadError is a failure to read the evicted pod: the server's fault, not the request's.
type podReadError struct{ error }

func (e podReadError) Unwrap() error { return e.error }

// podRefusal answers a refusal: with the error's API status when it has one, else 403.
func podRefusal(err error) admission.Response {
	var withStatus apierrors.APIStatus
	if errors.As(err, &withStatus) {
		status := withStatus.Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
	}
	return admission.Denied(err.Error())
}
