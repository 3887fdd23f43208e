package persistentpodstate

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
	ppsadmission "github.com/flotilla-dev/flotilla/workloads/persistentpodstate/admission"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate/internal/controller"
	"github.com/flotilla-dev/flotilla/workloads/persistentpodstate/internal/plan"
)

// ValidatePersistentPodStatePath is the path of the PersistentPodState validating webhook (upstream's, of the
// v1alpha1-only releases); the chart's entry is vpersistentpodstate.kb.io, as upstream's.
const ValidatePersistentPodStatePath = "/validate-apps-kruise-io-v1alpha1-persistentpodstate"

// RegisterWebhooks serves the validating webhook on srv and adds the module's mutation to the pod webhook.
// reader is the manager's cached client, with controller.TargetIndex registered (the webhooks read the
// namespace's PersistentPodStates through it); scheme must know the apps.kruise.io v1alpha1 kinds. Call it
// once, before the server starts.
func RegisterWebhooks(srv webhook.Server, reader client.Reader, scheme *runtime.Scheme, pods *webhooks.PodChain) error {
	if srv == nil || reader == nil || scheme == nil || pods == nil {
		return errors.New("registering the PersistentPodState webhooks: server, reader, scheme and pod chain are required")
	}
	webhooks.Serve(srv, map[string]admission.Handler{ValidatePersistentPodStatePath: validating(reader, admission.NewDecoder(scheme))})
	pods.Add((&injector{reader: reader}).mutate)
	return nil
}

// validating refuses a PersistentPodState that breaks upstream's rules, naming every faulty field.
func validating(reader client.Reader, decoder admission.Decoder) admission.Handler {
	return webhooks.ValidatingWithPeers(decoder, reader, "PersistentPodState",
		func(cur, old *kruiseappsv1alpha1.PersistentPodState, peers *kruiseappsv1alpha1.PersistentPodStateList) (field.ErrorList, []string) {
			return ppsadmission.Validate(cur, old, peers.Items), nil
		})
}

// injector is the module's part of the pod webhook: a pod a StatefulSet creates again under a name its
// PersistentPodState recorded gets that record's node affinity (plan.Inject). StatefulSet controllers set the
// pod's namespace and name, which it reads.
type injector struct {
	reader client.Reader
}

func (i *injector) mutate(ctx context.Context, pod *corev1.Pod) (bool, error) {
	ref := metav1.GetControllerOf(pod)
	if !controller.IsStatefulSetRef(ref) || pod.Name == "" {
		return false, nil
	}
	pps, err := controller.Find(ctx, i.reader, pod.Namespace, ref.APIVersion, ref.Name)
	if err != nil || pps == nil {
		return false, err
	}
	changed := plan.Inject(pod, pps)
	if changed {
		logf.FromContext(ctx).V(1).Info("Injected the recorded node affinity", "pod", klog.KObj(pod), "persistentPodState", pps.Name)
	}
	return changed, nil
}
