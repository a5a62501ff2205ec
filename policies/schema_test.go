package policies

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The JSON Schema describes exactly the fields the loader reads.
func TestSchemaMatchesLoader(t *testing.T) {
	t.Parallel()
	var schema map[string]any
	if err := json.Unmarshal(Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	defs, _ := schema["$defs"].(map[string]any)
	resolve := func(node map[string]any) map[string]any {
		for {
			ref, ok := node["$ref"].(string)
			if !ok {
				return node
			}
			node = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
	}
	var check func(path string, typ reflect.Type, node map[string]any)
	check = func(path string, typ reflect.Type, node map[string]any) {
		node = resolve(node)
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch typ.Kind() {
		case reflect.Slice:
			items, ok := node["items"].(map[string]any)
			if !ok {
				if typ.Elem().Kind() == reflect.Struct {
					t.Errorf("%s: schema has no items", path)
				}
				return
			}
			check(path+"[]", typ.Elem(), items)
		case reflect.Struct:
			props, _ := node["properties"].(map[string]any)
			if node["additionalProperties"] != false {
				t.Errorf("%s: schema allows additional properties, the loader does not", path)
			}
			var fields []string
			for i := 0; i < typ.NumField(); i++ {
				f := typ.Field(i)
				tag := f.Tag.Get("mapstructure")
				fields = append(fields, tag)
				sub, ok := props[tag].(map[string]any)
				if !ok {
					if path == ".default" && (tag == "base_url" || tag == "provider" || tag == "model") {
						continue
					}
					t.Errorf("%s.%s: in the loader, not in the schema", path, tag)
					continue
				}
				check(path+"."+tag, f.Type, sub)
			}
			for k := range props {
				if !slices.Contains(fields, k) {
					t.Errorf("%s.%s: in the schema, not in the loader", path, k)
				}
			}
		case reflect.Map:
			// inbound.signals: the schema lists the known signals.
			props, _ := node["properties"].(map[string]any)
			for _, sig := range Signals() {
				if _, ok := props[strings.TrimPrefix(sig, "inbound.")]; !ok {
					t.Errorf("%s: signal %s missing from the schema", path, sig)
				}
			}
		}
	}
	check("", reflect.TypeOf(rawPolicy{}), schema)
}
