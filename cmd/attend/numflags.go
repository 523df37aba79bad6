package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/attend-nmt/attend/internal/bound"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// floatFlag is a float64 flag whose value must lie in a range (which never holds NaN or ±Inf): Set parses and
// checks it, so a value out of range is refused where the command line is read, naming the flag. Every float
// flag of every command is one (TestEveryNumberFlagIsChecked), registered with floatVar.
type floatFlag struct {
	p    *float64
	name string
	r    bound.Range
}

// floatVar defines the float flag name, with default value, which must lie in r when given.
func floatVar(fl *pflag.FlagSet, p *float64, name string, value float64, r bound.Range, usage string) {
	*p = value
	fl.Var(&floatFlag{p: p, name: name, r: r}, name, usage)
}

// Set parses s and keeps it if it lies in the range.
func (f *floatFlag) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // 1e400 reads as +Inf, which Check refuses
		return rangeError{fmt.Errorf("--%s wants a number, got %q", f.name, s)}
	}
	if err := f.r.Check("--"+f.name, x); err != nil {
		return rangeError{err}
	}
	*f.p = x
	return nil
}

// String is the value as the flag's default shows it in the help.
func (f *floatFlag) String() string { return strconv.FormatFloat(*f.p, 'g', -1, 64) }

// Type is pflag's name of the flag's kind: the help shows "float", as for pflag's own float flags.
func (f *floatFlag) Type() string { return "float64" }

// intFlag is floatFlag for an int flag: overflowing, negative or absurd values are refused as the command line
// is read, naming the flag.
type intFlag struct {
	p    *int
	name string
	r    bound.Range
}

// intVar defines the int flag name, with default value, which must lie in r when given.
func intVar(fl *pflag.FlagSet, p *int, name string, value int, r bound.Range, usage string) {
	*p = value
	fl.Var(&intFlag{p: p, name: name, r: r}, name, usage)
}

// Set parses s and keeps it if it lies in the range.
func (f *intFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return rangeError{fmt.Errorf("--%s is %s, past any integer; want %s", f.name, s, f.r.Text(true))}
	case err != nil:
		return rangeError{fmt.Errorf("--%s wants an integer, got %q", f.name, s)}
	}
	if err := f.r.CheckInt("--"+f.name, n); err != nil {
		return rangeError{err}
	}
	*f.p = int(n)
	return nil
}

// String is the value as the flag's default shows it in the help.
func (f *intFlag) String() string { return strconv.Itoa(*f.p) }

// Type is pflag's name of the flag's kind: the help shows "int".
func (f *intFlag) Type() string { return "int" }

// rangeError is a checked flag's refusal, which names the flag and its range itself.
type rangeError struct{ error }

func (e rangeError) Unwrap() error { return e.error }

// flagError is the commands' cobra FlagErrorFunc: a checked flag's refusal stands alone ("--alpha is NaN; want
// at least 0 and at most 10 (0: no length penalty)") rather than inside pflag's `invalid argument "NaN" for
// "--alpha" flag: ...`, which would name the flag twice.
func flagError(_ *cobra.Command, err error) error {
	var r rangeError
	if errors.As(err, &r) {
		return r.error
	}
	return err
}
