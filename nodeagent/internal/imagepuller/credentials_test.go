package imagepuller

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
)

func dockerConfigJSON(t *testing.T, auths map[string]dockerConfigEntry) corev1.Secret {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		t.Fatal(err)
	}
	return corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: raw}}
}

func user(name string) dockerConfigEntry {
	return dockerConfigEntry{Username: name, Password: name + "-pw"}
}

func auth(name string) cri.Auth { return cri.Auth{Username: name, Password: name + "-pw"} }

func TestCredentials(t *testing.T) {
	secrets := []corev1.Secret{
		dockerConfigJSON(t, map[string]dockerConfigEntry{
			"https://index.docker.io/v1/":   user("hub"),
			"registry.example.com":          user("host"),
			"registry.example.com/team":     user("team"),
			"*.corp.example.com":            user("glob"),
			"http://ports.example.com:5000": user("port"),
			"b64.example.com":               {Auth: base64.StdEncoding.EncodeToString([]byte("b64:secret:with:colons"))},
		}),
		// A second secret adds to the same host; a legacy .dockercfg secret counts too.
		dockerConfigJSON(t, map[string]dockerConfigEntry{"registry.example.com": user("host2")}),
		{Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{corev1.DockerConfigKey: []byte(`{"legacy.example.com":{"username":"old","password":"old-pw"}}`)}},
		// Not a docker config, or broken: ignored.
		{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"token": []byte("x")}},
		{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("{")}},
	}
	for _, tc := range []struct {
		image string
		want  []cri.Auth
	}{
		{"nginx", []cri.Auth{auth("hub")}},
		{"library/nginx", []cri.Auth{auth("hub")}},
		{"docker.io/someone/app", []cri.Auth{auth("hub")}},
		{"registry.example.com/app", []cri.Auth{auth("host"), auth("host2")}},
		// The path key is more specific, so it comes first.
		{"registry.example.com/team/app", []cri.Auth{auth("team"), auth("host"), auth("host2")}},
		{"a.corp.example.com/app", []cri.Auth{auth("glob")}},
		// A glob matches one label only.
		{"a.b.corp.example.com/app", nil},
		{"ports.example.com:5000/app", []cri.Auth{auth("port")}},
		{"ports.example.com/app", nil},
		{"b64.example.com/app", []cri.Auth{{Username: "b64", Password: "secret:with:colons"}}},
		{"legacy.example.com/app", []cri.Auth{{Username: "old", Password: "old-pw"}}},
		{"other.example.com/app", nil},
		{"localhost/app", nil},
	} {
		if diff := cmp.Diff(tc.want, Credentials(tc.image, secrets)); diff != "" {
			t.Errorf("Credentials(%q) (-want +got):\n%s", tc.image, diff)
		}
	}
}
