package store

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func collect(t *testing.T, c Chunks) ([]string, error) {
	t.Helper()
	var parts []string
	for {
		p, err := c()
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return parts, err
		}
		parts = append(parts, string(p))
	}
}

func TestChunksOfThenFrom(t *testing.T) {
	got, err := collect(t, ChunksOf([]byte("abcde"), 2, ChunksFrom(bytes.NewReader([]byte("fghij")), 3)))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ab", "cd", "e", "fgh", "ij"}
	if len(got) != len(want) {
		t.Fatalf("parts %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("parts %q, want %q", got, want)
		}
	}
	if got, _ := collect(t, ChunksOf(nil, 4, nil)); len(got) != 0 {
		t.Fatalf("an empty body gave parts %q", got)
	}
}

func TestChunksFromPassesTheBodysError(t *testing.T) {
	boom := errors.New("boom")
	got, err := collect(t, ChunksFrom(io.MultiReader(bytes.NewReader([]byte("abcd")), iotest.ErrReader(boom)), 3))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the body's", err)
	}
	if len(got) != 1 || got[0] != "abc" {
		t.Fatalf("parts before the failure %q, want [abc]", got)
	}
	var bf BodyFailure
	if !errors.As(error(BodyFailure{Err: boom}), &bf) || !errors.Is(bf, boom) {
		t.Fatal("BodyFailure does not unwrap to its cause")
	}
}

func TestReadHead(t *testing.T) {
	head, whole, err := ReadHead("k", bytes.NewReader([]byte("abc")), -1, 4)
	if err != nil || !whole || string(head) != "abc" {
		t.Fatalf("short body: %q, %v, %v", head, whole, err)
	}
	body := bytes.NewReader([]byte("abcdef"))
	head, whole, err = ReadHead("k", body, 6, 4)
	rest, _ := io.ReadAll(body)
	if err != nil || whole || string(head) != "abcd" || string(rest) != "ef" {
		t.Fatalf("long body: %q + %q, %v, %v", head, rest, whole, err)
	}
	boom := errors.New("boom")
	if _, _, err := ReadHead("k", iotest.ErrReader(boom), -1, 4); !errors.Is(err, boom) {
		t.Fatalf("failing body: %v", err)
	}
}
