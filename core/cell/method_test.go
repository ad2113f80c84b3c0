package cell

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRegisterMethodRefuses: a bad or duplicate method name, a nil
// function, and a call of a method nobody registered are refused before
// anything runs.
func TestRegisterMethodRefuses(t *testing.T) {
	rt, err := New(Options{Driver: noDriver{}, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	ns, err := Register(rt, "Account", func(context.Context, *State) (int, error) { return 0, nil })
	if err != nil {
		t.Fatal(err)
	}
	add := func(ctx context.Context, o int, n int) (int, error) { return n, nil }
	if _, err := RegisterMethod(ns, "add", add); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"add":                    "already registered",
		"":                       "1 to 128 characters",
		"a/b":                    "not '/'",
		strings.Repeat("m", 129): "1 to 128 characters",
	} {
		if _, err := RegisterMethod(ns, name, add); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("RegisterMethod(%q): %v, want %q", name, err, want)
		}
	}
	if _, err := RegisterMethod[int, int, int](ns, "nil", nil); err == nil {
		t.Error("a nil function was registered")
	}
	stub := ns.Get(ns.IDFromName("a"))
	if err := stub.CallMethod(context.Background(), "sub", 1, nil); !errors.Is(err, ErrUnknownMethod) {
		t.Errorf("CallMethod of an unknown method: %v", err)
	}
	if _, err := ns.MethodCodec("sub"); !errors.Is(err, ErrUnknownMethod) {
		t.Errorf("MethodCodec of an unknown method: %v", err)
	}
	if c, err := ns.MethodCodec("add"); err != nil || c.ContentType() != "application/json" {
		t.Errorf("MethodCodec(add): %v %v", c, err)
	}
	var big *PayloadTooLargeError
	if err := stub.CallMethod(context.Background(), "add", strings.Repeat("x", MaxMethodPayload), nil); !errors.As(err, &big) || big.What != "argument" {
		t.Errorf("an argument over the limit: %v", err)
	}
}
