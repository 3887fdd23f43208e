package e2e

import (
	"context"
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Manager observability", func() {
	It("counts its own API requests by verb and resource on the metrics endpoint", func(ctx SpecContext) {
		body := scrape(ctx, "http://"+manager.MetricsAddr+"/metrics")
		// The certificate manager reads its Secret and the CRDs it converts, by name, at start-up; it never
		// lists the cluster's CRDs.
		Expect(body).To(MatchRegexp(`flotilla_client_requests_total\{resource="customresourcedefinitions",verb="get"\} [1-9]`))
		Expect(body).NotTo(MatchRegexp(`flotilla_client_requests_total\{resource="customresourcedefinitions",verb="list"\}`))
		Expect(body).To(MatchRegexp(`flotilla_client_requests_total\{resource="secrets",verb="(get|create)"\} [1-9]`))
	})

	It("reports ready only with its webhook certificates in place", func(ctx SpecContext) {
		body := scrape(ctx, "http://"+manager.ProbeAddr+"/readyz?verbose")
		Expect(body).To(ContainSubstring("[+]webhook-certs ok"))
	})
})

func scrape(ctx context.Context, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close() // read-only body
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}
