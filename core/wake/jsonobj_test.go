package wake

import (
	"encoding/json"
	"testing"
)

// appendString must escape as serde_json does: fewer escapes than Go's
// encoder (which writes \u003c for '<').
func TestAppendString(t *testing.T) {
	for in, want := range map[string]string{
		"":                 `""`,
		"node_3f1c":        `"node_3f1c"`,
		`a"b\c`:            `"a\"b\\c"`,
		"<>&/'":            `"<>&/'"`,
		"\b\t\n\f\r":       `"\b\t\n\f\r"`,
		"\x00\x01\x1f\x7f": `"\u0000\u0001\u001f` + "\x7f" + `"`,
		"é\u2028😀":         `"é` + "\u2028" + `😀"`,
		"a\xffb":           `"a` + "\uFFFD" + `b"`,
	} {
		got := string(appendString(nil, in))
		if got != want {
			t.Errorf("appendString(%q) = %s, want %s", in, got, want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("appendString(%q) = %s is not JSON", in, got)
		}
	}
}

func TestReadObject(t *testing.T) {
	for _, ok := range []string{`{}`, ` {"a":1} `, "{\"a\":{\"b\":[1,2]},\"c\":null}\n"} {
		if _, err := readObject([]byte(ok)); err != nil {
			t.Errorf("readObject(%s): %v", ok, err)
		}
	}
	for _, bad := range []string{``, ` `, `null`, `[]`, `"{}"`, `{}{}`, `{} x`, `{"a":1,"a":2}`, `{"a":1,}`, `{a:1}`, "{\"\xff\":1}"} {
		if _, err := readObject([]byte(bad)); err == nil {
			t.Errorf("readObject(%q) accepted", bad)
		}
	}
}
