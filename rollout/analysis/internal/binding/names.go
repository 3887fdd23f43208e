package binding

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// backgroundSuffix ends the name of the background run in place of a step number.
const backgroundSuffix = "bg"

// RunName is the name of the run of a RolloutAnalysis for a revision, attempt and step (0: the background
// run): <ra>-<rev>-<attempt>-<step|bg>. Names are deterministic so that a restarted manager finds the runs it
// created instead of creating others; a name past the API's limit keeps its start and gets a hash of the whole
// in place of the rest, so that it stays unique.
func RunName(ra, rev string, attempt, step int32) string {
	suffix := backgroundSuffix
	if step > 0 {
		suffix = fmt.Sprint(step)
	}
	name := fmt.Sprintf("%s-%s-%d-%s", ra, rev, attempt, suffix)
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	tail := fmt.Sprintf("-%s-%d-%s", hex.EncodeToString(sum[:])[:16], attempt, suffix)
	// The cut may end in a '.' or '-', which may not precede the tail's '-' within a DNS label.
	head := strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength-len(tail)], ".-")
	return head + tail
}
