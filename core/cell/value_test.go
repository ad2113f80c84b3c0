package cell

import (
	"errors"
	"testing"
)

func TestValueFromColumn(t *testing.T) {
	tests := []struct {
		name   string
		col    any
		format ValueFormat
		err    bool
	}{
		{"json text", `{"a":1}`, FormatJSON, false},
		{"v8 blob", []byte{0xff, 0x0f, 'T'}, FormatV8, false},
		{"json in a blob", []byte(`[1,2]`), FormatJSON, false},
		{"garbage blob", []byte{1, 2, 3}, 0, true},
		{"integer", int64(3), 0, true},
		{"null", nil, FormatJSON, false},
	}
	for _, tt := range tests {
		v, err := valueFromColumn(tt.col)
		if tt.err {
			if !errors.Is(err, ErrBadStoredValue) {
				t.Errorf("%s: err %v, want ErrBadStoredValue", tt.name, err)
			}
			continue
		}
		if err != nil || v.Format() != tt.format {
			t.Errorf("%s: (%v, %v), want format %v", tt.name, v.Format(), err, tt.format)
		}
	}
}

func TestValueDecode(t *testing.T) {
	v, _ := valueFromColumn([]byte{0xff, 0x0f, 'o', '"', 1, 'n', 'I', 4, '{', 1})
	var out struct{ N int }
	if err := v.Decode(&out); err != nil || out.N != 2 {
		t.Errorf("Decode V8 {n: 2} = %+v, %v", out, err)
	}
	j, _ := valueFromColumn(`"hi"`)
	var s string
	if err := j.Decode(&s); err != nil || s != "hi" {
		t.Errorf("Decode JSON = %q, %v", s, err)
	}
	col, err := columnFromValue(v)
	if b, ok := col.([]byte); !ok || err != nil || string(b) != string(v.Raw()) {
		t.Errorf("columnFromValue(V8 value) = %v, %v; want its bytes", col, err)
	}
	col, _ = columnFromValue(map[string]int{"a": 1})
	if col != `{"a":1}` {
		t.Errorf("columnFromValue(map) = %v", col)
	}
	if _, err := columnFromValue(make(chan int)); err == nil {
		t.Error("a channel encoded as JSON")
	}
}

func TestPrefixUpperBound(t *testing.T) {
	for in, want := range map[string]string{"a": "b", "ab": "ac", "a\xff": "b", "\xff\xff": "", "é": "\xc3\xaa"} {
		got, ok := prefixUpperBound(in)
		if want == "" {
			if ok {
				t.Errorf("prefixUpperBound(%q) = %q, want none", in, got)
			}
			continue
		}
		if !ok || got != want {
			t.Errorf("prefixUpperBound(%q) = %q, want %q", in, got, want)
		}
	}
}
