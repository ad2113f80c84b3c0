package driver

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// NormalizeArg converts a Go argument to one of SQLite's storage classes:
// nil, int64, float64, string or []byte. Drivers call it on every bound
// argument so all drivers accept the same Go types.
func NormalizeArg(v any) (any, error) {
	switch x := v.(type) {
	case nil, int64, float64, string, []byte:
		return x, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return nil, fmt.Errorf("argument %d overflows int64", x)
		}
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return nil, fmt.Errorf("argument %d overflows int64", x)
		}
		return int64(x), nil
	case float32:
		return float64(x), nil
	case bool:
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	case *string:
		if x == nil {
			return nil, nil
		}
		return *x, nil
	case *int64:
		if x == nil {
			return nil, nil
		}
		return *x, nil
	case *float64:
		if x == nil {
			return nil, nil
		}
		return *x, nil
	}
	return nil, fmt.Errorf("unsupported argument type %T", v)
}

// ErrNullScan is returned when a NULL is scanned into a type that cannot hold it.
var ErrNullScan = errors.New("cannot scan NULL into a non-pointer, non-any destination")

// ScanValues copies a row's values into dest, converting between SQLite's
// storage classes as SQLite itself would for common Go types. Supported
// destinations: *any, *int64, *int, *int32, *uint32, *uint64, *float64,
// *bool, *string, *[]byte, and pointers to those pointer types for
// nullable columns (e.g. **string gets nil for NULL).
func ScanValues(values []any, dest ...any) error {
	if len(dest) != len(values) {
		return fmt.Errorf("scan: %d destinations for %d columns", len(dest), len(values))
	}
	for i, d := range dest {
		if err := scanOne(values[i], d); err != nil {
			return fmt.Errorf("scan column %d: %w", i, err)
		}
	}
	return nil
}

func scanOne(src, dest any) error {
	switch d := dest.(type) {
	case *any:
		if b, ok := src.([]byte); ok {
			src = append([]byte(nil), b...)
		}
		*d = src
		return nil
	case **string:
		if src == nil {
			*d = nil
			return nil
		}
		var s string
		if err := scanOne(src, &s); err != nil {
			return err
		}
		*d = &s
		return nil
	case **int64:
		if src == nil {
			*d = nil
			return nil
		}
		var n int64
		if err := scanOne(src, &n); err != nil {
			return err
		}
		*d = &n
		return nil
	case **float64:
		if src == nil {
			*d = nil
			return nil
		}
		var f float64
		if err := scanOne(src, &f); err != nil {
			return err
		}
		*d = &f
		return nil
	case *[]byte:
		switch s := src.(type) {
		case nil:
			*d = nil
		case []byte:
			*d = append([]byte(nil), s...)
		case string:
			*d = []byte(s)
		default:
			*d = []byte(fmt.Sprint(s))
		}
		return nil
	case *string:
		switch s := src.(type) {
		case nil:
			return ErrNullScan
		case string:
			*d = s
		case []byte:
			*d = string(s)
		case int64:
			*d = strconv.FormatInt(s, 10)
		case float64:
			*d = strconv.FormatFloat(s, 'g', -1, 64)
		default:
			return fmt.Errorf("cannot scan %T into *string", src)
		}
		return nil
	}
	if src == nil {
		return ErrNullScan
	}
	switch d := dest.(type) {
	case *int64:
		n, err := asInt64(src)
		*d = n
		return err
	case *int:
		n, err := asInt64(src)
		*d = int(n)
		return err
	case *int32:
		n, err := asInt64(src)
		if err == nil && (n < math.MinInt32 || n > math.MaxInt32) {
			return fmt.Errorf("value %d overflows int32", n)
		}
		*d = int32(n)
		return err
	case *uint32:
		n, err := asInt64(src)
		if err == nil && (n < 0 || n > math.MaxUint32) {
			return fmt.Errorf("value %d overflows uint32", n)
		}
		*d = uint32(n)
		return err
	case *uint64:
		n, err := asInt64(src)
		if err == nil && n < 0 {
			return fmt.Errorf("value %d is negative", n)
		}
		*d = uint64(n)
		return err
	case *bool:
		n, err := asInt64(src)
		*d = n != 0
		return err
	case *float64:
		switch s := src.(type) {
		case float64:
			*d = s
		case int64:
			*d = float64(s)
		case string:
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return fmt.Errorf("cannot scan %q into *float64", s)
			}
			*d = f
		default:
			return fmt.Errorf("cannot scan %T into *float64", src)
		}
		return nil
	}
	return fmt.Errorf("unsupported destination type %T", dest)
}

func asInt64(src any) (int64, error) {
	switch s := src.(type) {
	case int64:
		return s, nil
	case float64:
		if s != math.Trunc(s) || s < math.MinInt64 || s >= math.MaxInt64 {
			return 0, fmt.Errorf("cannot scan float %v into an integer", s)
		}
		return int64(s), nil
	case string:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cannot scan %q into an integer", s)
		}
		return n, nil
	case []byte:
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cannot scan %q into an integer", s)
		}
		return n, nil
	}
	return 0, fmt.Errorf("cannot scan %T into an integer", src)
}
