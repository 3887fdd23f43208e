package imagepuller

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
)

// Docker Hub's names: images without a registry host come from it, and its credentials are often stored
// under its legacy v1 address.
const (
	dockerHubHost   = "docker.io"
	dockerHubLegacy = "index.docker.io"
)

// Credentials returns the credentials the pull secrets hold for image (a name without tag or digest), in the
// order the kubelet tries them: the secrets' registry keys matched against the image (host globs such as
// *.example.com, port and path prefix), the more specific key first; failing any match, Docker Hub's entry
// for an image on Docker Hub. Secrets that are not docker configs, or do not parse, hold none.
func Credentials(image string, secrets []corev1.Secret) []cri.Auth {
	creds := map[string][]cri.Auth{}
	var keys []string
	for _, s := range secrets {
		for loc, auth := range dockerConfig(s) {
			if key, ok := registryKey(loc); ok {
				if _, seen := creds[key]; !seen {
					keys = append(keys, key)
				}
				creds[key] = append(creds[key], auth)
			}
		}
	}
	// Reverse order puts a longer key (a path under a host) before its prefix, as the kubelet sorts.
	slices.Sort(keys)
	slices.Reverse(keys)
	target := normalizeImage(image)
	var out []cri.Auth
	for _, k := range keys {
		if urlsMatch(k, target) {
			out = append(out, creds[k]...)
		}
	}
	if len(out) == 0 && onDockerHub(target) {
		out = creds[dockerHubLegacy]
	}
	return out
}

// dockerConfigEntry is one registry's entry of a docker config.
type dockerConfigEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// dockerConfig reads a kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg secret.
func dockerConfig(s corev1.Secret) map[string]cri.Auth {
	var entries map[string]dockerConfigEntry
	if raw, ok := s.Data[corev1.DockerConfigJsonKey]; ok {
		var cfg struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if json.Unmarshal(raw, &cfg) != nil {
			return nil
		}
		entries = cfg.Auths
	} else if raw, ok := s.Data[corev1.DockerConfigKey]; !ok || json.Unmarshal(raw, &entries) != nil {
		return nil
	}
	out := make(map[string]cri.Auth, len(entries))
	for loc, e := range entries {
		if a, ok := toAuth(e); ok {
			out[loc] = a
		}
	}
	return out
}

// toAuth takes user and password from the entry, else from its base64 "user:password".
func toAuth(e dockerConfigEntry) (cri.Auth, bool) {
	if e.Username != "" || e.Password != "" {
		return cri.Auth{Username: e.Username, Password: e.Password}, true
	}
	raw, err := base64.StdEncoding.DecodeString(e.Auth)
	if err != nil {
		return cri.Auth{}, false
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	return cri.Auth{Username: user, Password: pass}, ok
}

// registryKey turns a docker config location (a URL, a host, a host and path) into the kubelet's key:
// host[:port] and path, without scheme and without a /v1/ or /v2/ API prefix.
func registryKey(loc string) (string, bool) {
	u, err := parseSchemeless(loc)
	if err != nil || u.Host == "" {
		return "", false
	}
	path := u.Path
	if strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/v2/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return u.Host, true
	}
	return u.Host + path, true
}

func parseSchemeless(s string) (*url.URL, error) {
	if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
		s = "https://" + s
	}
	return url.Parse(s)
}

// normalizeImage adds the registry and namespace Docker implies: "nginx" is docker.io/library/nginx, and
// a first component without "." or ":" (and not localhost) is a Docker Hub user.
func normalizeImage(image string) string {
	first, rest, found := strings.Cut(image, "/")
	switch {
	case !found:
		return dockerHubHost + "/library/" + image
	case first == dockerHubLegacy:
		return normalizeImage(rest)
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		return dockerHubHost + "/" + image
	}
	return image
}

func onDockerHub(image string) bool {
	return strings.HasPrefix(image, dockerHubHost+"/")
}

// urlsMatch reports whether target (host and path) falls under the key glob: same port, as many host
// labels each matching its glob, and the key's path a prefix of the target's.
func urlsMatch(glob, target string) bool {
	g, err1 := parseSchemeless(glob)
	t, err2 := parseSchemeless(target)
	if err1 != nil || err2 != nil {
		return false
	}
	gLabels, gPort := splitHost(g.Host)
	tLabels, tPort := splitHost(t.Host)
	if gPort != tPort || len(gLabels) != len(tLabels) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i := range gLabels {
		if ok, err := filepath.Match(gLabels[i], tLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}
