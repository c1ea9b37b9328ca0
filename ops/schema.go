package ops

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
)

// ArgType is the type of an operator argument as written in a pipeline.
type ArgType uint8

const (
	IntArg ArgType = iota + 1
	FloatArg
	StringArg
	BoolArg
	IntsArg
	FloatsArg
)

var argTypeNames = [...]string{IntArg: "int", FloatArg: "float", StringArg: "string", BoolArg: "bool", IntsArg: "ints", FloatsArg: "floats"}

func (t ArgType) String() string {
	if int(t) < len(argTypeNames) && argTypeNames[t] != "" {
		return argTypeNames[t]
	}
	return fmt.Sprintf("ArgType(%d)", uint8(t))
}

// Value is one argument value. Exactly the field matching Type is meaningful.
type Value struct {
	Type   ArgType
	Int    int64
	Float  float64
	Str    string
	Bool   bool
	Ints   []int64
	Floats []float64
}

func (v Value) String() string {
	switch v.Type {
	case IntArg:
		return fmt.Sprint(v.Int)
	case FloatArg:
		return fmt.Sprint(v.Float)
	case StringArg:
		return fmt.Sprintf("%q", v.Str)
	case BoolArg:
		return fmt.Sprint(v.Bool)
	case IntsArg:
		return fmt.Sprint(v.Ints)
	case FloatsArg:
		return fmt.Sprint(v.Floats)
	}
	return "<unset>"
}

// ArgSpec declares one argument of an operator.
type ArgSpec struct {
	Name     string
	Type     ArgType
	Doc      string
	Required bool
	Default  Value // used when the argument is absent and not Required

	// Enum lists the accepted values of a string argument (compared
	// case-insensitively; the canonical spelling is kept).
	Enum []string
	// Min and Max bound numbers, and every element of a list. Both zero
	// means unbounded.
	Min, Max float64
	// Lens lists the accepted lengths of a list argument; empty accepts
	// any non-empty list.
	Lens []int
}

// Port is one input or output of an operator.
type Port struct {
	Name string
	Doc  string
}

// Schema declares an operator: its ports and arguments, and how to build it.
type Schema struct {
	Name    string
	Doc     string
	Inputs  []Port
	Outputs []Port
	Args    []ArgSpec
	// New builds the operator from checked arguments (every declared
	// argument is present, defaults filled in). It may still reject
	// combinations of arguments.
	New func(a Args) (Op, error)
}

// Arg returns the spec of the named argument, or nil.
func (s *Schema) Arg(name string) *ArgSpec {
	for i := range s.Args {
		if s.Args[i].Name == name {
			return &s.Args[i]
		}
	}
	return nil
}

// Output returns the index of the named output port, or -1.
func (s *Schema) Output(name string) int {
	for i, p := range s.Outputs {
		if p.Name == name {
			return i
		}
	}
	return -1
}

var (
	regMu    sync.RWMutex
	registry = map[string]*Schema{}
)

// Register makes an operator known under its schema's name. Operators call
// it from init, as image formats do in Go's image package.
func Register(s *Schema) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[s.Name]; dup {
		panic("ops: operator registered twice: " + s.Name)
	}
	registry[s.Name] = s
}

// Lookup returns the schema of an operator, or nil.
func Lookup(name string) *Schema {
	regMu.RLock()
	defer regMu.RUnlock()
	return registry[name]
}

// Names lists the registered operators, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Args holds an operator's checked arguments by name.
type Args map[string]Value

func (a Args) Int(name string) int          { return int(a[name].Int) }
func (a Args) Float(name string) float64    { return a[name].Float }
func (a Args) Str(name string) string       { return a[name].Str }
func (a Args) Bool(name string) bool        { return a[name].Bool }
func (a Args) Floats(name string) []float64 { return a[name].Floats }

// Ints returns a list argument as ints.
func (a Args) Ints(name string) []int {
	v := a[name].Ints
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// Has reports whether the argument was given explicitly or has a default.
func (a Args) Has(name string) bool {
	_, ok := a[name]
	return ok
}

// OneOf returns which of the named arguments op was given, where it needs
// exactly one: none, or two, is an ArgError naming them all.
func (a Args) OneOf(op string, names ...string) (string, error) {
	given := ""
	for _, n := range names {
		if !a.Has(n) {
			continue
		}
		if given != "" {
			return "", &ArgError{n, fmt.Sprintf("conflicts with %s: give only one of %s", given, orList(names))}
		}
		given = n
	}
	if given == "" {
		return "", &ArgError{names[0], fmt.Sprintf("%s needs one of %s", op, orList(names))}
	}
	return given, nil
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ArgError names the argument that is wrong and why.
type ArgError struct {
	Arg string
	Msg string
}

func (e *ArgError) Error() string {
	if e.Arg == "" {
		return e.Msg
	}
	return fmt.Sprintf("argument %q: %s", e.Arg, e.Msg)
}

// Check validates raw arguments against the schema: unknown names, types,
// ranges, enums and list lengths. It returns the arguments with defaults
// filled in. An int is accepted where a float is declared, and an int list
// where a float list is.
func (s *Schema) Check(raw Args) (Args, error) {
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(Args, len(s.Args))
	for _, n := range names {
		spec := s.Arg(n)
		if spec == nil {
			return nil, &ArgError{n, fmt.Sprintf("unknown argument of %s (known: %s)", s.Name, s.argNames())}
		}
		v, err := spec.check(raw[n])
		if err != nil {
			return nil, &ArgError{n, err.Error()}
		}
		out[n] = v
	}
	for _, spec := range s.Args {
		if _, ok := out[spec.Name]; ok {
			continue
		}
		if spec.Required {
			return nil, &ArgError{spec.Name, "required argument of " + s.Name + " is missing"}
		}
		if spec.Default.Type != 0 {
			out[spec.Name] = spec.Default
		}
	}
	return out, nil
}

func (s *Schema) argNames() string {
	n := make([]string, len(s.Args))
	for i, a := range s.Args {
		n[i] = a.Name
	}
	return strings.Join(n, ", ")
}

func (spec *ArgSpec) check(v Value) (Value, error) {
	// Widen ints to floats where floats are declared.
	switch {
	case spec.Type == FloatArg && v.Type == IntArg:
		v = Value{Type: FloatArg, Float: float64(v.Int)}
	case spec.Type == FloatsArg && v.Type == IntsArg:
		f := make([]float64, len(v.Ints))
		for i, x := range v.Ints {
			f[i] = float64(x)
		}
		v = Value{Type: FloatsArg, Floats: f}
	case spec.Type == FloatsArg && (v.Type == FloatArg || v.Type == IntArg):
		x := v.Float
		if v.Type == IntArg {
			x = float64(v.Int)
		}
		v = Value{Type: FloatsArg, Floats: []float64{x}}
	case spec.Type == IntsArg && v.Type == IntArg:
		v = Value{Type: IntsArg, Ints: []int64{v.Int}}
	}
	if v.Type != spec.Type {
		return v, fmt.Errorf("wants %s, got %s %s", spec.Type, v.Type, v)
	}
	switch v.Type {
	case IntArg:
		return v, spec.bound(float64(v.Int))
	case FloatArg:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return v, fmt.Errorf("%v is not a finite number", v.Float)
		}
		return v, spec.bound(v.Float)
	case StringArg:
		if len(spec.Enum) == 0 {
			return v, nil
		}
		for _, e := range spec.Enum {
			if strings.EqualFold(e, v.Str) {
				v.Str = e
				return v, nil
			}
		}
		return v, fmt.Errorf("%q is not one of %s", v.Str, strings.Join(spec.Enum, ", "))
	case IntsArg:
		if err := spec.length(len(v.Ints)); err != nil {
			return v, err
		}
		for _, x := range v.Ints {
			if err := spec.bound(float64(x)); err != nil {
				return v, err
			}
		}
	case FloatsArg:
		if err := spec.length(len(v.Floats)); err != nil {
			return v, err
		}
		for _, x := range v.Floats {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return v, fmt.Errorf("%v is not a finite number", x)
			}
			if err := spec.bound(x); err != nil {
				return v, err
			}
		}
	}
	return v, nil
}

func (spec *ArgSpec) bound(x float64) error {
	if spec.Min == 0 && spec.Max == 0 {
		return nil
	}
	if x < spec.Min || x > spec.Max {
		return fmt.Errorf("%v is out of range [%v, %v]", x, spec.Min, spec.Max)
	}
	return nil
}

func (spec *ArgSpec) length(n int) error {
	if n == 0 {
		return fmt.Errorf("empty list")
	}
	if len(spec.Lens) == 0 {
		return nil
	}
	for _, l := range spec.Lens {
		if l == n {
			return nil
		}
	}
	return fmt.Errorf("list of %d values; wants %s", n, joinInts(spec.Lens, " or "))
}

func joinInts(v []int, sep string) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}

// Convenience constructors for defaults.
func IntVal(x int64) Value         { return Value{Type: IntArg, Int: x} }
func FloatVal(x float64) Value     { return Value{Type: FloatArg, Float: x} }
func StrVal(s string) Value        { return Value{Type: StringArg, Str: s} }
func BoolVal(b bool) Value         { return Value{Type: BoolArg, Bool: b} }
func IntsVal(x ...int64) Value     { return Value{Type: IntsArg, Ints: x} }
func FloatsVal(x ...float64) Value { return Value{Type: FloatsArg, Floats: x} }
