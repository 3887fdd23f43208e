package podhandler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestURL(t *testing.T) {
	ports := []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	cases := []struct {
		name    string
		h       corev1.HTTPGetAction
		podIP   string
		want    string
		wantErr bool
	}{
		{name: "pod IP and named port", h: corev1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("http")}, podIP: "10.0.0.7", want: "http://10.0.0.7:8080/quit"},
		{name: "host, scheme, query", h: corev1.HTTPGetAction{Host: "svc", Path: "stop?now=1", Port: intstr.FromInt32(443), Scheme: corev1.URISchemeHTTPS},
			want: "https://svc:443/stop?now=1"},
		{name: "IPv6 pod", h: corev1.HTTPGetAction{Port: intstr.FromInt32(80)}, podIP: "fd00::7", want: "http://[fd00::7]:80/"},
		{name: "numeric string port", h: corev1.HTTPGetAction{Port: intstr.FromString("9000")}, podIP: "10.0.0.7", want: "http://10.0.0.7:9000/"},
		{name: "unknown port name", h: corev1.HTTPGetAction{Port: intstr.FromString("admin")}, podIP: "10.0.0.7", wantErr: true},
		{name: "port out of range", h: corev1.HTTPGetAction{Port: intstr.FromInt32(70000)}, podIP: "10.0.0.7", wantErr: true},
		{name: "no pod IP", h: corev1.HTTPGetAction{Port: intstr.FromInt32(80)}, wantErr: true},
	}
	for _, tc := range cases {
		u, err := URL(&tc.h, ports, tc.podIP)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: error = %v, want error %v", tc.name, err, tc.wantErr)
			continue
		}
		if err == nil && u.String() != tc.want {
			t.Errorf("%s: URL = %s, want %s", tc.name, u, tc.want)
		}
	}
}
