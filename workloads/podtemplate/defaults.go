// Package podtemplate defaults a workload's pod template exactly as upstream OpenKruise's defaulting webhook
// does (unless its TemplateNoDefaults gate is on): the kube-apiserver's pod template defaults of the
// Kubernetes 1.32 libraries upstream is built with, plus imagePullPolicy Always for app containers.
//
// Exactness matters more than completeness: the defaulted template is hashed into ControllerRevision names,
// and the webhook also runs on updates of workloads created under upstream, so one default upstream does not
// apply would change the revision hash of every migrated workload and make all its pods look outdated.
//
// Deliberately not applied, although a current kube-apiserver applies them somewhere:
//   - enableServiceLinks, hostPort copying for hostNetwork pods, pod-level resource requests and the H2C probe
//     protocol: the apiserver sets them on Pods only, never on pod templates.
//   - serviceAccount (the alias of serviceAccountName): Kubernetes 1.37 defaults it in PodSpec; older
//     versions only set it when converting built-in objects, which never happens to a custom resource.
//   - image volume pullPolicy: behind the ImageVolume gate, off by default in the 1.32 libraries.
//   - hostPort copying in templates: upstream's DefaultHostNetworkHostPortsInPodTemplates gate, off by default.
//   - env fileKeyRef.optional, grpc probe service, iscsi/rbd/azureDisk/scaleIO fields, ephemeral volume claim
//     volumeMode and rounding of pod-level resources and ephemeral volume claim resources: apiserver defaults
//     upstream's webhook does not apply.
package podtemplate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// milliScale is the precision resource quantities are rounded up to, as the apiserver does.
const milliScale = -3

// Default applies the defaults in place; applying it again changes nothing. A nil template is left alone.
func Default(t *corev1.PodTemplateSpec) {
	if t == nil {
		return
	}
	DefaultPodSpec(&t.Spec)
}

// DefaultPodSpec applies Default's defaults to a bare pod spec.
func DefaultPodSpec(s *corev1.PodSpec) {
	if s == nil {
		return
	}
	defaultPodFields(s)
	DefaultVolumes(s.Volumes)
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		defaultAppContainer(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		// Upstream skips the container-level fields (pull policy, termination message) of ephemeral containers.
		defaultContainerParts((*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUp(s.Overhead)
}

func defaultPodFields(s *corev1.PodSpec) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
}

// DefaultSidecarContainer applies the defaults upstream's SidecarSet webhook gives an injected container: an
// init container's (pull policy by tag, termination message, ports, env, resources, probes, hooks) except
// the startup probe's, which upstream leaves alone there. The SidecarSet hash covers these fields, so they
// must match upstream's exactly.
func DefaultSidecarContainer(c *corev1.Container) {
	startup := c.StartupProbe
	c.StartupProbe = nil
	defaultContainer(c)
	c.StartupProbe = startup
}

// DefaultFieldRef sets the apiVersion of a field selector, v1, when it names none; nil is left alone.
func DefaultFieldRef(f *corev1.ObjectFieldSelector) { defaultFieldRef(f) }

// defaultAppContainer pulls app images Always when unset: upstream does so that an in-place update to a
// re-pushed tag really fetches the new image.
func defaultAppContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullAlways
	}
	defaultContainer(c)
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = PullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	defaultContainerParts(c)
}

// defaultContainerParts defaults what a container holds: ports, env, resources, probes and lifecycle hooks.
func defaultContainerParts(c *corev1.Container) {
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil {
			defaultFieldRef(from.FieldRef)
		}
	}
	roundUp(c.Resources.Limits)
	roundUp(c.Resources.Requests)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	defaultLifecycle(c.Lifecycle)
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	setIfZero(&p.TimeoutSeconds, 1)
	setIfZero(&p.PeriodSeconds, 10)
	setIfZero(&p.SuccessThreshold, 1)
	setIfZero(&p.FailureThreshold, 3)
	defaultHTTPGet(p.HTTPGet)
}

func defaultLifecycle(l *corev1.Lifecycle) {
	if l == nil {
		return
	}
	if l.PostStart != nil {
		defaultHTTPGet(l.PostStart.HTTPGet)
	}
	if l.PreStop != nil {
		defaultHTTPGet(l.PreStop.HTTPGet)
	}
}

func defaultHTTPGet(a *corev1.HTTPGetAction) {
	if a == nil {
		return
	}
	if a.Path == "" {
		a.Path = "/"
	}
	if a.Scheme == "" {
		a.Scheme = corev1.URISchemeHTTP
	}
}

func defaultFieldRef(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

// roundUp rounds every quantity up to milli precision, so "0.0001" is stored as "1m" the way the apiserver would.
func roundUp(l corev1.ResourceList) {
	for name, q := range l {
		q.RoundUp(milliScale)
		l[name] = q
	}
}

func setIfZero(v *int32, def int32) {
	if *v == 0 {
		*v = def
	}
}
