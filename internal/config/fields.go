package config

import (
	"fmt"
	"reflect"
	"strings"
)

// Field describes one configuration key: its dotted YAML path, WH_* variable, Go type, default and
// description. docs/configuration.md is generated from this list and tested against it.
type Field struct {
	Key         string
	Env         string
	Type        string
	Default     string
	Description string
}

// Fields lists every leaf key of Config in declaration order.
func Fields() []Field {
	var out []Field
	walkFields(reflect.ValueOf(Default()), "", "", &out)
	return out
}

var (
	durationType = reflect.TypeOf(Duration(0))
	rolesType    = reflect.TypeOf(Roles(nil))
	shardsType   = reflect.TypeOf(ClusterShards(nil))
)

func walkFields(v reflect.Value, path, envPrefix string, out *[]Field) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key := joinKey(path, yamlName(f))
		fv := v.Field(i)
		if f.Type.Kind() == reflect.Struct {
			walkFields(fv, key, envPrefix+f.Tag.Get("env-prefix"), out)
			continue
		}
		*out = append(*out, Field{
			Key:         key,
			Env:         envPrefix + f.Tag.Get("env"),
			Type:        typeName(f.Type),
			Default:     defaultString(fv),
			Description: f.Tag.Get("env-description"),
		})
	}
}

func typeName(t reflect.Type) string {
	switch t {
	case durationType:
		return "duration"
	case rolesType:
		return "list of roles"
	case shardsType:
		return "list of shards"
	}
	if t.Kind() == reflect.Slice {
		return "list of " + t.Elem().Kind().String()
	}
	return t.Kind().String()
}

func defaultString(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case Duration:
		return x.String()
	case Roles:
		return x.String()
	case ClusterShards:
		return x.String()
	case []string:
		return strings.Join(x, ",")
	}
	return fmt.Sprint(v.Interface())
}
