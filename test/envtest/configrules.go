package envtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// configCRDs are the CRDs whose spec.config admission checks.
var configCRDs = []string{"valkeyclusters.valkey.io", "valkeynodes.valkey.io"}

// WithoutConfigRules takes the rules of spec.config (its CEL rules and its values'
// maxLength) out of the ValkeyCluster and ValkeyNode CRDs, as on a cluster whose CRDs
// predate them, and returns the function that puts them back. Each returns once the API
// server acts on the change. For the specs of what the controllers do with a spec.config
// that admission refuses now but an older CRD let through.
func WithoutConfigRules(ctx context.Context, c client.Client) (restore func(context.Context) error, err error) {
	saved := map[string]map[string]any{}
	for _, name := range configCRDs {
		if err := editConfigSchema(ctx, c, name, func(config map[string]any) {
			saved[name] = runtime.DeepCopyJSON(config)
			delete(config, "x-kubernetes-validations")
			if values, ok := config["additionalProperties"].(map[string]any); ok {
				delete(values, "maxLength")
			}
		}); err != nil {
			return nil, err
		}
	}
	if err := untilDryRun(ctx, c, true); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		for _, name := range configCRDs {
			if err := editConfigSchema(ctx, c, name, func(config map[string]any) {
				clear(config)
				for k, v := range saved[name] {
					config[k] = v
				}
			}); err != nil {
				return err
			}
		}
		return untilDryRun(ctx, c, false)
	}, nil
}

// editConfigSchema changes the schema of spec.config in the CRD of the given name.
func editConfigSchema(ctx context.Context, c client.Client, name string, edit func(map[string]any)) error {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return fmt.Errorf("get CRD %s: %w", name, err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) != 1 {
		return fmt.Errorf("CRD %s has %d versions, want 1", name, len(versions))
	}
	version := versions[0].(map[string]any)
	path := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "config"}
	config, ok, _ := unstructured.NestedMap(version, path...)
	if !ok {
		return fmt.Errorf("CRD %s has no spec.config", name)
	}
	edit(config)
	if err := unstructured.SetNestedMap(version, config, path...); err != nil {
		return err
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		return err
	}
	if err := c.Update(ctx, crd); err != nil {
		return fmt.Errorf("update CRD %s: %w", name, err)
	}
	return nil
}

// untilDryRun waits until the API server admits a ValkeyCluster and a ValkeyNode with
// spec.config {dir: /tmp} (admit) or refuses both (!admit).
func untilDryRun(ctx context.Context, c client.Client, admit bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var errs []error
		for _, kind := range []string{"ValkeyCluster", "ValkeyNode"} {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "valkey.io/v1alpha1", "kind": kind,
				"metadata": map[string]any{"name": "probe-" + rand.String(5), "namespace": metav1.NamespaceDefault},
				"spec":     map[string]any{"shards": int64(1), "config": map[string]any{"dir": "/tmp"}},
			}}
			if kind == "ValkeyNode" {
				unstructured.RemoveNestedField(u.Object, "spec", "shards")
			}
			switch err := c.Create(ctx, u, client.DryRunAll); {
			case admit && err != nil:
				errs = append(errs, fmt.Errorf("%s with spec.config {dir: /tmp} refused: %w", kind, err))
			case !admit && err == nil:
				errs = append(errs, fmt.Errorf("%s with spec.config {dir: /tmp} admitted", kind))
			}
		}
		if len(errs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
