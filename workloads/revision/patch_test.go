package revision

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/workloads/podtemplate"
)

// The expected revision data below was produced by upstream's encoding (struct to JSON with k8s.io/api
// v0.32.10, decoded into maps, "$patch" added, encoded again) from the same templates.
const (
	nginxData = `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"nginx"}},"spec":{"containers":[{"image":"nginx:latest","imagePullPolicy":"Always","name":"nginx","ports":[{"containerPort":80,"name":"http","protocol":"TCP"}],"resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}`

	richData = `{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"note":"\u003cb\u003e\u0026\u003c/b\u003e"},"creationTimestamp":null,"labels":{"app":"web","tier":"frontend"}},"spec":{"containers":[{"env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}},{"name":"MODE","value":"prod"}],"image":"registry.example.com/web:v2","imagePullPolicy":"Always","lifecycle":{"preStop":{"exec":{"command":["sleep","5"]}}},"livenessProbe":{"failureThreshold":3,"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"initialDelaySeconds":5,"periodSeconds":10,"successThreshold":1,"timeoutSeconds":1},"name":"web","ports":[{"containerPort":8080,"name":"http","protocol":"TCP"}],"readinessProbe":{"failureThreshold":3,"periodSeconds":10,"successThreshold":1,"tcpSocket":{"port":"http"},"timeoutSeconds":1},"resources":{"limits":{"cpu":"1","memory":"128Mi"},"requests":{"cpu":"250m","memory":"64Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","volumeMounts":[{"mountPath":"/etc/web","name":"config"},{"mountPath":"/cache","name":"cache"}]}],"dnsPolicy":"ClusterFirst","initContainers":[{"command":["sh","-c","true"],"image":"busybox:1.36","imagePullPolicy":"IfNotPresent","name":"init","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"nodeSelector":{"kubernetes.io/os":"linux"},"restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{"runAsUser":1000},"serviceAccountName":"web","terminationGracePeriodSeconds":30,"volumes":[{"configMap":{"defaultMode":420,"name":"web-config"},"name":"config"},{"emptyDir":{},"name":"cache"},{"name":"token","projected":{"defaultMode":420,"sources":[{"serviceAccountToken":{"audience":"api","expirationSeconds":3600,"path":"token"}}]}},{"ephemeral":{"volumeClaimTemplate":{"metadata":{"creationTimestamp":null,"labels":{"type":"scratch"}},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}},"name":"scratch"}]}}}}`

	// richStored is richTemplate as upstream's v0.32 types encode it, i.e. as an upstream-managed workload
	// holds it: field order of the structs and creationTimestamp null in both metadata.
	richStored = `{"metadata":{"creationTimestamp":null,"labels":{"app":"web","tier":"frontend"},"annotations":{"note":"\u003cb\u003e\u0026\u003c/b\u003e"}},"spec":{"volumes":[{"name":"config","configMap":{"name":"web-config","defaultMode":420}},{"name":"cache","emptyDir":{}},{"name":"token","projected":{"sources":[{"serviceAccountToken":{"audience":"api","expirationSeconds":3600,"path":"token"}}],"defaultMode":420}},{"name":"scratch","ephemeral":{"volumeClaimTemplate":{"metadata":{"creationTimestamp":null,"labels":{"type":"scratch"}},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}}}],"initContainers":[{"name":"init","image":"busybox:1.36","command":["sh","-c","true"],"resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"containers":[{"name":"web","image":"registry.example.com/web:v2","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}},{"name":"MODE","value":"prod"}],"resources":{"limits":{"cpu":"1","memory":"128Mi"},"requests":{"cpu":"250m","memory":"64Mi"}},"volumeMounts":[{"name":"config","mountPath":"/etc/web"},{"name":"cache","mountPath":"/cache"}],"livenessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"initialDelaySeconds":5,"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"readinessProbe":{"tcpSocket":{"port":"http"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"lifecycle":{"preStop":{"exec":{"command":["sleep","5"]}}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"Always"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","nodeSelector":{"kubernetes.io/os":"linux"},"serviceAccountName":"web","securityContext":{"runAsUser":1000},"schedulerName":"default-scheduler"}}`

	// bigIntsStored has a set creation time and integers beyond float64 precision, which upstream's
	// round trip through generic maps rounds.
	bigIntsStored = `{"metadata":{"name":"x","creationTimestamp":"2024-05-01T10:00:00Z","labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"app:v1","resources":{},"imagePullPolicy":"IfNotPresent"}],"terminationGracePeriodSeconds":30,"securityContext":{"runAsUser":9007199254740993,"runAsGroup":-9223372036854775808}}}`
	bigIntsData   = `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":"2024-05-01T10:00:00Z","labels":{"app":"a"},"name":"x"},"spec":{"containers":[{"image":"app:v1","imagePullPolicy":"IfNotPresent","name":"c","resources":{}}],"securityContext":{"runAsGroup":-9223372036854776000,"runAsUser":9007199254740992},"terminationGracePeriodSeconds":30}}}}`
)

func nginxTemplate() *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "nginx", Image: "nginx:latest",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
		}}},
	}
	podtemplate.Default(t)
	return t
}

func richTemplate() *corev1.PodTemplateSpec {
	web := corev1.Container{
		Name: "web", Image: "registry.example.com/web:v2",
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "MODE", Value: "prod"},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, InitialDelaySeconds: 5},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}},
		Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}},
		VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web"}, {Name: "cache", MountPath: "/cache"}},
		Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
	}
	t := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "web", "tier": "frontend"},
			Annotations: map[string]string{"note": "<b>&</b>"},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: "web",
			InitContainers:     []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"sh", "-c", "true"}}},
			Containers:         []corev1.Container{web},
			Volumes:            richVolumes(),
			NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
			SecurityContext:    &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
		},
	}
	podtemplate.Default(t)
	return t
}

func richVolumes() []corev1.Volume {
	claim := &corev1.PersistentVolumeClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"type": "scratch"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	return []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
		{Name: "cache"},
		{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "api"}},
		}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: claim}}},
	}
}

func decodeTemplate(t *testing.T, stored string) *corev1.PodTemplateSpec {
	t.Helper()
	var tmpl corev1.PodTemplateSpec
	if err := json.Unmarshal([]byte(stored), &tmpl); err != nil {
		t.Fatalf("decode template: %v", err)
	}
	return &tmpl
}

func TestTemplatePatch(t *testing.T) {
	cases := []struct {
		name     string
		template func(*testing.T) *corev1.PodTemplateSpec
		want     string
	}{
		{"nginx, defaulted", func(*testing.T) *corev1.PodTemplateSpec { return nginxTemplate() }, nginxData},
		{"probes, env, volumes, defaulted", func(*testing.T) *corev1.PodTemplateSpec { return richTemplate() }, richData},
		{"the same, decoded as upstream stores it", func(t *testing.T) *corev1.PodTemplateSpec { return decodeTemplate(t, richStored) }, richData},
		{"creation time set and integers beyond float precision", func(t *testing.T) *corev1.PodTemplateSpec { return decodeTemplate(t, bigIntsStored) }, bigIntsData},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TemplatePatch(tc.template(t))
			if err != nil {
				t.Fatalf("TemplatePatch: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("TemplatePatch:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestTemplatePatchNil(t *testing.T) {
	if _, err := TemplatePatch(nil); !errors.Is(err, ErrNilTemplate) {
		t.Fatalf("TemplatePatch(nil) error = %v, want ErrNilTemplate", err)
	}
}

// TestOmitzeroFieldsAreCompensated lists every omitzero field reachable from a pod template. Upstream's
// k8s.io/api v0.32 has no omitzero tags, so each of these must be restored by restoreNullCreationTimestamps;
// a new entry after a k8s.io/api bump needs the same treatment there.
func TestOmitzeroFieldsAreCompensated(t *testing.T) {
	var got []string
	collectOmitzero(reflect.TypeFor[corev1.PodTemplateSpec](), "", map[reflect.Type]bool{}, &got)
	slices.Sort(got)
	want := []string{
		"metadata.creationTimestamp",
		"spec.volumes[].ephemeral.volumeClaimTemplate.metadata.creationTimestamp",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("omitzero fields (-compensated +found):\n%s", diff)
	}
}

func collectOmitzero(typ reflect.Type, path string, onPath map[reflect.Type]bool, out *[]string) {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
		if typ.Kind() != reflect.Pointer {
			path += "[]"
		}
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || onPath[typ] {
		return
	}
	onPath[typ] = true
	defer delete(onPath, typ)
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		child := path
		if name != "" || !f.Anonymous {
			child = joinPath(path, name, f.Name)
		}
		if strings.Contains(","+opts+",", ",omitzero,") {
			*out = append(*out, child)
		}
		collectOmitzero(f.Type, child, onPath, out)
	}
}

func joinPath(path, name, field string) string {
	if name == "" {
		name = field
	}
	if path == "" {
		return name
	}
	return path + "." + name
}
