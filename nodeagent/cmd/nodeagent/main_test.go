package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/cri/critest"
)

// downRuntime is a runtime that does not answer.
type downRuntime struct{ cri.Runtime }

func (downRuntime) Version(context.Context) (cri.Version, error) {
	return cri.Version{}, errors.New("connection refused")
}

func TestHealthzFollowsTheRuntime(t *testing.T) {
	up, err := cri.Dial(t.Context(), critest.Start(t).Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	for _, tc := range []struct {
		name string
		rt   cri.Runtime
		want int
	}{{"runtime answers", up, http.StatusOK}, {"runtime down", downRuntime{}, http.StatusInternalServerError}} {
		for _, path := range []string{"/healthz", "/healthz/cri"} {
			rec := httptest.NewRecorder()
			healthzHandler(tc.rt).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != tc.want {
				t.Errorf("%s: %s = %d, want %d", tc.name, path, rec.Code, tc.want)
			}
		}
	}
}
