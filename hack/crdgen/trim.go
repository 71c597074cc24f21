package main

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// removeCRDDescriptions clears the description of every schema node in every version
// of crd. Descriptions are most of a kubebuilder CRD's bytes and serve only `kubectl
// explain`; without removing them the Argo CD CRDs do not fit in a ManifestWork.
func removeCRDDescriptions(crd *apiextensionsv1.CustomResourceDefinition) {
	for i := range crd.Spec.Versions {
		if schema := crd.Spec.Versions[i].Schema; schema != nil {
			removeSchemaDescriptions(schema.OpenAPIV3Schema)
		}
	}
}

// removeSchemaDescriptions clears the Description field of schema and of every schema
// nested in it. A property that happens to be *named* "description" is a key of
// Properties and stays: only its own Description field is cleared.
func removeSchemaDescriptions(schema *apiextensionsv1.JSONSchemaProps) {
	if schema == nil {
		return
	}
	schema.Description = ""

	if schema.Items != nil {
		removeSchemaDescriptions(schema.Items.Schema)
		removeSliceDescriptions(schema.Items.JSONSchemas)
	}
	removeSliceDescriptions(schema.AllOf)
	removeSliceDescriptions(schema.AnyOf)
	removeSliceDescriptions(schema.OneOf)
	removeSchemaDescriptions(schema.Not)
	removeMapDescriptions(schema.Properties)
	removeMapDescriptions(schema.PatternProperties)
	removeMapDescriptions(schema.Definitions)
	if schema.AdditionalProperties != nil {
		removeSchemaDescriptions(schema.AdditionalProperties.Schema)
	}
	if schema.AdditionalItems != nil {
		removeSchemaDescriptions(schema.AdditionalItems.Schema)
	}
	for name, dependency := range schema.Dependencies {
		removeSchemaDescriptions(dependency.Schema)
		schema.Dependencies[name] = dependency
	}
}

func removeSliceDescriptions(schemas []apiextensionsv1.JSONSchemaProps) {
	for i := range schemas {
		removeSchemaDescriptions(&schemas[i])
	}
}

// removeMapDescriptions handles maps of schemas by value: each entry is copied out,
// trimmed and stored back, since map values are not addressable.
func removeMapDescriptions[M ~map[string]apiextensionsv1.JSONSchemaProps](schemas M) {
	for name, schema := range schemas {
		removeSchemaDescriptions(&schema)
		schemas[name] = schema
	}
}
