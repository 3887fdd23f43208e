package webhooks

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/webhooks/webhooktest"
)

const (
	storedPod  = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"ns","labels":{"v":"1"}},"spec":{"containers":[{"name":"app","image":"app:v1"}]}}`
	updatedPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"ns","labels":{"v":"2"}},"spec":{"containers":[{"name":"app","image":"app:v2"}]}}`
)

// seen is a validation that records what it was given and answers err.
type seen struct {
	got []PodDisruption
	err error
}

func (s *seen) validate(_ context.Context, d PodDisruption) error {
	s.got = append(s.got, d)
	return s.err
}

// summary is what a test compares of a disruption: the operation, the pods' labels v and the flags.
type summary struct {
	Op            PodOperation
	Pod, Updated  string
	DryRun        bool
	UserName      string
	HasUpdatedPod bool
}

func summarize(d PodDisruption) summary {
	s := summary{Op: d.Operation, DryRun: d.DryRun, UserName: d.UserName, HasUpdatedPod: d.Updated != nil}
	if d.Pod != nil {
		s.Pod = d.Pod.Labels["v"]
	}
	if d.Updated != nil {
		s.Updated = d.Updated.Labels["v"]
	}
	return s
}

func servedValidations(t *testing.T, pods client.Reader, validations ...PodValidation) *webhooktest.Server {
	t.Helper()
	chain := &PodValidationChain{}
	for _, v := range validations {
		chain.Add(v)
	}
	srv := webhooktest.NewServer()
	if err := RegisterPodValidationChain(srv, podChainScheme(t), pods, chain); err != nil {
		t.Fatal(err)
	}
	return srv
}

// podReader is a cache holding web-0, the pod an eviction names.
func podReader(t *testing.T) client.Reader {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", Labels: map[string]string{"v": "cached"}}}
	return fake.NewClientBuilder().WithScheme(podChainScheme(t)).WithObjects(pod).Build()
}

func podRequest(op admissionv1.Operation, sub, name, object, old string) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req", Operation: op, Namespace: "ns", Name: name, SubResource: sub,
		Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		UserInfo: authenticationv1.UserInfo{Username: "alice"},
		Object:   runtime.RawExtension{Raw: []byte(object)}, OldObject: runtime.RawExtension{Raw: []byte(old)},
	}}
	return req
}

func dryRun(req admission.Request) admission.Request {
	req.DryRun = ptr.To(true)
	return req
}

func TestPodValidationChainReadsTheDisruption(t *testing.T) {
	cases := []struct {
		name string
		req  admission.Request
		want []summary // nil: no validation runs
	}{
		{name: "an update sees the stored and the updated pod", req: podRequest(admissionv1.Update, "", "web-0", updatedPod, storedPod),
			want: []summary{{Op: PodUpdate, Pod: "1", Updated: "2", UserName: "alice", HasUpdatedPod: true}}},
		{name: "a deletion sees the stored pod", req: dryRun(podRequest(admissionv1.Delete, "", "web-0", "", storedPod)),
			want: []summary{{Op: PodDelete, Pod: "1", DryRun: true, UserName: "alice"}}},
		{name: "an eviction sees the cached pod", req: podRequest(admissionv1.Create, "eviction", "web-0",
			`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0","namespace":"ns"}}`, ""),
			want: []summary{{Op: PodEvict, Pod: "cached", UserName: "alice"}}},
		{name: "an eviction's own dry run counts", req: podRequest(admissionv1.Create, "eviction", "web-0",
			`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0"},"deleteOptions":{"dryRun":["All"]}}`, ""),
			want: []summary{{Op: PodEvict, Pod: "cached", DryRun: true, UserName: "alice"}}},
		{name: "the eviction of a pod the cache does not hold passes", req: podRequest(admissionv1.Create, "eviction", "gone",
			`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"gone"}}`, "")},
		{name: "pod creations pass", req: podRequest(admissionv1.Create, "", "web-0", storedPod, "")},
		{name: "status updates pass", req: podRequest(admissionv1.Update, "status", "web-0", updatedPod, storedPod)},
		{name: "deletions without the stored pod pass", req: podRequest(admissionv1.Delete, "", "web-0", "", "")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &seen{}
			resp := servedValidations(t, podReader(t), s.validate).Admission(t, ValidatePodPath).Handle(context.Background(), tc.req)
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			var got []summary
			for _, d := range s.got {
				got = append(got, summarize(d))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("disruptions seen (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodValidationChainRefusals(t *testing.T) {
	tooMany := apierrors.NewTooManyRequests("the budget allows no more disruptions", 0)
	eviction := podRequest(admissionv1.Create, "eviction", "web-0", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-0"}}`, "")
	failing := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errors.New("cache not started")
	}}
	cases := []struct {
		name      string
		errs      []error
		pods      client.Reader
		req       admission.Request
		wantCode  int32
		wantCalls []int // how often each validation ran
	}{
		{name: "an API status reaches the client", errs: []error{tooMany, nil}, req: eviction,
			wantCode: http.StatusTooManyRequests, wantCalls: []int{1, 0}},
		{name: "any other error is a 403", errs: []error{nil, errors.New("held by the budget")},
			req: podRequest(admissionv1.Delete, "", "web-0", "", storedPod), wantCode: http.StatusForbidden, wantCalls: []int{1, 1}},
		{name: "a malformed pod is a 400", errs: []error{nil}, req: podRequest(admissionv1.Delete, "", "web-0", "", `{"spec":`),
			wantCode: http.StatusBadRequest, wantCalls: []int{0}},
		{name: "a cache that cannot read is a 500", errs: []error{nil}, req: eviction,
			pods:     fake.NewClientBuilder().WithScheme(podChainScheme(t)).WithInterceptorFuncs(failing).Build(),
			wantCode: http.StatusInternalServerError, wantCalls: []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			validations, seens := []PodValidation{}, []*seen{}
			for _, err := range tc.errs {
				s := &seen{err: err}
				seens, validations = append(seens, s), append(validations, s.validate)
			}
			pods := tc.pods
			if pods == nil {
				pods = podReader(t)
			}
			resp := servedValidations(t, pods, validations...).Admission(t, ValidatePodPath).Handle(context.Background(), tc.req)
			if resp.Allowed || resp.Result == nil || resp.Result.Code != tc.wantCode {
				t.Fatalf("allowed %v, result %+v; want code %d", resp.Allowed, resp.Result, tc.wantCode)
			}
			for i, s := range seens {
				if len(s.got) != tc.wantCalls[i] {
					t.Errorf("validation %d ran %d times, want %d", i, len(s.got), tc.wantCalls[i])
				}
			}
		})
	}
}

// The 429 keeps its reason, which is what kubectl drain and the eviction clients test.
func TestPodValidationRefusalKeepsTheReason(t *testing.T) {
	resp := podRefusal(apierrors.NewTooManyRequests("no budget", 0))
	if resp.Result.Reason != metav1.StatusReasonTooManyRequests || resp.Result.Message != "no budget" {
		t.Errorf("result %+v", resp.Result)
	}
}

func TestEmptyPodValidationChainIsNotServed(t *testing.T) {
	if paths := servedValidations(t, podReader(t)).Paths(); len(paths) != 0 {
		t.Errorf("served %v", paths)
	}
}

func TestRegisterPodValidationChainNeedsItsInputs(t *testing.T) {
	scheme, pods := runtime.NewScheme(), podReader(t)
	for name, err := range map[string]error{
		"server": RegisterPodValidationChain(nil, scheme, pods, &PodValidationChain{}),
		"scheme": RegisterPodValidationChain(webhooktest.NewServer(), nil, pods, &PodValidationChain{}),
		"reader": RegisterPodValidationChain(webhooktest.NewServer(), scheme, nil, &PodValidationChain{}),
		"chain":  RegisterPodValidationChain(webhooktest.NewServer(), scheme, pods, nil),
	} {
		if err == nil {
			t.Errorf("no error without a %s", name)
		}
	}
}

// TestPodValidatingWebhookConfiguration checks the chart's two entries of the pod validating webhook: the
// served path, the operations upstream's have, failing closed, side effects only outside dry runs, and
// upstream's namespace exclusions; the pod entry only for pods a budget protects.
func TestPodValidatingWebhookConfiguration(t *testing.T) {
	_, validating := webhooktest.Configurations(t)
	pods := admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}
	evictions := admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}}
	want := map[string][]admissionregistrationv1.RuleWithOperations{
		"vpod.kb.io":         {{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Delete}, Rule: pods}},
		"vpodeviction.kb.io": {{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: evictions}},
	}
	for _, w := range validating.Webhooks {
		rules, ok := want[w.Name]
		if !ok {
			continue
		}
		delete(want, w.Name)
		webhooktest.CheckFailsClosed(t, w.Name, w.ClientConfig, ValidatePodPath, w.Rules, rules, w.FailurePolicy, w.ObjectSelector)
		if w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun {
			t.Errorf("%s sideEffects %v: an admitted disruption is recorded, except in a dry run", w.Name, w.SideEffects)
		}
		checkPodNamespaces(t, w.Name, w.NamespaceSelector)
		if conditions := len(w.MatchConditions); (w.Name == "vpod.kb.io") != (conditions > 0) {
			t.Errorf("%s has %d matchConditions", w.Name, conditions)
		}
	}
	if len(want) > 0 {
		t.Errorf("the chart lacks %v", want)
	}
}

func checkPodNamespaces(t *testing.T, name string, namespaces *metav1.LabelSelector) {
	t.Helper()
	selector, err := metav1.LabelSelectorAsSelector(namespaces)
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]bool{"apps": true, "kube-system": false, "control-plane": false} {
		nsLabels := labels.Set{"kubernetes.io/metadata.name": ns}
		if ns == "control-plane" {
			nsLabels["control-plane"] = "flotilla-manager"
		}
		if got := selector.Matches(nsLabels); got != want {
			t.Errorf("%s: namespace %s selected = %v, want %v", name, ns, got, want)
		}
	}
}
