package kvvalue

import (
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"
)

// v8Vectors were produced by Node's v8.Serializer (V8's own serializer,
// format version 15, without Node's host-object handling of typed arrays),
// so they are the bytes workerd and celld store.
var v8Vectors = []struct {
	name, hex string
	want      any
}{
	{"object", "ff0f6f2201614902220162220178220163410254302400027b03", map[string]any{"a": 1.0, "b": "x", "c": []any{true, nil}}},
	{"bigint", "ff0f5a10d20a1feb8ca954ab", bigInt("12345678901234567890")},
	{"negative bigint", "ff0f5a11ff00000000000000", bigInt("-255")},
	{"latin-1 string", "ff0f220568e96c6c6f", "héllo"},
	{"two-byte string", "ff0f6304e5652c67", "日本"},
	{"surrogate pair", "ff0f630661003dd800de", "a😀"},
	{"negative int32", "ff0f4909", -5.0},
	{"double", "ff0f4e000000000000f83f", 1.5},
	{"uint32 as double", "ff0f4e0000e0ffffffef41", 4294967295.0},
	{"undefined", "ff0f5f", Undefined{}},
	{"true", "ff0f54", true},
	{"false", "ff0f46", false},
	{"null", "ff0f30", nil},
	{"date", "ff0f4400008056febc7842", time.UnixMilli(1700000000000).UTC()},
	{"sparse array", "ff0f6106490a4902400106", []any{nil, nil, nil, nil, nil, 1.0}},
	{"array with a hole", "ff0f61034900490249044906400203", []any{1.0, nil, 3.0}},
	{"nested", "ff0f6f2201786f2201796f22017a410249026f2201772201767b012400027b017b017b01",
		map[string]any{"x": map[string]any{"y": map[string]any{"z": []any{1.0, map[string]any{"w": "v"}}}}}},
	{"shared reference", "ff0f41026f22016b49027b015e01240002", []any{map[string]any{"k": 1.0}, map[string]any{"k": 1.0}}},
	{"numeric key", "ff0f6f490222036f6e6522016249047b02", map[string]any{"1": "one", "b": 2.0}},
	{"Uint8Array", "ff0f42030102035642000300", []byte{1, 2, 3}},
	{"ArrayBuffer", "ff0f42020405", []byte{4, 5}},
	{"String object", "ff0f73220173", "s"},
	{"Number object", "ff0f6e0000000000000040", 2.0},
	{"Boolean object", "ff0f79", true},
	{"empty object", "ff0f6f7b00", map[string]any{}},
	{"empty array", "ff0f4100240000", []any{}},
}

func bigInt(s string) *big.Int {
	n, _ := new(big.Int).SetString(s, 10)
	return n
}

func TestDecodeV8Vectors(t *testing.T) {
	for _, v := range v8Vectors {
		b, err := hex.DecodeString(v.hex)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeV8(b)
		if err != nil {
			t.Errorf("%s: %v", v.name, err)
			continue
		}
		if !reflect.DeepEqual(got, v.want) {
			t.Errorf("%s: got %#v, want %#v", v.name, got, v.want)
		}
	}
}

func TestDecodeV8SharedReferenceIsShared(t *testing.T) {
	b, _ := hex.DecodeString("ff0f41026f22016b49027b015e01240002")
	v, err := DecodeV8(b)
	if err != nil {
		t.Fatal(err)
	}
	arr := v.([]any)
	arr[0].(map[string]any)["k"] = 9.0
	if arr[1].(map[string]any)["k"] != 9.0 {
		t.Error("a back reference decoded as a copy, not the same object")
	}
}

func TestDecodeV8Unsupported(t *testing.T) {
	for name, h := range map[string]string{
		"Map":          "ff0f3b220161490222016249043a04",
		"Set":          "ff0f2749022c01",
		"RegExp":       "ff0f5222017801",
		"Float32Array": "ff0f42040000803f5666000400",
	} {
		b, _ := hex.DecodeString(h)
		_, err := DecodeV8(b)
		var ut *UnsupportedV8TagError
		if !errors.As(err, &ut) {
			t.Errorf("%s: %v, want *UnsupportedV8TagError", name, err)
			continue
		}
		want := name
		if name == "Float32Array" {
			want = "ArrayBufferView"
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not name %s", name, err, want)
		}
	}
}

func TestDecodeV8Malformed(t *testing.T) {
	for name, h := range map[string]string{
		"empty":               "",
		"no header":           "0f54",
		"future version":      "ff1054",
		"truncated":           "ff0f6f2201",
		"trailing bytes":      "ff0f5454",
		"count mismatch":      "ff0f6f2201614902 7b05",
		"reference to future": "ff0f5e05",
		"cycle":               "ff0f6f2201615e007b01",
		"odd two-byte":        "ff0f630361",
		"huge dense array":    "ff0f41ffffffff0f",
		"huge sparse array":   "ff0f61ffffffff0f",
		"double truncated":    "ff0f4e0000",
		"string too long":     "ff0f2210ab",
	} {
		b, err := hex.DecodeString(strings.ReplaceAll(h, " ", ""))
		if err != nil {
			t.Fatal(name, err)
		}
		if _, err := DecodeV8(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func TestDecodeV8DepthLimit(t *testing.T) {
	b := []byte{0xff, 0x0f}
	for range v8MaxDepth + 10 {
		b = append(b, 'A', 1)
	}
	if _, err := DecodeV8(b); !errors.Is(err, ErrMalformedV8) {
		t.Errorf("deep nesting: %v, want ErrMalformedV8", err)
	}
}

func TestDecodeV8InvalidDate(t *testing.T) {
	b := []byte{0xff, 0x0f, 'D'}
	nan := math.Float64bits(math.NaN())
	for i := range 8 {
		b = append(b, byte(nan>>(8*i)))
	}
	if v, err := DecodeV8(b); err != nil || v != nil {
		t.Errorf("invalid Date = %v, %v; want nil", v, err)
	}
}

func FuzzDecodeV8(f *testing.F) {
	for _, v := range v8Vectors {
		b, _ := hex.DecodeString(v.hex)
		f.Add(b)
	}
	f.Add([]byte{0xff, 0x0f, 'o', '^', 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeV8(data)
		if err != nil {
			return
		}
		// Whatever decodes must be representable: walk it.
		var walk func(any, int)
		walk = func(x any, depth int) {
			if depth > v8MaxDepth+2 {
				t.Fatalf("decoded value nests deeper than the limit")
			}
			switch y := x.(type) {
			case []any:
				for _, e := range y {
					walk(e, depth+1)
				}
			case map[string]any:
				for _, e := range y {
					walk(e, depth+1)
				}
			}
		}
		walk(v, 0)
	})
}

// TestUnsupportedV8TagMessage pins the message docs/kv-values.md quotes.
func TestUnsupportedV8TagMessage(t *testing.T) {
	b, _ := hex.DecodeString("ff0f3b220161490222016249043a04") // new Map([["a",1],["b",2]])
	_, err := DecodeV8(b)
	const want = "kvvalue: V8 value: unsupported tag ';' (Map) at offset 2"
	if err == nil || err.Error() != want {
		t.Errorf("decoding a Map: %v; want %q", err, want)
	}
}
