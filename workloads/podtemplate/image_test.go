package podtemplate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPullPolicyFor(t *testing.T) {
	sha := "sha256:" + strings.Repeat("ab", 32)
	cases := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.25", corev1.PullIfNotPresent},
		{"nginx@" + sha, corev1.PullIfNotPresent},
		{"nginx:latest@" + sha, corev1.PullAlways},
		{"nginx:1.25@" + sha, corev1.PullIfNotPresent},
		{"docker.io/library/nginx", corev1.PullAlways},
		{"registry.example.com:5000/team/app", corev1.PullAlways},
		{"registry.example.com:5000/team/app:v2", corev1.PullIfNotPresent},
		{"localhost/app:v1", corev1.PullIfNotPresent},
		{"[::1]:5000/app", corev1.PullAlways},
		{"UPPER/app", corev1.PullAlways},  // an upper case first component is a host
		{"team_a/app", corev1.PullAlways}, // an underscore makes it a path, not a host
		{"a.b_c/app", corev1.PullAlways},  // taken for a host, which it cannot be, but valid as a path
		{"", corev1.PullIfNotPresent},
		{"Nginx", corev1.PullIfNotPresent},
		{"nginx:", corev1.PullIfNotPresent},
		{"nginx@sha256:abc", corev1.PullIfNotPresent},
		{"nginx@md5:" + strings.Repeat("ab", 16), corev1.PullIfNotPresent},
		{"nginx@sha256:" + strings.Repeat("AB", 32), corev1.PullIfNotPresent},
		{strings.Repeat("ab", 32), corev1.PullIfNotPresent}, // a bare image ID
		{strings.Repeat("a", 248), corev1.PullIfNotPresent}, // too long once prefixed with library/
		{strings.Repeat("a", 247), corev1.PullAlways},
		{"registry.example.com/" + strings.Repeat("a", 255), corev1.PullAlways}, // the host does not count
		{"registry.example.com/" + strings.Repeat("a", 256), corev1.PullIfNotPresent},
		{"BAD_HOST/app", corev1.PullIfNotPresent},
	}
	for _, tc := range cases {
		if got := PullPolicyFor(tc.image); got != tc.want {
			t.Errorf("PullPolicyFor(%q) = %s, want %s", tc.image, got, tc.want)
		}
	}
}
