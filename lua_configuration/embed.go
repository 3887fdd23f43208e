// Package luaconfiguration holds the built-in traffic-routing Lua scripts as data: one per ingress class under
// trafficrouting_ingress/<class>.lua and one per custom network kind under <group>/<Kind>/trafficRouting.lua,
// the paths upstream uses. Each script ships YAML cases in a testdata directory next to it.
package luaconfiguration

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed trafficrouting_ingress/*.lua */*/trafficRouting.lua
var scripts embed.FS

// Ingress returns the built-in script for an ingress class, such as "nginx".
func Ingress(class string) (string, bool) {
	return read("trafficrouting_ingress/"+class+".lua", class)
}

// Custom returns the built-in script for a custom network object, such as group "networking.istio.io" and
// kind "VirtualService".
func Custom(group, kind string) (string, bool) {
	return read(group+"/"+kind+"/trafficRouting.lua", group, kind)
}

// read returns the embedded file at name; names built from parts holding a separator are not looked up.
func read(name string, parts ...string) (string, bool) {
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, `/\`) || !fs.ValidPath(p) {
			return "", false
		}
	}
	data, err := scripts.ReadFile(name)
	if err != nil {
		return "", false
	}
	return string(data), true
}
