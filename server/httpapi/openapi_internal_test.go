package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
)

// TestOpenAPI_SchemasMatchTheTypes keeps every documented body schema's
// properties and the JSON fields of the type that decodes or encodes it in
// step, both ways, so that a field added to one is added to the other.
func TestOpenAPI_SchemasMatchTheTypes(t *testing.T) {
	t.Parallel()
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPISpec, &spec); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		schema string
		fields []string
	}{
		{"MemoryInput", jsonFields(reflect.TypeFor[memoryIn]())},
		{"MemoryPatch", jsonFields(reflect.TypeFor[patchRequest]())},
		{"Memory", jsonFields(reflect.TypeFor[mnemo.Memory]())},
		{"RecallRequest", jsonFields(reflect.TypeFor[recallRequest]())},
		{"Result", jsonFields(reflect.TypeFor[RecallResult]())},
		{"Settings", mnemo.SettingNames()},
		{"Settings", jsonFields(reflect.TypeFor[mnemo.Settings]())},
		{"SettingsPatch", append(mnemo.SettingNames(), paramProfile)},
		{"SettingsOverride", mnemo.SettingNames()},
		{"Leg", jsonFields(reflect.TypeFor[mnemo.LegDetail]())},
		{"ListResponse", jsonFields(reflect.TypeFor[listResponse]())},
		{"RecallResponse", jsonFields(reflect.TypeFor[RecallResponse]())},
		{"SearchResponse", jsonFields(reflect.TypeFor[searchResponse]())},
		{"Error", jsonFields(reflect.TypeFor[errorBody]())},
		{"Deleted", jsonFields(reflect.TypeFor[deletedResponse]())},
		{"EvalRequest", jsonFields(reflect.TypeFor[evalRequest]())},
		{"ProfileDeleted", jsonFields(reflect.TypeFor[profileDeletedResponse]())},
	} {
		var documented []string
		for p := range spec.Components.Schemas[c.schema].Properties {
			documented = append(documented, p)
		}
		slices.Sort(documented)
		want := slices.Sorted(slices.Values(c.fields))
		if !slices.Equal(documented, want) {
			t.Errorf("schema %s documents %v; the type has %v", c.schema, documented, want)
		}
	}
}

// jsonFields returns the JSON names of t's fields (those of embedded
// structs included), leaving out skip.
func jsonFields(t reflect.Type, skip ...string) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			out = append(out, jsonFields(f.Type, skip...)...)
		case name == "" || !f.IsExported():
		case !slices.Contains(skip, name):
			out = append(out, name)
		}
	}
	return out
}

// alwaysPresent returns the JSON names of t's fields that every encoding
// of a t holds: those without omitempty (embedded structs' included).
func alwaysPresent(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			out = append(out, alwaysPresent(f.Type)...)
		case name == "" || !f.IsExported():
		case !slices.Contains(strings.Split(opts, ","), "omitempty") && !slices.Contains(strings.Split(opts, ","), "omitzero"):
			out = append(out, name)
		}
	}
	return out
}

// TestOpenAPI_RequiredAreTheFieldsAlwaysSent: every response schema
// requires exactly the fields that the type the server encodes always
// holds (no omitempty), so that a generated client's types make optional
// only what may be absent.
func TestOpenAPI_RequiredAreTheFieldsAlwaysSent(t *testing.T) {
	t.Parallel()
	type schema struct {
		Required []string `json:"required"`
		OneOf    []schema `json:"oneOf"`
	}
	var spec struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPISpec, &spec); err != nil {
		t.Fatal(err)
	}
	sc := spec.Components.Schemas
	for _, c := range []struct {
		schema string
		s      schema
		typ    reflect.Type
	}{
		{"Memory", sc["Memory"], reflect.TypeFor[mnemo.Memory]()},
		{"Result", sc["Result"], reflect.TypeFor[RecallResult]()},
		{"Leg", sc["Leg"], reflect.TypeFor[mnemo.LegDetail]()},
		{"ListResponse", sc["ListResponse"], reflect.TypeFor[listResponse]()},
		{"RecallResponse", sc["RecallResponse"], reflect.TypeFor[RecallResponse]()},
		{"SearchResponse", sc["SearchResponse"], reflect.TypeFor[searchResponse]()},
		{"Created.oneOf[0]", sc["Created"].OneOf[0], reflect.TypeFor[createdOne]()},
		{"Created.oneOf[1]", sc["Created"].OneOf[1], reflect.TypeFor[createdMany]()},
		{"Deleted", sc["Deleted"], reflect.TypeFor[deletedResponse]()},
		{"ProfileDeleted", sc["ProfileDeleted"], reflect.TypeFor[profileDeletedResponse]()},
		{"Error", sc["Error"], reflect.TypeFor[errorBody]()},
		{"Settings", sc["Settings"], reflect.TypeFor[mnemo.Settings]()},
	} {
		got := slices.Sorted(slices.Values(c.s.Required))
		want := slices.Sorted(slices.Values(alwaysPresent(c.typ)))
		if !slices.Equal(got, want) {
			t.Errorf("schema %s requires %v; the server always sends %v", c.schema, got, want)
		}
	}
}

// TestOpenAPI_ObjectsSayWhatTheyHold: no object schema is left bare
// ({"type": "object"} alone), which generators read as an object with no
// members (openapi-typescript: Record<string, never>); one of any members
// says additionalProperties.
func TestOpenAPI_ObjectsSayWhatTheyHold(t *testing.T) {
	t.Parallel()
	var doc any
	if err := json.Unmarshal(openAPISpec, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			isObject := x["type"] == "object"
			if ts, ok := x["type"].([]any); ok {
				isObject = slices.Contains(ts, any("object"))
			}
			if isObject {
				_, props := x["properties"]
				_, extra := x["additionalProperties"]
				_, one := x["oneOf"]
				if !props && !extra && !one {
					t.Errorf("%s: an object schema that names neither its properties nor additionalProperties", path)
				}
			}
			for k, c := range x {
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s/%d", path, i), c)
			}
		}
	}
	walk("#", doc)
}

// TestOpenAPI_RequestFieldsHaveNoDefaultKeyword: the schemas of request
// bodies give their defaults in descriptions, not as "default", which
// generators (openapi-typescript) read as a field always present, making
// an optional field required.
func TestOpenAPI_RequestFieldsHaveNoDefaultKeyword(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	if err := json.Unmarshal(openAPISpec, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	seen := map[string]bool{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["default"]; ok {
				t.Errorf("%s: a request schema with a default keyword", path)
			}
			if ref, ok := x["$ref"].(string); ok {
				name, found := strings.CutPrefix(ref, "#/components/schemas/")
				if found && !seen[name] {
					seen[name] = true
					walk(ref, schemas[name])
				}
			}
			for k, c := range x {
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s/%d", path, i), c)
			}
		}
	}
	for p, ops := range doc["paths"].(map[string]any) {
		for m, op := range ops.(map[string]any) {
			if o, ok := op.(map[string]any); ok && o["requestBody"] != nil {
				walk(p+" "+m, o["requestBody"])
			}
		}
	}
	if !seen["MemoryInput"] || !seen["RecallRequest"] || !seen["SettingsPatch"] {
		t.Errorf("the walk missed request schemas: it saw %v", seen)
	}
}
