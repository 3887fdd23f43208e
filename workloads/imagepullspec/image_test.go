package imagepullspec

import "testing"

func TestSplitImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		ref, image, tag string
	}{
		{"nginx", "nginx", "latest"},
		{"nginx:1.9.1", "nginx", "1.9.1"},
		{"docker.io/library/nginx:1", "nginx", "1"},
		{"index.docker.io/user/app:v1", "user/app", "v1"},
		{"library/team/app:v1", "library/team/app", "v1"},
		{"127.0.0.1:5000/team/app:v1", "127.0.0.1:5000/team/app", "v1"},
		{"localhost/app", "localhost/app", "latest"},
		{"nginx@" + digest, "nginx", digest},
		{"nginx:1@" + digest, "nginx", digest},
	} {
		image, tag, err := SplitImage(tc.ref)
		if err != nil || image != tc.image || tag != tc.tag {
			t.Errorf("SplitImage(%q) = %q, %q, %v; want %q, %q", tc.ref, image, tag, err, tc.image, tc.tag)
		}
	}
	for _, bad := range []string{"", "Nginx", "nginx:", "a b", "nginx@sha256:12"} {
		if _, _, err := SplitImage(bad); err == nil {
			t.Errorf("SplitImage(%q) accepted", bad)
		}
	}
}
