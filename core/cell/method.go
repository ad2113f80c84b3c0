package cell

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Typed methods: named methods of a class, registered with a codec, that a
// caller reaches wherever the cell is owned. Unlike Call, whose Go function
// cannot leave the process, a method call is a name and an encoded
// argument, so a router can send it to the owner (core/host does, over the
// peer port or the local socket). The argument and the reply are always
// encoded, here too, so a call behaves the same wherever its cell lives.

// MaxMethodPayload bounds an encoded argument and an encoded reply (1 MiB,
// the most a call sent between nodes may carry).
const MaxMethodPayload = 1 << 20

// ErrUnknownMethod is matched by a call of a method the class did not
// register (on the caller's runtime, or on the owner's).
var ErrUnknownMethod = errors.New("cell: unknown method")

// MethodError is what a method returned as its error: only its message
// crosses (the error's type and wrapped errors stay with the object), and
// it is the same whether the cell was called here or on another node.
// Writes the method made before returning it are committed, as for Call.
type MethodError struct {
	Class, Method string
	Message       string
}

func (e *MethodError) Error() string {
	return fmt.Sprintf("%s.%s: %s", e.Class, e.Method, e.Message)
}

// PayloadTooLargeError is an argument or reply over MaxMethodPayload once
// encoded. An argument is refused before anything runs; a reply, after
// the method ran (its writes are committed).
type PayloadTooLargeError struct {
	Class, Method string
	What          string // "argument" or "reply"
	Size, Limit   int
}

func (e *PayloadTooLargeError) Error() string {
	return fmt.Sprintf("cell: %s.%s: %s of %d bytes encoded is over the limit of %d", e.Class, e.Method, e.What, e.Size, e.Limit)
}

// HTTPStatus is 413 (Content Too Large): core/httperr answers it so.
func (e *PayloadTooLargeError) HTTPStatus() int { return 413 }

// CodecError is an argument or reply its codec could not encode or decode,
// or a call whose codec is not the one the method was registered with.
type CodecError struct {
	Class, Method string
	Op            string // e.g. "decode argument"
	Err           error
}

func (e *CodecError) Error() string {
	return fmt.Sprintf("cell: %s.%s: %s: %v", e.Class, e.Method, e.Op, e.Err)
}

func (e *CodecError) Unwrap() error { return e.Err }

// MethodOption configures RegisterMethod.
type MethodOption func(*methodConfig)

type methodConfig struct{ codec Codec }

// WithCodec encodes the method's argument and reply with c instead of
// JSONCodec. Every node must register the method with the same codec: a
// call names its codec's ContentType and the owner refuses another.
func WithCodec(c Codec) MethodOption { return func(mc *methodConfig) { mc.codec = c } }

// methodEntry is one registered method.
type methodEntry struct {
	class, name string
	codec       Codec
	// invoke decodes arg, runs the method on obj and encodes its reply.
	// An error the method returned comes back as a *MethodError.
	invoke func(ctx context.Context, obj any, arg []byte) ([]byte, error)
}

// methodTable is a class's registered methods.
type methodTable struct {
	mu sync.RWMutex
	m  map[string]*methodEntry
}

func (t *methodTable) get(name string) *methodEntry {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[name]
}

func (t *methodTable) add(e *methodEntry) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*methodEntry{}
	}
	if _, dup := t.m[e.name]; dup {
		return fmt.Errorf("cell: RegisterMethod %s.%s: already registered", e.class, e.name)
	}
	t.m[e.name] = e
	return nil
}

// Method is a registered method of class O taking A and returning R.
type Method[O, A, R any] struct {
	e *methodEntry
}

// RegisterMethod registers fn as the method name of ns's class. fn runs
// inside one event of the object, as Call's function does: it holds the
// input gate, its storage calls join the implicit transaction, and its
// reply leaves only once every commit made before it is durable. Register
// the same methods, with the same codec, on every node of a fleet.
//
// A name is 1 to 128 characters of letters, digits, '_', '-' and '.'.
func RegisterMethod[O, A, R any](ns *Namespace[O], name string, fn func(ctx context.Context, obj O, arg A) (R, error), opts ...MethodOption) (*Method[O, A, R], error) {
	if err := validateMethodName(name); err != nil {
		return nil, fmt.Errorf("cell: RegisterMethod %s.%q: %w", ns.cls.name, name, err)
	}
	if fn == nil {
		return nil, fmt.Errorf("cell: RegisterMethod %s.%s: nil function", ns.cls.name, name)
	}
	cfg := methodConfig{codec: JSONCodec{}}
	for _, o := range opts {
		o(&cfg)
	}
	class := ns.cls.name
	e := &methodEntry{class: class, name: name, codec: cfg.codec}
	e.invoke = func(ctx context.Context, obj any, arg []byte) ([]byte, error) {
		o, ok := obj.(O)
		if !ok {
			return nil, fmt.Errorf("cell: object of class %s is %T, not %T", class, obj, *new(O))
		}
		var a A
		if err := e.codec.Unmarshal(arg, &a); err != nil {
			return nil, &CodecError{Class: class, Method: name, Op: "decode argument", Err: err}
		}
		r, err := fn(ctx, o, a)
		if err != nil {
			return nil, &MethodError{Class: class, Method: name, Message: err.Error()}
		}
		return e.encode(r, "reply")
	}
	if err := ns.cls.methods.add(e); err != nil {
		return nil, err
	}
	return &Method[O, A, R]{e: e}, nil
}

func validateMethodName(name string) error {
	if name == "" || len(name) > 128 {
		return errors.New("a method name is 1 to 128 characters")
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
		default:
			return fmt.Errorf("a method name is letters, digits, '_', '-' and '.', not %q", r)
		}
	}
	return nil
}

// encode encodes v with the method's codec, within MaxMethodPayload.
func (e *methodEntry) encode(v any, what string) ([]byte, error) {
	b, err := e.codec.Marshal(v)
	if err != nil {
		return nil, &CodecError{Class: e.class, Method: e.name, Op: "encode " + what, Err: err}
	}
	if len(b) > MaxMethodPayload {
		return nil, &PayloadTooLargeError{Class: e.class, Method: e.name, What: what, Size: len(b), Limit: MaxMethodPayload}
	}
	return b, nil
}

// Name is the method's registered name.
func (m *Method[O, A, R]) Name() string { return m.e.name }

// Call runs the method on the object stub names, wherever it is owned:
// here, or (through Options.Router, see MethodRouter) on the node or
// process that owns it. Called from a handler, it yields the handler's
// turn as a stub call does. Errors: *MethodError (the method's own),
// *BrokenObjectError (the object was reset), *PayloadTooLargeError,
// *CodecError, ErrUnknownMethod (the owner does not know it), and the
// router's errors for a cell it could not reach.
func (m *Method[O, A, R]) Call(ctx context.Context, stub *Stub[O], arg A) (R, error) {
	var out R
	payload, err := m.e.encode(arg, "argument")
	if err != nil {
		return out, err
	}
	reply, err := stub.callMethod(ctx, m.e, payload)
	if err != nil {
		return out, err
	}
	if err := m.e.codec.Unmarshal(reply, &out); err != nil {
		return out, &CodecError{Class: m.e.class, Method: m.e.name, Op: "decode reply", Err: err}
	}
	return out, nil
}

// CallMethod is Method.Call by name, for code that holds no *Method: it
// encodes arg with the method's codec and decodes the reply into reply (a
// pointer; nil discards it). The method must be registered on this
// runtime (else ErrUnknownMethod), which is how its codec is known.
func (s *Stub[O]) CallMethod(ctx context.Context, name string, arg, reply any) error {
	e := s.ns.cls.methods.get(name)
	if e == nil {
		return fmt.Errorf("%w: %s.%s", ErrUnknownMethod, s.ns.cls.name, name)
	}
	payload, err := e.encode(arg, "argument")
	if err != nil {
		return err
	}
	out, err := s.callMethod(ctx, e, payload)
	if err != nil || reply == nil {
		return err
	}
	if err := e.codec.Unmarshal(out, reply); err != nil {
		return &CodecError{Class: e.class, Method: e.name, Op: "decode reply", Err: err}
	}
	return nil
}

// CallEncoded runs the named method with an argument its codec already
// encoded and returns the encoded reply, routed as Method.Call is. It is
// the entry of a router's receiving end (core/host serves the calls other
// nodes send with it); applications use Method.Call or CallMethod.
func (s *Stub[O]) CallEncoded(ctx context.Context, name string, arg []byte) ([]byte, error) {
	e := s.ns.cls.methods.get(name)
	if e == nil {
		return nil, fmt.Errorf("%w: %s.%s", ErrUnknownMethod, s.ns.cls.name, name)
	}
	if len(arg) > MaxMethodPayload {
		return nil, &PayloadTooLargeError{Class: e.class, Method: e.name, What: "argument", Size: len(arg), Limit: MaxMethodPayload}
	}
	return s.callMethod(ctx, e, arg)
}

// MethodCodec is the codec the method name of the class was registered
// with, or ErrUnknownMethod.
func (ns *Namespace[O]) MethodCodec(name string) (Codec, error) {
	e := ns.cls.methods.get(name)
	if e == nil {
		return nil, fmt.Errorf("%w: %s.%s", ErrUnknownMethod, ns.cls.name, name)
	}
	return e.codec, nil
}

// MethodRouter is implemented by a Router that can send a method call to
// the owner of its cell (core/host's does). here runs the call on this
// runtime; the router runs it, or sends class, id, method and the encoded
// arg to the owner and returns the owner's encoded reply (or its error,
// rebuilt with its type where the runtime owns it). A Router without it
// routes method calls as typed calls (Router.Call).
type MethodRouter interface {
	CallMethod(ctx context.Context, class string, id ID, method string, arg []byte, here func() ([]byte, error)) ([]byte, error)
}

// methodHere runs the method e with its encoded arg as one event of the
// object (cls, id) on this runtime.
func (rt *Runtime) methodHere(ctx context.Context, cls *class, id ID, e *methodEntry, arg []byte) ([]byte, error) {
	var reply []byte
	err := rt.dispatch(ctx, cls, id, func(ctx context.Context, obj any) error {
		var err error
		reply, err = e.invoke(ctx, obj, arg)
		return err
	})
	return reply, err
}

// routeMethod sends a method call through rtr.
func routeMethod(ctx context.Context, rtr Router, class string, id ID, e *methodEntry, arg []byte, here func() ([]byte, error)) ([]byte, error) {
	if mr, ok := rtr.(MethodRouter); ok {
		return mr.CallMethod(ctx, class, id, e.name, arg, here)
	}
	var reply []byte
	err := rtr.Call(ctx, class, id, func() (err error) {
		reply, err = here()
		return err
	})
	return reply, err
}
