package pipeline

import (
	"fmt"
	"slices"

	"github.com/sluice-dev/sluice/ops"
	"github.com/sluice-dev/sluice/pipeline/pipelinepb"
)

// ValueOf converts a definition argument to an operator value. Lists are
// copied so that operators never alias (or mutate) the definition. An
// argument with no value set is an error.
func ValueOf(a *pipelinepb.Arg) (ops.Value, error) {
	// Guard typed nils (&Arg{Value: (*Arg_Int)(nil)}) that only Go code
	// can build; the getters would hide them as zero values.
	switch v := a.GetValue().(type) {
	case *pipelinepb.Arg_Int:
		if v != nil {
			return ops.IntVal(v.Int), nil
		}
	case *pipelinepb.Arg_Float:
		if v != nil {
			return ops.FloatVal(v.Float), nil
		}
	case *pipelinepb.Arg_Str:
		if v != nil {
			return ops.StrVal(v.Str), nil
		}
	case *pipelinepb.Arg_Bool:
		if v != nil {
			return ops.BoolVal(v.Bool), nil
		}
	case *pipelinepb.Arg_Ints:
		if v != nil {
			return ops.Value{Type: ops.IntsArg, Ints: slices.Clone(v.Ints.GetV())}, nil
		}
	case *pipelinepb.Arg_Floats:
		if v != nil {
			return ops.Value{Type: ops.FloatsArg, Floats: slices.Clone(v.Floats.GetV())}, nil
		}
	}
	return ops.Value{}, fmt.Errorf("has no value (write one of int, float, str, bool, ints, floats)")
}

// ArgOf converts an operator value to a definition argument, the inverse of
// ValueOf (lists copied). It fails for a Value with no type.
func ArgOf(name string, v ops.Value) (*pipelinepb.Arg, error) {
	a := &pipelinepb.Arg{Name: name}
	switch v.Type {
	case ops.IntArg:
		a.Value = &pipelinepb.Arg_Int{Int: v.Int}
	case ops.FloatArg:
		a.Value = &pipelinepb.Arg_Float{Float: v.Float}
	case ops.StringArg:
		a.Value = &pipelinepb.Arg_Str{Str: v.Str}
	case ops.BoolArg:
		a.Value = &pipelinepb.Arg_Bool{Bool: v.Bool}
	case ops.IntsArg:
		a.Value = &pipelinepb.Arg_Ints{Ints: &pipelinepb.IntList{V: slices.Clone(v.Ints)}}
	case ops.FloatsArg:
		a.Value = &pipelinepb.Arg_Floats{Floats: &pipelinepb.FloatList{V: slices.Clone(v.Floats)}}
	default:
		return nil, fmt.Errorf("pipeline: argument %q: value of type %v cannot be written", name, v.Type)
	}
	return a, nil
}

// RawArgs collects a node's arguments by name, unchecked: the input of
// ops.Schema.Check. A repeated name is an error rather than last-wins, since
// one of the two settings would be silently ignored. Errors are
// *ops.ArgError, like Check's.
func RawArgs(n *pipelinepb.Node) (ops.Args, error) {
	raw := make(ops.Args, len(n.GetArg()))
	first := make(map[string]int, len(n.GetArg()))
	for i, a := range n.GetArg() {
		name := a.GetName()
		if name == "" {
			return nil, &ops.ArgError{Msg: fmt.Sprintf("arg #%d has no name", i+1)}
		}
		if j, dup := first[name]; dup {
			return nil, &ops.ArgError{Arg: name, Msg: fmt.Sprintf("given twice (arg #%d and #%d)", j+1, i+1)}
		}
		first[name] = i
		v, err := ValueOf(a)
		if err != nil {
			return nil, &ops.ArgError{Arg: name, Msg: err.Error()}
		}
		raw[name] = v
	}
	return raw, nil
}

// Int, Float, Str, Bool, Ints and Floats make definition arguments, for
// the Builder and for tests.

// Int makes an int argument.
func Int(name string, v int64) *pipelinepb.Arg {
	return &pipelinepb.Arg{Name: name, Value: &pipelinepb.Arg_Int{Int: v}}
}

// Float makes a float argument.
func Float(name string, v float64) *pipelinepb.Arg {
	return &pipelinepb.Arg{Name: name, Value: &pipelinepb.Arg_Float{Float: v}}
}

// Str makes a string argument.
func Str(name, v string) *pipelinepb.Arg {
	return &pipelinepb.Arg{Name: name, Value: &pipelinepb.Arg_Str{Str: v}}
}

// Bool makes a bool argument.
func Bool(name string, v bool) *pipelinepb.Arg {
	return &pipelinepb.Arg{Name: name, Value: &pipelinepb.Arg_Bool{Bool: v}}
}

// Ints makes an int list argument (the list is copied).
func Ints(name string, v ...int64) *pipelinepb.Arg {
	return &pipelinepb.Arg{Name: name, Value: &pipelinepb.Arg_Ints{Ints: &pipelinepb.IntList{V: slices.Clone(v)}}}
}

// Floats makes a float list argument (the list is copied).
func Floats(name string, v ...float64) *pipelinepb.Arg {
	return &pipelinepb.Arg{Name: name, Value: &pipelinepb.Arg_Floats{Floats: &pipelinepb.FloatList{V: slices.Clone(v)}}}
}
