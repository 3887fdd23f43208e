package inject

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// Source is one SidecarSet to inject, as the webhook resolved it: Set's spec may come from a historical
// ControllerRevision (injectionStrategy.revision); Revision is the name of the ControllerRevision it comes
// from, recorded in the pod's kruise.io/sidecarset-hash annotation.
type Source struct {
	Set      *kruiseappsv1alpha1.SidecarSet
	Revision string
}

// Inject adds the sources' sidecars to pod at its creation and reports whether it changed anything. It
// applies, in this order: each SidecarSet's patchPodMetadata; its init containers (sorted by name, after the
// pod's own) and containers (before the pod's, or after them with podInjectPolicy AfterAppContainer), each
// with env IS_INJECTED=true, transferEnv and shared volumes; the volumes those containers mount; its
// imagePullSecrets; and the pod annotations recording what was injected (hashes, injected list, hot-upgrade
// state). A container the pod already has by name is replaced in place when a SidecarSet injected it (a pod
// re-created from an injected one), and refused otherwise. On error the pod is left as it was; the error
// names the SidecarSet, the field and the rule, for the webhook to refuse the pod with.
func Inject(pod *corev1.Pod, sources []Source, now metav1.Time) (bool, error) {
	if len(sources) == 0 {
		return false, nil
	}
	if err := metadataConflicts(sources); err != nil {
		return false, err
	}
	work := pod.DeepCopy()
	for _, src := range sources {
		if err := patchMetadata(work, src.Set.Spec.PatchPodMetadata); err != nil {
			return false, fmt.Errorf("SidecarSet %s: %w", src.Set.Name, err)
		}
	}
	b := newBuilder(work, sources)
	for _, src := range sources {
		if err := b.add(src, now); err != nil {
			return false, err
		}
	}
	if err := b.apply(work); err != nil {
		return false, err
	}
	changed := !apiequality.Semantic.DeepEqual(pod, work)
	*pod = *work
	return changed, nil
}

// placed is a container on its way into the pod, with where it goes and where it comes from.
type placed struct {
	container corev1.Container
	before    bool
	set       string
	path      *field.Path
}

// builder gathers what the sources add to the pod, reading the pod as the SidecarSets find it.
type builder struct {
	pod            *corev1.Pod
	initContainers []placed
	containers     []placed
	volumes        []corev1.Volume
	volumeOwners   map[string]string
	secrets        []corev1.LocalObjectReference
	annotations    map[string]string
	working        map[string]string
	hashes         map[string]PodSidecarSet
	hashesNoImage  map[string]PodSidecarSet
	owners         map[string]string
	setNames       []string
	// sidecarNames are the containers of every source, which resourcesPolicy never counts as targets.
	sidecarNames map[string]bool
}

func newBuilder(pod *corev1.Pod, sources []Source) *builder {
	names := map[string]bool{}
	for _, src := range sources {
		for _, c := range slices.Concat(src.Set.Spec.InitContainers, src.Set.Spec.Containers) {
			names[c.Name] = true
		}
	}
	return &builder{
		sidecarNames:  names,
		pod:           pod.DeepCopy(),
		volumeOwners:  map[string]string{},
		annotations:   map[string]string{},
		working:       map[string]string{},
		hashes:        map[string]PodSidecarSet{},
		hashesNoImage: map[string]PodSidecarSet{},
		owners:        map[string]string{},
	}
}

// add gathers one SidecarSet's containers, volumes, secrets and hash entries.
func (b *builder) add(src Source, now metav1.Time) error {
	set := src.Set
	b.setNames = append(b.setNames, set.Name)
	volumes := map[string]*corev1.Volume{}
	for i := range set.Spec.Volumes {
		volumes[set.Spec.Volumes[i].Name] = &set.Spec.Volumes[i]
	}
	sidecars := []string{}
	for i := range set.Spec.InitContainers {
		c := &set.Spec.InitContainers[i]
		if isNativeSidecar(*c) {
			sidecars = append(sidecars, c.Name)
		}
		path := field.NewPath("spec", "initContainers").Index(i)
		if err := b.addContainer(set, c, path, volumes, true); err != nil {
			return err
		}
	}
	b.secrets = append(b.secrets, set.Spec.ImagePullSecrets...)
	for i := range set.Spec.Containers {
		c := &set.Spec.Containers[i]
		sidecars = append(sidecars, c.Name)
		path := field.NewPath("spec", "containers").Index(i)
		if err := b.addContainer(set, c, path, volumes, false); err != nil {
			return err
		}
	}
	if len(set.Spec.InitContainers)+len(set.Spec.Containers) == 0 {
		return nil
	}
	return b.addHashes(src, sidecars, now)
}

// addContainer prepares c and places it, or its hot-upgrade pair, among the init containers or the
// containers. Only containers get resourcesPolicy; of the init containers, only native sidecars upgrade hot.
func (b *builder) addContainer(set *kruiseappsv1alpha1.SidecarSet, c *kruiseappsv1alpha1.SidecarContainer, path *field.Path,
	volumes map[string]*corev1.Volume, isInit bool) error {
	prepared, err := b.prepare(set, c, path, volumes, !isInit)
	if err != nil {
		return fmt.Errorf("SidecarSet %s: %w", set.Name, err)
	}
	list, before := &b.containers, c.PodInjectPolicy != kruiseappsv1alpha1.AfterAppContainerType
	if isInit {
		list, before = &b.initContainers, false
	}
	if !IsHotUpgrade(c) || isInit && !isNativeSidecar(*c) {
		return b.place(list, placed{container: prepared.Container, before: before, set: set.Name, path: path})
	}
	if c.UpgradeStrategy.HotUpgradeEmptyImage == "" {
		return fmt.Errorf("SidecarSet %s: %w", set.Name,
			field.Required(path.Child("upgradeStrategy", "hotUpgradeEmptyImage"), "a HotUpgrade container needs an empty image"))
	}
	working, idle := hotUpgradePair(prepared)
	for _, hc := range []corev1.Container{working, idle} {
		if err := b.place(list, placed{container: hc, before: before, set: set.Name, path: path}); err != nil {
			return err
		}
	}
	maps.Copy(b.annotations, hotUpgradeAnnotations(c.Name))
	b.working[c.Name] = working.Name
	return nil
}

// prepare is c as it goes into the pod: its volumes gathered, the app containers' volumes shared, env
// IS_INJECTED=true added, then the transferred env vars the sidecar does not declare itself, and, with
// withResources, its resources computed by resourcesPolicy.
func (b *builder) prepare(set *kruiseappsv1alpha1.SidecarSet, c *kruiseappsv1alpha1.SidecarContainer, path *field.Path,
	volumes map[string]*corev1.Volume, withResources bool) (*kruiseappsv1alpha1.SidecarContainer, error) {
	out := c.DeepCopy()
	for j, m := range c.VolumeMounts {
		if err := b.addVolume(set.Name, m.Name, volumes, path.Child("volumeMounts").Index(j).Child("name")); err != nil {
			return nil, err
		}
	}
	mounts, subPathEnvs := sharedMounts(c, b.pod)
	out.VolumeMounts = mergeMounts(out.VolumeMounts, mounts)
	out.VolumeDevices = mergeDevices(out.VolumeDevices, sharedDevices(c, b.pod))
	if e := envVar(out.Env, kruiseappsv1alpha1.SidecarEnvKey); e != nil {
		*e = corev1.EnvVar{Name: kruiseappsv1alpha1.SidecarEnvKey, Value: "true"}
	} else {
		out.Env = append(out.Env, corev1.EnvVar{Name: kruiseappsv1alpha1.SidecarEnvKey, Value: "true"})
	}
	out.Env = mergeEnv(out.Env, mergeEnv(transferEnvs(c, b.pod), subPathEnvs))
	if c.ResourcesPolicy != nil && withResources {
		resources, err := sidecarResources(c.ResourcesPolicy, b.pod, b.sidecarNames)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path.Child("resourcesPolicy"), err)
		}
		out.Resources = resources
	}
	return out, nil
}

// addVolume gathers the SidecarSet volume a sidecar mounts. A volume the SidecarSet lacks must be the
// pod's; two SidecarSets may bring a volume of the same name only when they define it alike.
func (b *builder) addVolume(setName, name string, volumes map[string]*corev1.Volume, path *field.Path) error {
	v, ok := volumes[name]
	if !ok {
		if slices.ContainsFunc(b.pod.Spec.Volumes, func(pv corev1.Volume) bool { return pv.Name == name }) {
			return nil
		}
		return field.NotFound(path, name)
	}
	for i := range b.volumes {
		if b.volumes[i].Name != name {
			continue
		}
		if owner := b.volumeOwners[name]; owner != setName && !apiequality.Semantic.DeepEqual(b.volumes[i], *v) {
			return field.Invalid(field.NewPath("spec", "volumes").Key(name), name,
				fmt.Sprintf("conflicts with the volume of the same name of SidecarSet %s", owner))
		}
		return nil
	}
	b.volumes = append(b.volumes, *v.DeepCopy())
	b.volumeOwners[name] = setName
	return nil
}

// place appends p to list unless another sidecar already took its name.
func (b *builder) place(list *[]placed, p placed) error {
	if owner, ok := b.owners[p.container.Name]; ok {
		return fmt.Errorf("SidecarSet %s: %w", p.set, field.Invalid(p.path.Child("name"), p.container.Name,
			fmt.Sprintf("SidecarSet %s injects a container of this name too", owner)))
	}
	b.owners[p.container.Name] = p.set
	*list = append(*list, p)
	return nil
}

// addHashes records the hash entries of the SidecarSet: upstream keeps the controllerRevision only in the
// entry of the hash with images.
func (b *builder) addHashes(src Source, sidecars []string, now metav1.Time) error {
	hash, err := SetHash(src.Set)
	if err != nil {
		return err
	}
	noImage, err := SetHashWithoutImage(src.Set)
	if err != nil {
		return err
	}
	slices.Sort(sidecars)
	sidecars = slices.Compact(sidecars)
	b.hashes[src.Set.Name] = PodSidecarSet{UpdateTimestamp: now, Hash: hash, SidecarSetName: src.Set.Name,
		SidecarList: sidecars, ControllerRevision: src.Revision}
	b.hashesNoImage[src.Set.Name] = PodSidecarSet{UpdateTimestamp: now, Hash: noImage, SidecarSetName: src.Set.Name,
		SidecarList: slices.Clone(sidecars)}
	return nil
}

// apply writes what was gathered into pod. Without any container to inject it writes nothing, as upstream:
// the metadata patches stay.
func (b *builder) apply(pod *corev1.Pod) error {
	if len(b.initContainers) == 0 && len(b.containers) == 0 {
		return nil
	}
	slices.SortStableFunc(b.initContainers, func(x, y placed) int { return strings.Compare(x.container.Name, y.container.Name) })
	initContainers, err := mergeContainers(pod.Spec.InitContainers, pod.Spec.Containers, b.initContainers, "a container")
	if err != nil {
		return err
	}
	containers, err := mergeContainers(pod.Spec.Containers, pod.Spec.InitContainers, b.containers, "an init container")
	if err != nil {
		return err
	}
	pod.Spec.InitContainers, pod.Spec.Containers = initContainers, containers
	pod.Spec.Volumes = mergeVolumes(pod.Spec.Volumes, b.volumes)
	pod.Spec.ImagePullSecrets = mergeSecrets(pod.Spec.ImagePullSecrets, b.secrets)
	return b.annotate(pod)
}

// annotate writes the hot-upgrade state, the hash entries and the injected list, keeping what the pod
// records of other SidecarSets.
func (b *builder) annotate(pod *corev1.Pod) error {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	maps.Copy(pod.Annotations, b.annotations)
	if len(b.working) > 0 {
		working := WorkingHotUpgradeContainers(pod)
		maps.Copy(working, b.working)
		SetWorkingHotUpgradeContainers(pod, working)
	}
	for key, entries := range map[string]map[string]PodSidecarSet{
		kruiseappsv1alpha1.SidecarSetHashAnnotation:             b.hashes,
		kruiseappsv1alpha1.SidecarSetHashWithoutImageAnnotation: b.hashesNoImage,
	} {
		hashes, err := parsePodHashes(pod.Annotations[key])
		if err != nil {
			return field.Invalid(field.NewPath("metadata", "annotations").Key(key), pod.Annotations[key],
				"not a JSON map of SidecarSet hashes")
		}
		maps.Copy(hashes, entries)
		SetPodHashes(pod, key, hashes)
	}
	SetInjectedSidecarSets(pod, append(InjectedSidecarSets(pod), b.setNames...))
	return nil
}

// mergeContainers puts the injected containers into own: in place of an injected container of the same
// name, else before or after own's. A name taken by an app container, or by one of other (the pod's other
// container list, named otherKind), refuses the pod.
func mergeContainers(own, other []corev1.Container, injected []placed, otherKind string) ([]corev1.Container, error) {
	out := slices.Clone(own)
	var before, after []corev1.Container
	for _, p := range injected {
		name := p.container.Name
		if i := slices.IndexFunc(out, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			if !IsInjectedContainer(&own[i]) {
				return nil, fmt.Errorf("SidecarSet %s: %w", p.set, field.Invalid(p.path.Child("name"), name,
					"the pod has a container of this name that no SidecarSet injected"))
			}
			out[i] = p.container
			continue
		}
		if slices.ContainsFunc(other, func(c corev1.Container) bool { return c.Name == name }) {
			return nil, fmt.Errorf("SidecarSet %s: %w", p.set, field.Invalid(p.path.Child("name"), name,
				fmt.Sprintf("the pod has %s of this name", otherKind)))
		}
		if p.before {
			before = append(before, p.container)
		} else {
			after = append(after, p.container)
		}
	}
	return slices.Concat(before, out, after), nil
}

// mergeVolumes appends the sidecars' volumes the pod lacks: the pod's own volume of a name wins.
func mergeVolumes(own, extra []corev1.Volume) []corev1.Volume {
	for _, v := range extra {
		if !slices.ContainsFunc(own, func(o corev1.Volume) bool { return o.Name == v.Name }) {
			own = append(own, v)
		}
	}
	return own
}

// mergeSecrets appends the sidecars' image pull secrets the pod lacks.
func mergeSecrets(own, extra []corev1.LocalObjectReference) []corev1.LocalObjectReference {
	var out []corev1.LocalObjectReference
	for _, s := range slices.Concat(own, extra) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
