package podtemplate

import "k8s.io/apimachinery/pkg/api/validation"

// GenerateName is kube's generated-name prefix for the pods of a controller named owner: "<owner>-", or the
// bare name when that is no valid prefix.
func GenerateName(owner string) string {
	if prefix := owner + "-"; len(validation.NameIsDNSSubdomain(prefix, true)) == 0 {
		return prefix
	}
	return owner
}
