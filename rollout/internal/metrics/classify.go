package metrics

import (
	"net/http"
	"net/url"
	"strings"
)

// NonResource labels requests outside the resource API (discovery,
// /version, /openapi, health), so the resource label stays bounded.
const NonResource = "nonresource"

// Classify names a request the way the API server's authorizer does: the
// Kubernetes verb (get and list told apart by whether the path names an
// object, watch by the watch parameter or the legacy /watch/ prefix) and
// the resource, with "/subresource" appended when there is one.
func Classify(method string, u *url.URL) (verb, resource string) {
	rest, ok := resourcePath(u.Path)
	if !ok {
		return strings.ToLower(method), NonResource
	}
	watchPrefix := rest[0] == "watch"
	if watchPrefix {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return strings.ToLower(method), NonResource
	}
	resource, named := resourceName(rest)
	watch := watchPrefix || isTrue(u.Query().Get("watch"))
	return verbOf(method, named, watch), resource
}

// resourcePath strips /api/<version> or /apis/<group>/<version> and
// returns what follows; ok is false for any other path and for discovery.
func resourcePath(path string) (rest []string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) > 2 && parts[0] == "api":
		return parts[2:], true
	case len(parts) > 3 && parts[0] == "apis":
		return parts[3:], true
	}
	return nil, false
}

// resourceName reads [namespaces/<ns>/]<resource>[/<name>[/<subresource>]].
// A namespace's own subresources (status, finalize) sit where a namespaced
// resource's name would, so they are told apart by name, as the API server
// does.
func resourceName(parts []string) (resource string, named bool) {
	if parts[0] == "namespaces" && len(parts) > 2 && !isNamespaceSubresource(parts) {
		parts = parts[2:]
	}
	resource = parts[0]
	if len(parts) > 2 {
		resource += "/" + parts[2]
	}
	return resource, len(parts) > 1
}

func isNamespaceSubresource(parts []string) bool {
	return len(parts) == 3 && (parts[2] == "status" || parts[2] == "finalize")
}

func verbOf(method string, named, watch bool) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch:
			return "watch"
		case named:
			return "get"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return strings.ToLower(method)
}

func isTrue(s string) bool { return s == "true" || s == "1" }
