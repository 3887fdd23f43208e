package matchconditions

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// resync re-checks the conditions now and then: a chart upgrade puts the file's values back.
const resync = time.Minute

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;patch

// Watched is a kind a Switch watches: an object and its list, as templates the Switch never writes.
type Watched struct {
	Kind client.Object
	List client.ObjectList
}

// Switch keeps the conditions of the MutatingWebhookConfiguration named Configuration at Conditions(exists),
// exists[i] being whether the cache holds any object of Kinds[i].
type Switch struct {
	// Name names the controller and its logs.
	Name string
	// Kinds are the watched kinds.
	Kinds []Watched
	// Configuration names the MutatingWebhookConfiguration.
	Configuration string
	// Conditions are the expressions wanted, given which kinds have objects.
	Conditions func(exists []bool) map[Key]string
	// Client lists the kinds from the cache and patches; Reader reads the webhook configuration, which the
	// manager does not cache. Both default to the manager's.
	Client client.Client
	Reader client.Reader

	kinds []string
}

// SetupWithManager runs the Switch when an object of a watched kind comes or goes, at start and every
// resync. Updates are left out: every status write is one, and only existence counts here.
func (s *Switch) SetupWithManager(mgr ctrl.Manager) error {
	if len(s.Kinds) == 0 {
		return fmt.Errorf("%s watches no kind", s.Name)
	}
	s.defaults(mgr)
	start := make(chan event.GenericEvent, 1)
	if err := mgr.Add(manager.RunnableFunc(func(context.Context) error {
		start <- event.GenericEvent{Object: s.Kinds[0].Kind}
		return nil
	})); err != nil {
		return err
	}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: s.Configuration}}}
	})
	b := ctrl.NewControllerManagedBy(mgr).Named(s.Name).WatchesRawSource(source.Channel(start, one))
	for _, w := range s.Kinds {
		gvk, err := apiutil.GVKForObject(w.Kind, mgr.GetScheme())
		if err != nil {
			return fmt.Errorf("a kind %s watches: %w", s.Name, err)
		}
		s.kinds = append(s.kinds, gvk.Kind)
		b = b.Watches(w.Kind, one, builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}))
	}
	return b.Complete(s)
}

func (s *Switch) defaults(mgr ctrl.Manager) {
	if s.Client == nil {
		s.Client = mgr.GetClient()
	}
	if s.Reader == nil {
		s.Reader = mgr.GetAPIReader()
	}
}

// Reconcile patches the conditions that differ from Conditions(exists).
func (s *Switch) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	exists := make([]bool, len(s.Kinds))
	for i := range s.Kinds {
		var err error
		if exists[i], err = s.exists(ctx, i); err != nil {
			return ctrl.Result{}, err
		}
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := s.Reader.Get(ctx, client.ObjectKey{Name: s.Configuration}, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	patch, ok := Patch(cfg, s.Conditions(exists))
	if !ok {
		return ctrl.Result{RequeueAfter: resync}, nil
	}
	if err := s.Client.Patch(ctx, cfg, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return ctrl.Result{}, fmt.Errorf("setting the match conditions of %s (%v exist: %v): %w", s.Configuration, s.kinds, exists, err)
	}
	ctrl.LoggerFrom(ctx).Info("Switched webhook match conditions", "kinds", s.kinds, "exist", exists)
	return ctrl.Result{RequeueAfter: resync}, nil
}

// exists tells whether the cache holds an object of Kinds[i].
func (s *Switch) exists(ctx context.Context, i int) (bool, error) {
	list, ok := s.Kinds[i].List.DeepCopyObject().(client.ObjectList)
	if !ok {
		return false, errors.New("the list template does not copy to a list")
	}
	if err := s.Client.List(ctx, list, client.Limit(1)); err != nil {
		return false, fmt.Errorf("listing %s: %w", s.kinds[i], err)
	}
	return meta.LenList(list) > 0, nil
}
