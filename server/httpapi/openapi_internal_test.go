package httpapi

import (
	"encoding/json"
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
