// Package statuspatch builds the status patches the workload controllers send. A workload's status is written
// whole: a diff would leave out the counters that stay 0, which the schemas require, and a plain merge patch
// would keep fields the new status omits when empty.
package statuspatch

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Replacing is the merge patch that turns status old into next: next whole, and null for each top-level field
// only old has.
func Replacing(old, next any) ([]byte, error) {
	oldFields, err := fieldsOf(old)
	if err != nil {
		return nil, err
	}
	nextFields, err := fieldsOf(next)
	if err != nil {
		return nil, err
	}
	for k := range oldFields {
		if _, ok := nextFields[k]; !ok {
			nextFields[k] = nil
		}
	}
	raw, err := json.Marshal(map[string]any{"status": nextFields})
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	return raw, nil
}

func fieldsOf(status any) (map[string]any, error) {
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	fields := map[string]any{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("decode status: %w", err)
	}
	return fields, nil
}

// LockedTo adds metadata.resourceVersion to a merge patch: the apiserver then applies it only to that
// version, so a status computed from a stale copy conflicts instead of overwriting a newer one.
func LockedTo(patch []byte, resourceVersion string) ([]byte, error) {
	doc := map[string]any{}
	if err := json.Unmarshal(patch, &doc); err != nil {
		return nil, fmt.Errorf("decode status patch: %w", err)
	}
	doc["metadata"] = map[string]any{"resourceVersion": resourceVersion}
	return json.Marshal(doc)
}

// Write replaces obj's status, old before, with next: the Replacing patch, sent by send.
func Write(ctx context.Context, c client.Client, obj client.Object, old, next any) error {
	patch, err := Replacing(old, next)
	if err != nil {
		return err
	}
	return send(ctx, c, obj, patch)
}

// WriteLocked is Write applied only to obj's resource version (LockedTo): a status computed from a stale copy
// conflicts.
func WriteLocked(ctx context.Context, c client.Client, obj client.Object, old, next any) error {
	patch, err := Replacing(old, next)
	if err == nil {
		patch, err = LockedTo(patch, obj.GetResourceVersion())
	}
	if err != nil {
		return err
	}
	return send(ctx, c, obj, patch)
}

// send applies a status merge patch to obj. An object deleted meanwhile is not an error: its reconcile is
// over, and an error would only retry its name with backoff, which a new object of that name then inherits.
func send(ctx context.Context, c client.Client, obj client.Object, patch []byte) error {
	err := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("patch status: %w", err)
	}
	return nil
}
