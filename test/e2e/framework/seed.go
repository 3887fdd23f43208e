package framework

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Header directives of a seed file, each on a leading comment line.
const (
	seedLinePrefix       = "# seed line "
	fragmentPrefix       = "# fragment:"
	expectRejectedPrefix = "# expect-rejected:"
)

// Seed is one example taken from the seed document.
type Seed struct {
	// File is the file's base name.
	File string
	// Line is the line of the seed document the example starts at.
	Line int
	// Fragment explains why the example is not a complete object; empty
	// for complete objects.
	Fragment string
	// ExpectRejected is text the admission error must contain, for examples
	// that upstream's webhooks refuse.
	ExpectRejected string
	// Objects are the documents of the file; a complete example has one.
	Objects []*unstructured.Unstructured
}

// Object is the single object of a complete example.
func (s Seed) Object() *unstructured.Unstructured {
	return s.Objects[0]
}

// LoadSeeds parses every *.yaml file directly in dir, in name order.
func LoadSeeds(dir string) ([]Seed, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	sort.Strings(paths)
	seeds := make([]Seed, 0, len(paths))
	for _, p := range paths {
		s, err := LoadSeed(p)
		if err != nil {
			return nil, err
		}
		seeds = append(seeds, s)
	}
	return seeds, nil
}

// LoadSeed parses one seed file.
func LoadSeed(path string) (Seed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Seed{}, fmt.Errorf("reading seed: %w", err)
	}
	s, err := ParseSeed(filepath.Base(path), data)
	if err != nil {
		return Seed{}, fmt.Errorf("seed %s: %w", path, err)
	}
	return s, nil
}

// ParseSeed reads the header and the documents of a seed file.
func ParseSeed(name string, data []byte) (Seed, error) {
	s := Seed{File: name}
	if err := s.parseHeader(data); err != nil {
		return Seed{}, err
	}
	objs, err := DecodeDocuments(data)
	if err != nil {
		return Seed{}, err
	}
	s.Objects = objs
	return s, s.validate()
}

func (s *Seed) parseHeader(data []byte) error {
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		if err := s.parseDirective(line); err != nil {
			return err
		}
	}
	if s.Line == 0 {
		return fmt.Errorf("missing %q header", strings.TrimSpace(seedLinePrefix)+" N")
	}
	return nil
}

func (s *Seed) parseDirective(line string) error {
	switch {
	case strings.HasPrefix(line, seedLinePrefix):
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, seedLinePrefix)))
		if err != nil || n <= 0 {
			return fmt.Errorf("bad header %q", line)
		}
		s.Line = n
	case strings.HasPrefix(line, fragmentPrefix):
		s.Fragment = strings.TrimSpace(strings.TrimPrefix(line, fragmentPrefix))
	case strings.HasPrefix(line, expectRejectedPrefix):
		s.ExpectRejected = strings.TrimSpace(strings.TrimPrefix(line, expectRejectedPrefix))
	}
	return nil
}

func (s *Seed) validate() error {
	if len(s.Objects) == 0 {
		return errors.New("no object")
	}
	if s.Fragment != "" {
		if s.ExpectRejected != "" {
			return errors.New("a fragment cannot expect a rejection")
		}
		return nil
	}
	if len(s.Objects) != 1 {
		return fmt.Errorf("a complete example holds one object, found %d", len(s.Objects))
	}
	if s.Object().GetName() == "" {
		return errors.New("a complete example needs metadata.name (or a fragment header)")
	}
	return nil
}

// DecodeDocuments splits YAML into objects, skipping empty documents.
// Duplicate keys are an error.
func DecodeDocuments(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML: %w", err)
		}
		obj, err := decodeDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", len(objs)+1, err)
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
}

func decodeDocument(doc []byte) (*unstructured.Unstructured, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("converting YAML: %w", err)
	}
	if string(bytes.TrimSpace(js)) == "null" {
		return nil, nil
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(js); err != nil {
		return nil, fmt.Errorf("decoding object: %w", err)
	}
	return obj, nil
}

// serverWritten are metadata fields that only the server sets; an object
// copied from `kubectl get -o yaml` carries them.
var serverWritten = []string{"creationTimestamp", "generation", "resourceVersion", "uid", "managedFields", "selfLink"}

// ForApply returns a copy of obj ready to be applied: without status,
// server-written metadata and null fields. A null in YAML is an unset field;
// create drops it, but server-side apply rejects it where the schema wants
// a value.
func ForApply(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	unstructured.RemoveNestedField(out.Object, "status")
	for _, f := range serverWritten {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	dropNulls(out.Object)
	return out
}

// dropNulls removes null map entries at any depth.
func dropNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range t {
			dropNulls(e)
		}
	}
}
