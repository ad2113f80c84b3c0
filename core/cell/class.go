package cell

import (
	"context"
	"fmt"
	"reflect"
)

// class is a registered object class.
type class struct {
	name string
	// construct builds the object for a fresh instance. It runs inside the
	// instance's first turn, holding the gate, so BlockConcurrencyWhile in
	// a constructor delays every event until it finishes.
	construct func(ctx context.Context, st *State) (any, error)
	// alarms says whether the class's objects handle alarms: known from
	// the type for a concrete O, asked of each object for an interface O.
	alarms alarmSupport
	// methods are the class's typed methods (RegisterMethod, method.go).
	methods methodTable
}

type alarmSupport int

const (
	alarmsPerObject alarmSupport = iota // O is an interface type: ask the object
	alarmsYes                           // O implements Alarmer
	alarmsNo                            // O is a concrete type without an Alarm method
)

func alarmSupportOf(t reflect.Type) alarmSupport {
	switch {
	case t.Implements(reflect.TypeFor[Alarmer]()):
		return alarmsYes
	case t.Kind() == reflect.Interface:
		return alarmsPerObject
	}
	return alarmsNo
}

// Namespace hands out stubs and ids for one class. O is the type its
// constructor returns; Call gives handlers that type.
type Namespace[O any] struct {
	rt  *Runtime
	cls *class
}

// Register adds a class to the runtime. newObject builds the object for
// each fresh instance; it receives the cell's State (storage, alarms,
// BlockConcurrencyWhile) and the context of the instance's first turn.
// The object may implement http.Handler (for Stub.Fetch) and Alarmer (for
// alarms: State.SetAlarm on an object without an Alarm method is refused
// with a *NoAlarmHandlerError); any method can be called through Call.
//
// Registering a class also schedules the alarms stored in the local
// databases of that class (DataDir/<class>/), so alarms survive restarts.
func Register[O any](rt *Runtime, className string, newObject func(ctx context.Context, st *State) (O, error)) (*Namespace[O], error) {
	if err := validateClassName(className); err != nil {
		return nil, err
	}
	if newObject == nil {
		return nil, fmt.Errorf("cell: Register %s: nil constructor", className)
	}
	cls := &class{
		name: className,
		construct: func(ctx context.Context, st *State) (any, error) {
			return newObject(ctx, st)
		},
		alarms: alarmSupportOf(reflect.TypeFor[O]()),
	}
	rt.mu.Lock()
	if rt.closing {
		rt.mu.Unlock()
		return nil, ErrClosed
	}
	if _, dup := rt.classes[className]; dup {
		rt.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrDuplicateClass, className)
	}
	rt.classes[className] = cls
	rt.mu.Unlock()
	rt.alarms.scanClass(rt.bg, cls, nil)
	return &Namespace[O]{rt: rt, cls: cls}, nil
}

// Namespace returns an untyped view of a registered class, for code that
// routes by class name (Call then passes the object as any).
func (rt *Runtime) Namespace(className string) (*Namespace[any], error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	cls := rt.classes[className]
	if cls == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownClass, className)
	}
	return &Namespace[any]{rt: rt, cls: cls}, nil
}

// ClassName is the registered name of the class.
func (ns *Namespace[O]) ClassName() string { return ns.cls.name }

// IDFromName is the id celld derives from name for this class and the
// runtime's ScriptName.
func (ns *Namespace[O]) IDFromName(name string) ID {
	return IDFromName(ns.rt.opts.ScriptName, ns.cls.name, name)
}

// NewUniqueID returns a fresh random id for this class.
func (ns *Namespace[O]) NewUniqueID() (ID, error) {
	return NewUniqueID(ns.rt.opts.ScriptName, ns.cls.name)
}

// IDFromString parses an id made for this class (see IDFromString).
func (ns *Namespace[O]) IDFromString(s string) (ID, error) {
	return IDFromString(ns.rt.opts.ScriptName, ns.cls.name, s)
}

// Get returns the stub of the object with id. Stubs are cheap values; each
// call finds (or activates) the object's current instance.
func (ns *Namespace[O]) Get(id ID) *Stub[O] {
	return &Stub[O]{ns: ns, id: id}
}

// Key is the cell key of the object with id.
func (ns *Namespace[O]) Key(id ID) string { return CellKey(ns.cls.name, id) }
