// Package jsonpatch sends JSON patches (RFC 6902) whose test operations guard a write by the fields it was
// computed from. Unlike a resourceVersion guard, such a patch does not lose to a write that changed none of
// them, such as another controller's status write.
package jsonpatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Op is one operation. A map, not a struct: a test of a zero value (false, 0, "") must still send it.
type Op = map[string]any

// Test fails the patch unless the value at path is value.
func Test(path string, value any) Op { return Op{"op": "test", "path": path, "value": value} }

// Add sets the value at path, replacing one that is there.
func Add(path string, value any) Op { return Op{"op": "add", "path": path, "value": value} }

// Replace sets the value at path, which must exist.
func Replace(path string, value any) Op { return Op{"op": "replace", "path": path, "value": value} }

// Remove removes the value at path, which must exist.
func Remove(path string) Op { return Op{"op": "remove", "path": path} }

var escaper = strings.NewReplacer("~", "~0", "/", "~1")

// Escape escapes one reference token of a JSON pointer (RFC 6901), such as an annotation key.
func Escape(token string) string { return escaper.Replace(token) }

// Apply sends ops as a JSON patch to obj, of resource gr, and writes the response into obj. A failed test,
// which the API server answers 422 Unprocessable Entity, is returned as a conflict, so that a caller replans
// from a fresh read as it does after any lost race.
func Apply(ctx context.Context, c client.Writer, gr schema.GroupResource, obj client.Object, ops []Op) error {
	raw, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encoding a JSON patch of %s: %w", gr, err)
	}
	err = c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, raw))
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code == http.StatusUnprocessableEntity {
		return apierrors.NewConflict(gr, obj.GetName(), err)
	}
	return err
}
