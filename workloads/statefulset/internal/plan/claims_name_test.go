package plan

import "testing"

func TestClaimName(t *testing.T) {
	if got := ClaimName("data", "web", 7); got != "data-web-7" {
		t.Errorf("claim name %s", got)
	}
}
