package cell

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// ID identifies one object of a class. It is 32 bytes written as 64
// lower-case hex digits, computed exactly as celld computes Durable Object
// ids, so the same name reaches the same cell on CellB and on celld.
//
// The first 16 bytes are either derived from a name (IDFromName) or random
// (NewUniqueID); the last 16 bytes are an HMAC tag over the first 16 under a
// key derived from the deployment's script name and the class name, which
// is what lets IDFromString reject ids made for another class.
type ID struct {
	hex  string
	name string
}

// String is the 64-digit lower-case hex form.
func (id ID) String() string { return id.hex }

// Name is the name the id was derived from by IDFromName, or "" for ids
// from NewUniqueID or IDFromString.
func (id ID) Name() string { return id.name }

// IsZero reports whether id is the zero ID (not a valid id).
func (id ID) IsZero() bool { return id.hex == "" }

// Equal reports whether two ids name the same object.
func (id ID) Equal(other ID) bool { return id.hex == other.hex }

// namespaceKey is celld's per-class HMAC key:
// SHA-256("cells:v1:" + decimal len(script) + ":" + script + ":" + class).
func namespaceKey(scriptName, className string) []byte {
	nk := "cells:v1:" + strconv.Itoa(len(scriptName)) + ":" + scriptName + ":" + className
	k := sha256.Sum256([]byte(nk))
	return k[:]
}

func tag16(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)[:16]
}

func idFromHead(key, head []byte) string {
	var full [32]byte
	copy(full[:16], head)
	copy(full[16:], tag16(key, head))
	return hex.EncodeToString(full[:])
}

// IDFromName returns the id celld gives name in class className of the
// deployment scriptName.
func IDFromName(scriptName, className, name string) ID {
	key := namespaceKey(scriptName, className)
	return ID{hex: idFromHead(key, tag16(key, []byte(name))), name: name}
}

// NewUniqueID returns a fresh random id for class className of the
// deployment scriptName.
func NewUniqueID(scriptName, className string) (ID, error) {
	var head [16]byte
	if _, err := rand.Read(head[:]); err != nil {
		return ID{}, fmt.Errorf("cell: new unique id: %w", err)
	}
	return ID{hex: idFromHead(namespaceKey(scriptName, className), head[:])}, nil
}

// IDFromString parses a 64-digit hex id (either case) and checks that it
// was made for class className of deployment scriptName.
func IDFromString(scriptName, className, s string) (ID, error) {
	if len(s) != 64 {
		return ID{}, &InvalidIDError{ID: s, Reason: "an id is 64 hex digits"}
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return ID{}, &InvalidIDError{ID: s, Reason: "an id is 64 hex digits"}
	}
	want := tag16(namespaceKey(scriptName, className), raw[:16])
	if !hmac.Equal(want, raw[16:]) {
		return ID{}, &InvalidIDError{ID: s, Reason: "it was not made for class " + className + " of this deployment"}
	}
	return ID{hex: hex.EncodeToString(raw)}, nil
}
