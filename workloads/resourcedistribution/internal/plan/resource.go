package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The kinds a ResourceDistribution distributes: upstream's.
const (
	KindSecret    = "Secret"
	KindConfigMap = "ConfigMap"
)

// Supported is the message upstream's webhook gives for any other kind.
const Supported = "unknown or unsupported resource GroupKind, only support [Secret ConfigMap]"

// ErrEmpty is spec.resource left empty.
var ErrEmpty = errors.New("empty resource is not allowed")

// Resource is spec.resource decoded: a Secret or a ConfigMap, and the hash its copies carry.
type Resource struct {
	// Kind is KindSecret or KindConfigMap; APIVersion is as written (v1 for both).
	Kind, APIVersion string
	// Object is the typed object as written, namespace included; the copies are built from it.
	Object client.Object
	// Hash is upstream's: the hex SHA-256 of spec.resource's bytes as the API server serves them.
	Hash string
}

// Name is the name every copy has.
func (r *Resource) Name() string { return r.Object.GetName() }

// Decode reads spec.resource. An unsupported kind is an error that says so (Supported); fields the typed
// object does not know are dropped, as the API server would drop them from the copies.
func Decode(raw []byte) (*Resource, error) {
	if len(raw) == 0 {
		return nil, ErrEmpty
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("failed to deserialize resource: %w", err)
	}
	obj := newObject(tm)
	if obj == nil {
		return nil, errors.New(Supported)
	}
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, fmt.Errorf("failed to deserialize resource: %w", err)
	}
	sum := sha256.Sum256(raw)
	return &Resource{Kind: tm.Kind, APIVersion: tm.APIVersion, Object: obj, Hash: hex.EncodeToString(sum[:])}, nil
}

// newObject is an empty object of the kind tm names, nil for a kind not supported. Secrets and ConfigMaps
// exist only in the core group's v1.
func newObject(tm metav1.TypeMeta) client.Object {
	if gv, err := schema.ParseGroupVersion(tm.APIVersion); err != nil || gv != corev1.SchemeGroupVersion {
		return nil
	}
	switch tm.Kind {
	case KindSecret:
		return &corev1.Secret{}
	case KindConfigMap:
		return &corev1.ConfigMap{}
	}
	return nil
}
