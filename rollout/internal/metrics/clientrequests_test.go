package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiStub answers every request with an empty object; the clients' decode
// errors do not matter here, only what was sent.
func apiStub(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestInstrumentClientCountsByVerbAndResource(t *testing.T) {
	srv := apiStub(t)
	cfg := &rest.Config{Host: srv.URL}
	reg := prometheus.NewRegistry()
	if err := InstrumentClient(cfg, reg); err != nil {
		t.Fatal(err)
	}
	// A copy made afterwards, as controller-runtime makes, counts too.
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("demo")
	_, _ = cms.Get(ctx, "a", metav1.GetOptions{})
	_, _ = cms.Get(ctx, "b", metav1.GetOptions{})
	_, _ = cms.List(ctx, metav1.ListOptions{})
	_, _ = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	_, _ = cms.Patch(ctx, "a", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	_ = cms.Delete(ctx, "a", metav1.DeleteOptions{})
	_, _ = cs.CoreV1().Pods("demo").UpdateStatus(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.UpdateOptions{})
	if w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{}); err == nil {
		w.Stop()
	}

	want := map[[2]string]float64{
		{"get", "configmaps"}: 2, {"list", "configmaps"}: 1, {"create", "configmaps"}: 1,
		{"patch", "configmaps"}: 1, {"delete", "configmaps"}: 1, {"update", "pods/status"}: 1,
		{"watch", "pods"}: 1,
	}
	got := gatherRequests(t, reg)
	for key, n := range want {
		if got[key] != n {
			t.Errorf("%s %s = %v, want %v", key[0], key[1], got[key], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series = %v, want exactly %v", got, want)
	}
}

func TestInstrumentClientRegistersOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := InstrumentClient(&rest.Config{}, reg); err != nil {
		t.Fatal(err)
	}
	if err := InstrumentClient(&rest.Config{}, reg); err == nil {
		t.Fatal("want an error when the counter is already registered")
	}
}

func gatherRequests(t *testing.T, reg *prometheus.Registry) map[[2]string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]string]float64{}
	for _, f := range families {
		if f.GetName() != ClientRequestsName {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[[2]string{labels["verb"], labels["resource"]}] = m.GetCounter().GetValue()
		}
	}
	return out
}
