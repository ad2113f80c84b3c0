package kvvalue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Tags of V8's value serialization format (the format workerd, and so
// celld, stores KV values in). See docs/kv-values.md for the mapping.
const (
	v8VersionTag    = 0xFF
	v8Padding       = 0x00
	v8VerifyCount   = '?'
	v8TheHole       = '-'
	v8Undefined     = '_'
	v8Null          = '0'
	v8True          = 'T'
	v8False         = 'F'
	v8Int32         = 'I'
	v8Uint32        = 'U'
	v8Double        = 'N'
	v8BigInt        = 'Z'
	v8Utf8String    = 'S'
	v8OneByteString = '"'
	v8TwoByteString = 'c'
	v8ObjectRef     = '^'
	v8BeginObject   = 'o'
	v8EndObject     = '{'
	v8BeginSparse   = 'a'
	v8EndSparse     = '@'
	v8BeginDense    = 'A'
	v8EndDense      = '$'
	v8Date          = 'D'
	v8TrueObject    = 'y'
	v8FalseObject   = 'x'
	v8NumberObject  = 'n'
	v8BigIntObject  = 'z'
	v8StringObject  = 's'
	v8ArrayBuffer   = 'B'
	v8View          = 'V'
	v8ViewUint8     = 'B'
)

// v8MaxVersion is the newest serialization version this decoder knows;
// workerd pins 15.
const v8MaxVersion = 15

// Limits that keep a hostile or corrupt value from exhausting memory or
// the stack.
const (
	v8MaxDepth       = 512
	v8MaxSparseArray = 1 << 20
)

// Undefined is JavaScript's undefined in a decoded V8 value (JSON: null).
type Undefined struct{}

// MarshalJSON writes undefined as null.
func (Undefined) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// UnsupportedV8TagError reports a V8 value this decoder does not handle
// (a Map, Set, RegExp, Error, typed array other than Uint8Array, host
// object, ...). Tag is the serialization tag byte.
type UnsupportedV8TagError struct {
	Tag    byte
	Offset int
}

func (e *UnsupportedV8TagError) Error() string {
	name := v8TagNames[e.Tag]
	if name == "" {
		name = "unknown"
	}
	return fmt.Sprintf("kvvalue: V8 value: unsupported tag %s (%s) at offset %d", quoteByte(e.Tag), name, e.Offset)
}

var v8TagNames = map[byte]string{
	';': "Map", '\'': "Set", 'R': "RegExp", 'r': "Error", '\\': "host object",
	'u': "SharedArrayBuffer", 't': "transferred ArrayBuffer", '~': "resizable ArrayBuffer",
	'V': "ArrayBufferView", 'w': "WebAssembly module", 'm': "WebAssembly memory",
	'p': "shared object", 'M': "message port", 0xFE: "trailer offset",
}

// ErrMalformedV8 is wrapped by every error about truncated or inconsistent
// V8 data.
var ErrMalformedV8 = errors.New("malformed V8 value")

// DecodeV8 decodes one value in V8's serialization format (starting with
// the FF version header) into plain Go values; see Value.Any.
func DecodeV8(data []byte) (any, error) {
	d := &v8Decoder{data: data}
	if len(data) == 0 || data[0] != v8VersionTag {
		return nil, d.malformed("missing version header")
	}
	d.pos = 1
	ver, err := d.varint()
	if err != nil {
		return nil, err
	}
	if ver < 13 || ver > v8MaxVersion {
		return nil, fmt.Errorf("kvvalue: V8 value: unsupported format version %d", ver)
	}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	// Trailing padding is allowed; anything else is not.
	for d.pos < len(d.data) {
		if d.data[d.pos] != v8Padding {
			return nil, d.malformed("trailing bytes")
		}
		d.pos++
	}
	return v, nil
}

type v8Decoder struct {
	data []byte
	pos  int
	// objects by id, for back references; nil while under construction.
	objects []any
	done    []bool
}

func (d *v8Decoder) malformed(what string) error {
	return fmt.Errorf("kvvalue: V8 value: %w: %s at offset %d", ErrMalformedV8, what, d.pos)
}

func (d *v8Decoder) byte() (byte, error) {
	if d.pos >= len(d.data) {
		return 0, d.malformed("truncated")
	}
	b := d.data[d.pos]
	d.pos++
	return b, nil
}

// tag reads the next tag, skipping padding.
func (d *v8Decoder) tag() (byte, error) {
	for {
		b, err := d.byte()
		if err != nil {
			return 0, err
		}
		if b != v8Padding {
			return b, nil
		}
	}
}

func (d *v8Decoder) peekTag() (byte, error) {
	save := d.pos
	t, err := d.tag()
	d.pos = save
	return t, err
}

func (d *v8Decoder) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, d.malformed("varint too long")
		}
		b, err := d.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
}

func (d *v8Decoder) varint32() (uint32, error) {
	v, err := d.varint()
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint32 {
		return 0, d.malformed("varint over 32 bits")
	}
	return uint32(v), nil
}

func (d *v8Decoder) double() (float64, error) {
	if len(d.data)-d.pos < 8 {
		return 0, d.malformed("truncated double")
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(d.data[d.pos:]))
	d.pos += 8
	return f, nil
}

func (d *v8Decoder) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(d.data)-d.pos) {
		return nil, d.malformed("truncated data")
	}
	b := d.data[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return b, nil
}

// newObject reserves the next object id, as V8 numbers them in the order
// objects begin.
func (d *v8Decoder) newObject() int {
	d.objects = append(d.objects, nil)
	d.done = append(d.done, false)
	return len(d.objects) - 1
}

func (d *v8Decoder) finish(id int, v any) any {
	d.objects[id] = v
	d.done[id] = true
	return v
}

func (d *v8Decoder) value(depth int) (any, error) {
	if depth > v8MaxDepth {
		return nil, d.malformed("nesting too deep")
	}
	start := d.pos
	t, err := d.tag()
	if err != nil {
		return nil, err
	}
	switch t {
	case v8Undefined:
		return Undefined{}, nil
	case v8Null:
		return nil, nil
	case v8True:
		return true, nil
	case v8False:
		return false, nil
	case v8Int32:
		u, err := d.varint32()
		if err != nil {
			return nil, err
		}
		return float64(int32(u>>1) ^ -int32(u&1)), nil
	case v8Uint32:
		u, err := d.varint32()
		return float64(u), err
	case v8Double:
		return d.double()
	case v8BigInt:
		return d.bigint()
	case v8Utf8String, v8OneByteString, v8TwoByteString:
		d.pos = start
		return d.string()
	case v8ObjectRef:
		id, err := d.varint32()
		if err != nil {
			return nil, err
		}
		if int(id) >= len(d.objects) {
			return nil, d.malformed("reference to an unknown object")
		}
		if !d.done[id] {
			return nil, d.malformed("cyclic reference (cycles cannot be represented)")
		}
		return d.objects[id], nil
	case v8BeginObject:
		return d.object(depth)
	case v8BeginDense:
		return d.denseArray(depth)
	case v8BeginSparse:
		return d.sparseArray(depth)
	case v8Date:
		id := d.newObject()
		ms, err := d.double()
		if err != nil {
			return nil, err
		}
		if math.IsNaN(ms) || math.IsInf(ms, 0) {
			return d.finish(id, nil), nil // an invalid Date
		}
		return d.finish(id, time.UnixMilli(int64(ms)).UTC()), nil
	case v8TrueObject, v8FalseObject:
		id := d.newObject()
		return d.finish(id, t == v8TrueObject), nil
	case v8NumberObject:
		id := d.newObject()
		f, err := d.double()
		if err != nil {
			return nil, err
		}
		return d.finish(id, f), nil
	case v8BigIntObject:
		id := d.newObject()
		n, err := d.bigint()
		if err != nil {
			return nil, err
		}
		return d.finish(id, n), nil
	case v8StringObject:
		id := d.newObject()
		s, err := d.string()
		if err != nil {
			return nil, err
		}
		return d.finish(id, s), nil
	case v8ArrayBuffer:
		return d.arrayBuffer(start)
	}
	return nil, &UnsupportedV8TagError{Tag: t, Offset: start}
}

// string reads a string value including its tag.
func (d *v8Decoder) string() (string, error) {
	t, err := d.tag()
	if err != nil {
		return "", err
	}
	n, err := d.varint32()
	if err != nil {
		return "", err
	}
	b, err := d.bytes(uint64(n))
	if err != nil {
		return "", err
	}
	switch t {
	case v8Utf8String:
		if !utf8.Valid(b) {
			return string([]rune(string(b))), nil // replaces invalid bytes
		}
		return string(b), nil
	case v8OneByteString:
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c) // Latin-1
		}
		return string(r), nil
	case v8TwoByteString:
		if len(b)%2 != 0 {
			return "", d.malformed("odd two-byte string length")
		}
		u := make([]uint16, len(b)/2)
		for i := range u {
			u[i] = binary.LittleEndian.Uint16(b[2*i:])
		}
		return string(utf16.Decode(u)), nil
	}
	return "", d.malformed("expected a string")
}

func (d *v8Decoder) bigint() (*big.Int, error) {
	bits, err := d.varint32()
	if err != nil {
		return nil, err
	}
	neg := bits&1 == 1
	n := uint64(bits >> 1)
	b, err := d.bytes(n)
	if err != nil {
		return nil, err
	}
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i] // digits are little-endian
	}
	v := new(big.Int).SetBytes(be)
	if neg {
		v.Neg(v)
	}
	return v, nil
}

// propertyKey reads an object key: a string or a number.
func (d *v8Decoder) propertyKey(depth int) (string, error) {
	k, err := d.value(depth + 1)
	if err != nil {
		return "", err
	}
	switch x := k.(type) {
	case string:
		return x, nil
	case float64:
		return jsNumberString(x), nil
	}
	return "", d.malformed(fmt.Sprintf("object key of type %T", k))
}

// properties reads key/value pairs until the end tag, then checks the
// count V8 wrote after it.
func (d *v8Decoder) properties(depth int, end byte, set func(k string, v any)) (uint32, error) {
	var n uint32
	for {
		t, err := d.peekTag()
		if err != nil {
			return 0, err
		}
		if t == end {
			d.tag()
			return n, nil
		}
		k, err := d.propertyKey(depth)
		if err != nil {
			return 0, err
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return 0, err
		}
		set(k, v)
		n++
	}
}

func (d *v8Decoder) object(depth int) (any, error) {
	id := d.newObject()
	m := map[string]any{}
	n, err := d.properties(depth, v8EndObject, func(k string, v any) { m[k] = v })
	if err != nil {
		return nil, err
	}
	want, err := d.varint32()
	if err != nil {
		return nil, err
	}
	if want != n {
		return nil, d.malformed("object property count mismatch")
	}
	return d.finish(id, m), nil
}

func (d *v8Decoder) denseArray(depth int) (any, error) {
	id := d.newObject()
	n, err := d.varint32()
	if err != nil {
		return nil, err
	}
	if int(n) > len(d.data)-d.pos {
		return nil, d.malformed("array longer than its data")
	}
	arr := make([]any, n)
	for i := range arr {
		t, err := d.peekTag()
		if err != nil {
			return nil, err
		}
		if t == v8TheHole {
			d.tag()
			continue
		}
		if arr[i], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	// Extra named properties of an array have no place in []any; they are
	// read and dropped, as JSON.stringify drops them.
	props, err := d.properties(depth, v8EndDense, func(string, any) {})
	if err != nil {
		return nil, err
	}
	if err := d.arrayTrailer(props, n, "dense"); err != nil {
		return nil, err
	}
	return d.finish(id, arr), nil
}

// arrayTrailer reads the property count and length that close an array
// and checks them against what was read.
func (d *v8Decoder) arrayTrailer(props, n uint32, kind string) error {
	gotProps, err := d.varint32()
	if err != nil {
		return err
	}
	gotLen, err := d.varint32()
	if err != nil {
		return err
	}
	if gotProps != props || gotLen != n {
		return d.malformed(kind + " array trailer mismatch")
	}
	return nil
}

func (d *v8Decoder) sparseArray(depth int) (any, error) {
	id := d.newObject()
	n, err := d.varint32()
	if err != nil {
		return nil, err
	}
	if n > v8MaxSparseArray {
		return nil, fmt.Errorf("kvvalue: V8 value: sparse array of length %d is over the %d limit", n, v8MaxSparseArray)
	}
	arr := make([]any, n)
	props, err := d.properties(depth, v8EndSparse, func(k string, v any) {
		if i, err := strconv.ParseUint(k, 10, 32); err == nil && i < uint64(n) {
			arr[i] = v
		}
	})
	if err != nil {
		return nil, err
	}
	if err := d.arrayTrailer(props, n, "sparse"); err != nil {
		return nil, err
	}
	return d.finish(id, arr), nil
}

// arrayBuffer reads an ArrayBuffer and, if a view follows, the view over
// it. Only Uint8Array views are supported.
func (d *v8Decoder) arrayBuffer(start int) (any, error) {
	id := d.newObject()
	n, err := d.varint32()
	if err != nil {
		return nil, err
	}
	b, err := d.bytes(uint64(n))
	if err != nil {
		return nil, err
	}
	buf := append([]byte{}, b...)
	d.finish(id, buf)
	if t, err := d.peekTag(); err != nil || t != v8View {
		return buf, nil
	}
	viewStart := d.pos
	d.tag()
	vid := d.newObject()
	sub, err := d.byte()
	if err != nil {
		return nil, err
	}
	off, err := d.varint32()
	if err != nil {
		return nil, err
	}
	length, err := d.varint32()
	if err != nil {
		return nil, err
	}
	if _, err := d.varint32(); err != nil { // flags (length-tracking, backed by resizable)
		return nil, err
	}
	if sub != v8ViewUint8 {
		return nil, &UnsupportedV8TagError{Tag: v8View, Offset: viewStart}
	}
	if uint64(off)+uint64(length) > uint64(len(buf)) {
		return nil, d.malformed("view outside its buffer")
	}
	return d.finish(vid, buf[off:off+length]), nil
}

// jsNumberString formats a number used as a property key the way
// JavaScript's ToString does for the common cases.
func jsNumberString(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// quoteByte renders a tag byte for an error message: 'c' when printable,
// 0xNN otherwise.
func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return "'" + string(c) + "'"
	}
	const digits = "0123456789abcdef"
	return "0x" + string(digits[c>>4]) + string(digits[c&15])
}
