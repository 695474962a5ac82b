package main

import (
	"flag"
	"fmt"
	"strconv"
	"time"
)

// The flag values of rds-stress: one value may sit under a letter and a
// long name (-q and --req-bytes), as in the real tool.

// alias defines every name of a flag on the same value, as the real tool
// takes a letter and a long name for most options.
func alias(fs *flag.FlagSet, v flag.Value, usage string, names ...string) {
	for i, n := range names {
		u := usage
		if i > 0 {
			u = "same as -" + names[0]
		}
		fs.Var(v, n, u)
	}
}

type boolValue struct{ p *bool }

func (b boolValue) String() string {
	if b.p == nil {
		return "false"
	}
	return strconv.FormatBool(*b.p)
}
func (b boolValue) Set(s string) error {
	v, err := strconv.ParseBool(s)
	*b.p = v
	return err
}
func (b boolValue) IsBoolFlag() bool { return true }

type intValue struct{ p *int }

func (v intValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}
func (v intValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil || n != int64(int(n)) {
		return fmt.Errorf("want a whole number")
	}
	*v.p = int(n)
	return nil
}

type stringValue struct{ p *string }

func (v stringValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}
func (v stringValue) Set(s string) error { *v.p = s; return nil }

// secondsValue is -T: seconds ("4", "0.5") or a Go duration.
type secondsValue struct{ d *time.Duration }

func (v secondsValue) String() string {
	if v.d == nil {
		return "0"
	}
	return strconv.FormatFloat(v.d.Seconds(), 'f', -1, 64)
}

func (v secondsValue) Set(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 {
		*v.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want seconds or a duration such as 500ms")
	}
	*v.d = d
	return nil
}
