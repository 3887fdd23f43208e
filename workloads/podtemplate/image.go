package podtemplate

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The image reference grammar of the container registries' distribution spec, which the apiserver parses an
// image with before picking a pull policy.
const (
	domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	domainPattern   = `(?:` + domainComponent + `(?:\.` + domainComponent + `)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?`
	pathComponent   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	remotePattern   = pathComponent + `(?:/` + pathComponent + `)*`
	tagPattern      = `[\w][\w.-]{0,127}`
	digestPattern   = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`

	defaultDomain   = "docker.io"
	legacyDomain    = "index.docker.io"
	officialRepo    = "library/"
	maxNameLength   = 255
	latestTag       = "latest"
	digestSeparator = ":"
)

var (
	namePattern  = `(?:` + domainPattern + `/)?` + remotePattern
	referenceRE  = regexp.MustCompile(`^(` + namePattern + `)(?::(` + tagPattern + `))?(?:@(` + digestPattern + `))?$`)
	nameRE       = regexp.MustCompile(`^(?:` + domainPattern + `/)?(` + remotePattern + `)$`)
	identifierRE = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// digestHexLength lists the digest algorithms an image reference may use, with their hex lengths.
	digestHexLength = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}
	lowerHexRE      = regexp.MustCompile(`^[a-f0-9]+$`)
)

// PullPolicyFor is the pull policy the apiserver gives a container of image that sets none: Always for the
// tag "latest" or no tag at all, IfNotPresent for any other tag, a digest, or a reference it cannot parse.
func PullPolicyFor(image string) corev1.PullPolicy {
	tag, digest, ok := parseReference(image)
	if ok && (tag == latestTag || (tag == "" && digest == "")) {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// parseReference splits a reference into tag and digest after normalising it the way container tools do
// (docker.io domain, library/ for official images), reporting whether it is valid. The grammar alone decides
// what is valid: a first component taken for a host that is no valid host may still pass as a path.
func parseReference(image string) (tag, digest string, ok bool) {
	if identifierRE.MatchString(image) {
		return "", "", false
	}
	domain, remainder := splitDomain(image)
	if remote, _, _ := strings.Cut(remainder, ":"); strings.ToLower(remote) != remote {
		return "", "", false
	}
	m := referenceRE.FindStringSubmatch(domain + "/" + remainder)
	if m == nil || pathTooLong(m[1]) || !validDigest(m[3]) {
		return "", "", false
	}
	return m[2], m[3], true
}

// splitDomain splits off the registry host the way container tools read a reference: the first path
// component is the host only if it contains a dot or a port, is localhost, or has upper case letters;
// otherwise docker.io is implied, and official images get the library/ prefix.
func splitDomain(image string) (domain, remainder string) {
	domain, remainder = defaultDomain, image
	if first, rest, found := strings.Cut(image, "/"); found && looksLikeHost(first) {
		domain, remainder = first, rest
	}
	if domain == legacyDomain {
		domain = defaultDomain
	}
	if domain == defaultDomain && !strings.Contains(remainder, "/") {
		remainder = officialRepo + remainder
	}
	return domain, remainder
}

// pathTooLong applies the length limit to the repository path of a name, the host not counted.
func pathTooLong(name string) bool {
	m := nameRE.FindStringSubmatch(name)
	return m == nil || len(m[1]) > maxNameLength
}

func looksLikeHost(component string) bool {
	return strings.ContainsAny(component, ".:") || component == "localhost" || strings.ToLower(component) != component
}

func validDigest(d string) bool {
	if d == "" {
		return true
	}
	alg, hex, _ := strings.Cut(d, digestSeparator)
	n, known := digestHexLength[alg]
	return known && len(hex) == n && lowerHexRE.MatchString(hex)
}
