package podtemplate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// quantityByString compares quantities by their serialised form, which is what rounding changes.
var quantityByString = cmp.Comparer(func(a, b resource.Quantity) bool { return a.String() == b.String() })

// podDefaults is a pod spec holding exactly the pod-level defaults, for cases to add their containers to.
func podDefaults(mutate func(*corev1.PodSpec)) corev1.PodSpec {
	s := corev1.PodSpec{
		DNSPolicy:                     corev1.DNSClusterFirst,
		RestartPolicy:                 corev1.RestartPolicyAlways,
		SecurityContext:               &corev1.PodSecurityContext{},
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		SchedulerName:                 corev1.DefaultSchedulerName,
	}
	if mutate != nil {
		mutate(&s)
	}
	return s
}

func defaultedContainer(name, image string, policy corev1.PullPolicy) corev1.Container {
	return corev1.Container{
		Name: name, Image: image, ImagePullPolicy: policy,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}

func defaultedProbe(h corev1.ProbeHandler) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: h, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
}

func TestDefault(t *testing.T) {
	cases := []struct {
		name string
		in   corev1.PodTemplateSpec
		want corev1.PodTemplateSpec
	}{{
		name: "empty template gets the pod-level defaults only",
		want: corev1.PodTemplateSpec{Spec: podDefaults(nil)},
	}, {
		name: "metadata is left alone",
		in:   corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}}},
		want: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}}, Spec: podDefaults(nil)},
	}, {
		name: "explicit pod and container values are kept",
		in: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			DNSPolicy: corev1.DNSDefault, RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
			TerminationGracePeriodSeconds: ptr.To[int64](0), SchedulerName: "custom",
			Containers: []corev1.Container{{
				Name: "app", Image: "app", ImagePullPolicy: corev1.PullNever,
				TerminationMessagePath: "/tmp/msg", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		}},
		want: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			DNSPolicy: corev1.DNSDefault, RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
			TerminationGracePeriodSeconds: ptr.To[int64](0), SchedulerName: "custom",
			Containers: []corev1.Container{{
				Name: "app", Image: "app", ImagePullPolicy: corev1.PullNever,
				TerminationMessagePath: "/tmp/msg", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		}},
	}, {
		name: "app containers pull Always, init containers by tag, ephemeral containers keep their container fields",
		in: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36"}, {Name: "init2", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "app", Image: "app:v1", Ports: []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
			}}},
		}},
		want: corev1.PodTemplateSpec{Spec: podDefaults(func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{
				defaultedContainer("init", "busybox:1.36", corev1.PullIfNotPresent),
				defaultedContainer("init2", "busybox", corev1.PullAlways),
			}
			app := defaultedContainer("app", "app:v1", corev1.PullAlways)
			app.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
			s.Containers = []corev1.Container{app}
			s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			}}}
		})},
	}, {
		name: "probes, lifecycle hooks and env field references",
		in: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "app",
			LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 3},
			StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}},
			Lifecycle: &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
				PreStop:   &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/stop", Port: intstr.FromString("http")}},
			},
			Env: []corev1.EnvVar{
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
				{Name: "PLAIN", Value: "x"},
			},
		}}}},
		want: corev1.PodTemplateSpec{Spec: podDefaults(func(s *corev1.PodSpec) {
			c := defaultedContainer("app", "app", corev1.PullAlways)
			c.LivenessProbe = defaultedProbe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}})
			c.ReadinessProbe = defaultedProbe(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}})
			c.ReadinessProbe.PeriodSeconds = 3
			c.StartupProbe = defaultedProbe(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}) // no grpc service default
			c.Lifecycle = &corev1.Lifecycle{
				PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
				PreStop:   &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/stop", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			}
			c.Env = []corev1.EnvVar{
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
				{Name: "PLAIN", Value: "x"},
			}
			s.Containers = []corev1.Container{c}
		})},
	}, {
		name: "resources and overhead are rounded up to milli units",
		in: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1.0005")},
			}}},
			Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10u")},
		}},
		want: corev1.PodTemplateSpec{Spec: podDefaults(func(s *corev1.PodSpec) {
			c := defaultedContainer("app", "app", corev1.PullAlways)
			c.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1001m")},
			}
			s.Containers = []corev1.Container{c}
			s.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
		})},
	}, {
		name: "volumes",
		in: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "none"},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var"}}},
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o400)}}},
			{Name: "down", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			}}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}}},
			{Name: "iscsi", VolumeSource: corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "p", IQN: "q"}}},
		}}},
		want: corev1.PodTemplateSpec{Spec: podDefaults(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{
				{Name: "none", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var", Type: ptr.To(corev1.HostPathUnset)}}},
				{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{DefaultMode: ptr.To[int32](0o644)}}},
				{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o400)}}},
				{Name: "down", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: ptr.To[int32](0o644), Items: []corev1.DownwardAPIVolumeFile{
					{Path: "name", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
				}}}},
				{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				}}}},
				{Name: "iscsi", VolumeSource: corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "p", IQN: "q"}}}, // upstream leaves iscsiInterface unset
			}
		})},
	}, {
		name: "pod-only and gated apiserver defaults are not applied",
		in: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			ServiceAccountName: "sa", HostNetwork: true,
			Containers: []corev1.Container{{Name: "app", Image: "app", Ports: []corev1.ContainerPort{{ContainerPort: 80}}, Env: []corev1.EnvVar{
				{Name: "F", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}},
			}}},
			Volumes: []corev1.Volume{{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "img:latest"}}}},
		}},
		want: corev1.PodTemplateSpec{Spec: podDefaults(func(s *corev1.PodSpec) {
			s.ServiceAccountName, s.HostNetwork = "sa", true
			c := defaultedContainer("app", "app", corev1.PullAlways)
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			c.Env = []corev1.EnvVar{{Name: "F", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}}}
			s.Containers = []corev1.Container{c}
			s.Volumes = []corev1.Volume{{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "img:latest"}}}}
		})},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.DeepCopy()
			Default(got)
			if diff := cmp.Diff(&tc.want, got, quantityByString); diff != "" {
				t.Fatalf("Default (-want +got):\n%s", diff)
			}
			again := got.DeepCopy()
			Default(again)
			if diff := cmp.Diff(got, again, quantityByString); diff != "" {
				t.Errorf("second Default changed the template (-first +second):\n%s", diff)
			}
		})
	}
}

func TestDefaultNil(_ *testing.T) {
	Default(nil)
	DefaultPodSpec(nil)
}

// A sidecar gets an init container's defaults, its startup probe excepted; volumes get a template's.
func TestDefaultSidecarContainerAndVolumes(t *testing.T) {
	c := corev1.Container{Image: "busybox", LivenessProbe: &corev1.Probe{}, StartupProbe: &corev1.Probe{}}
	DefaultSidecarContainer(&c)
	want := corev1.Container{Image: "busybox", ImagePullPolicy: corev1.PullAlways,
		TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		LivenessProbe: &corev1.Probe{TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
		StartupProbe:  &corev1.Probe{}}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("sidecar defaults (-want +got):\n%s", diff)
	}
	volumes := []corev1.Volume{{Name: "a"}, {Name: "b", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}}
	DefaultVolumes(volumes)
	if volumes[0].EmptyDir == nil || volumes[1].Secret.DefaultMode == nil || *volumes[1].Secret.DefaultMode != 0o644 {
		t.Errorf("volumes %+v", volumes)
	}
	f := &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}
	DefaultFieldRef(f)
	DefaultFieldRef(nil)
	if f.APIVersion != "v1" {
		t.Errorf("fieldRef apiVersion %q", f.APIVersion)
	}
}
