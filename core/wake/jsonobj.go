package wake

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

// This file reads and writes JSON the way celld's serde_json does, because
// Go's encoding/json is more lenient (duplicate keys, null into a string,
// invalid UTF-8, 2.0 into an int) and escapes differently (<, >, &).

// jsonFields is a decoded JSON object: its members by name, values raw.
type jsonFields map[string]json.RawMessage

// errJSON* describe why a body is not the object a record needs.
var (
	errNotObject  = errors.New("not a single JSON object")
	errBadUTF8    = errors.New("not valid UTF-8")
	errDuplicated = errors.New("a member appears twice")
)

// readObject parses data as exactly one JSON object (surrounding whitespace
// allowed) and returns its members. Duplicate member names are rejected,
// as serde rejects a duplicate field.
func readObject(data []byte) (jsonFields, error) {
	if !utf8.Valid(data) {
		return nil, errBadUTF8
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errNotObject
	}
	fields := jsonFields{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, errNotObject
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if _, dup := fields[name]; dup {
			return nil, errDuplicated
		}
		fields[name] = raw
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errNotObject // trailing data after the object
	}
	return fields, nil
}

// unknown returns the first member not in allowed, or "".
func (f jsonFields) unknown(allowed ...string) string {
next:
	for name := range f {
		for _, a := range allowed {
			if name == a {
				continue next
			}
		}
		return name
	}
	return ""
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// jsonString reads a JSON string (not null).
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// jsonBool reads true or false (not null).
func jsonBool(raw json.RawMessage) (value, ok bool) {
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// integerLiteral reports whether raw is a JSON integer serde reads as an
// integer: no fraction, no exponent, and not "-0" (which serde_json reads
// as the float -0.0).
func integerLiteral(raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "-0" {
		return false
	}
	for i, c := range raw {
		if !(c >= '0' && c <= '9' || c == '-' && i == 0) {
			return false
		}
	}
	return true
}

// jsonInt64 reads an integer that fits int64 (Rust i64).
func jsonInt64(raw json.RawMessage) (int64, bool) {
	if !integerLiteral(raw) {
		return 0, false
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	return v, err == nil
}

// jsonUint reads a non-negative integer of at most bits bits (Rust u8, u64).
func jsonUint(raw json.RawMessage, bits int) (uint64, bool) {
	if !integerLiteral(raw) || raw[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(raw), 10, bits)
	return v, err == nil
}

// appendString writes s as serde_json does: only '"', '\\' and control
// characters are escaped (short forms for \b \t \n \f \r, \u00xx with
// lowercase hex otherwise); everything else, '/' and non-ASCII included,
// is written raw. Invalid UTF-8 (impossible in a Rust string) becomes
// U+FFFD so the output stays valid JSON.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}
