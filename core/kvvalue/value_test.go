package kvvalue

import (
	"errors"
	"testing"
)

func TestValueFromColumn(t *testing.T) {
	tests := []struct {
		name   string
		col    any
		format Format
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
		v, err := FromColumn(tt.col)
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
	v, _ := FromColumn([]byte{0xff, 0x0f, 'o', '"', 1, 'n', 'I', 4, '{', 1})
	var out struct{ N int }
	if err := v.Decode(&out); err != nil || out.N != 2 {
		t.Errorf("Decode V8 {n: 2} = %+v, %v", out, err)
	}
	j, _ := FromColumn(`"hi"`)
	var s string
	if err := j.Decode(&s); err != nil || s != "hi" {
		t.Errorf("Decode JSON = %q, %v", s, err)
	}
	col, err := ToColumn(v)
	if b, ok := col.([]byte); !ok || err != nil || string(b) != string(v.Raw()) {
		t.Errorf("ToColumn(V8 value) = %v, %v; want its bytes", col, err)
	}
	col, _ = ToColumn(map[string]int{"a": 1})
	if col != `{"a":1}` {
		t.Errorf("ToColumn(map) = %v", col)
	}
	if _, err := ToColumn(make(chan int)); err == nil {
		t.Error("a channel encoded as JSON")
	}
}
