package kvvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Format is how a KV value is stored in _cf_KV.v.
type Format int

const (
	// FormatJSON is JSON text (what CellB writes; celld reads it as its
	// legacy format).
	FormatJSON Format = iota
	// FormatV8 is a blob in V8's serialization format (header FF 0F), as
	// celld writes through workerd's storage API.
	FormatV8
)

func (f Format) String() string {
	if f == FormatV8 {
		return "v8"
	}
	return "json"
}

// Value is one stored KV value, decoded lazily.
type Value struct {
	format Format
	raw    []byte
}

// Format is how the value is stored.
func (v Value) Format() Format { return v.format }

// Raw is the stored bytes (JSON text or V8 serialization).
func (v Value) Raw() []byte { return v.raw }

// Any decodes the value into plain Go values: nil, bool, float64, string,
// []any, map[string]any, plus for V8 values *big.Int (BigInt), time.Time
// (Date), []byte (ArrayBuffer and Uint8Array) and Undefined. JSON numbers
// decode as float64 (JavaScript's numbers).
func (v Value) Any() (any, error) {
	if v.format == FormatV8 {
		return DecodeV8(v.raw)
	}
	var out any
	if err := json.Unmarshal(v.raw, &out); err != nil {
		return nil, fmt.Errorf("decode JSON value: %w", err)
	}
	return out, nil
}

// Decode stores the value in dest as encoding/json would. A V8 value is
// first decoded with DecodeV8 and converted through JSON (so Dates become
// RFC 3339 strings and BigInts numbers).
func (v Value) Decode(dest any) error {
	if v.format == FormatJSON {
		if err := json.Unmarshal(v.raw, dest); err != nil {
			return fmt.Errorf("decode JSON value: %w", err)
		}
		return nil
	}
	x, err := DecodeV8(v.raw)
	if err != nil {
		return err
	}
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Errorf("convert V8 value: %w", err)
	}
	if err := json.Unmarshal(b, dest); err != nil {
		return fmt.Errorf("decode V8 value: %w", err)
	}
	return nil
}

// ErrBadStoredValue is returned for a _cf_KV value that is neither JSON
// text nor a V8 serialization.
var ErrBadStoredValue = errors.New("stored value is neither JSON text nor V8-serialized")

// FromColumn classifies the v column as read from SQLite: TEXT is JSON; a
// BLOB starting with V8's version tag is V8; any other BLOB is taken as
// JSON bytes if it parses; NULL reads as JSON null. Anything else fails
// with ErrBadStoredValue. The bytes are copied.
func FromColumn(col any) (Value, error) {
	switch c := col.(type) {
	case string:
		return Value{format: FormatJSON, raw: []byte(c)}, nil
	case []byte:
		raw := append([]byte(nil), c...)
		if len(raw) > 0 && raw[0] == v8VersionTag {
			return Value{format: FormatV8, raw: raw}, nil
		}
		if json.Valid(raw) {
			return Value{format: FormatJSON, raw: raw}, nil
		}
	case nil:
		return Value{format: FormatJSON, raw: []byte("null")}, nil
	}
	return Value{}, ErrBadStoredValue
}

// ToColumn is what a KV Put writes to the v column: v encoded as JSON
// text, except a Value (or *Value), whose own bytes are written unchanged
// (a V8 value as a BLOB, a JSON value as TEXT). A value encoding/json
// cannot encode fails.
func ToColumn(v any) (any, error) {
	switch x := v.(type) {
	case Value:
		if x.format == FormatV8 {
			return bytes.Clone(x.raw), nil
		}
		return string(x.raw), nil
	case *Value:
		if x == nil {
			return "null", nil
		}
		return ToColumn(*x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode value as JSON: %w", err)
	}
	return string(b), nil
}
