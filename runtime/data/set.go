package data

import (
	"fmt"
	"strings"
	"sync"
)

// setSource locates the entries of a value given on the command line by
// a flag (--set, --init).
type setSource struct{ flag string }

func (s setSource) file() string               { return s.flag }
func (setSource) describe(v *Value) string     { return v.Name }
func (setSource) where(v *Value, k int) string { return v.Name + indexSuffix(v.Index(k)) }

// ParseSet parses the argument of --set name=value. The value is a number as
// in a CSV cell (3, -2.5, 1e-3, inf, nan) or a JSON array of numbers as in a
// JSON data file ([1, 2.5, "NaN"], [[1, 2], [3, 4]]); spaces around the name
// and the value are ignored. The result's provenance is "--set name".
func ParseSet(arg string) (*Value, error) { return ParseFlag("--set", arg) }

// ParseFlag is ParseSet for the command-line flag flag ("--set",
// "--init") or the REPL command (":set", ":lp") that gives the value,
// which its messages and the value's provenance name.
func ParseFlag(flag, arg string) (*Value, error) {
	eq := strings.IndexByte(arg, '=')
	if eq < 0 {
		return nil, fmt.Errorf("%s %s: expected name=value", flag, quoteText(arg))
	}
	name := strings.TrimSpace(arg[:eq])
	text := strings.TrimSpace(arg[eq+1:])
	if !isIdentifier(name) {
		if name == "" {
			return nil, fmt.Errorf("%s %s: the name before '=' is missing", flag, quoteText(arg))
		}
		return nil, fmt.Errorf("%s %s: %s is not a variable name", flag, quoteText(arg), quoteText(name))
	}
	if text == "" {
		return nil, fmt.Errorf("%s %s: the value after '=' is missing", flag, name)
	}
	v := &Value{Name: name, src: setSource{flag: flag}}
	if text[0] == '[' || text[0] == '"' {
		p := &jsonParser{b: text, setName: name, setFlag: flag}
		jv, err := p.parseNamedValue(name)
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos < len(p.b) {
			return nil, fmt.Errorf("%s %s: unexpected %s after the value", flag, name, p.found())
		}
		v.Dims, v.Data, v.IsInt = jv.Dims, jv.Data, jv.IsInt
		v.realAt, v.realText = jv.realAt, jv.realText
		return v, nil
	}
	f, isInt, err := parseCell(text)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", flag, name, err)
	}
	v.Data, v.IsInt = []float64{f}, isInt
	if !isInt {
		v.noteReal(0, text)
	}
	return v, nil
}

// A Set gathers the values of the data files and --set arguments of a run.
// The zero Set is empty and ready to use. Once filled, it may be read by
// several goroutines (the chains of a run look up their initial values at
// once): Lookup, Names and Unused are safe for concurrent use.
type Set struct {
	fromFile map[string]*Value
	fromSet  map[string]*Value
	order    []string // names in the order they were first added

	mu   sync.Mutex      // guards used
	used map[string]bool // names looked up

	notes []string // what Load noted: a --set replacing a file's value
}

// Notes returns the notes of Load: one line for each --set argument that
// replaces a value of a data file ("--set lambda=5 replaces the value in
// d.json (key "lambda")"), to be printed as warnings.
func (s *Set) Notes() []string {
	return append([]string(nil), s.notes...)
}

// AddFile adds the values read from one data file. A name that a file added
// before (or the list itself) already gives is an error naming both places,
// and the Set is left unchanged.
func (s *Set) AddFile(values []*Value) error {
	seen := map[string]*Value{}
	for _, v := range values {
		prev := s.fromFile[v.Name]
		if prev == nil {
			prev = seen[v.Name]
		}
		if prev != nil {
			return fmt.Errorf("%s is given twice: in %s and in %s", v.Name, prev.placeInFile(), v.placeInFile())
		}
		seen[v.Name] = v
	}
	if s.fromFile == nil {
		s.fromFile = map[string]*Value{}
	}
	for _, v := range values {
		s.addName(v.Name)
		s.fromFile[v.Name] = v
	}
	return nil
}

// AddSet adds a value given by --set. It takes precedence over a value of
// the same name from a file, whatever the order in which they were added,
// and replaces one from an earlier --set.
func (s *Set) AddSet(v *Value) {
	if s.fromSet == nil {
		s.fromSet = map[string]*Value{}
	}
	s.addName(v.Name)
	s.fromSet[v.Name] = v
}

func (s *Set) addName(name string) {
	if s.fromFile[name] == nil && s.fromSet[name] == nil {
		s.order = append(s.order, name)
	}
}

// Lookup returns the value of the given name and records the name as used.
func (s *Set) Lookup(name string) (*Value, bool) {
	v := s.value(name)
	if v == nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used == nil {
		s.used = map[string]bool{}
	}
	s.used[name] = true
	return v, true
}

func (s *Set) value(name string) *Value {
	if v := s.fromSet[name]; v != nil {
		return v
	}
	return s.fromFile[name]
}

// Names returns the names of all values in the order they were first added.
func (s *Set) Names() []string {
	return append([]string(nil), s.order...)
}

// Unused returns the values that were never looked up, in the order their
// names were first added, so that the caller can warn about data the model
// does not declare.
func (s *Set) Unused() []*Value {
	s.mu.Lock()
	defer s.mu.Unlock()
	var unused []*Value
	for _, name := range s.order {
		if !s.used[name] {
			unused = append(unused, s.value(name))
		}
	}
	return unused
}
