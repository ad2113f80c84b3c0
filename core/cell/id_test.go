package cell

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The id algorithm is celld's (see /work/shared/spec/celld-bucket-format.md
// section 3, "Cell key naming"): NK = "cells:v1:" + decimal byte length of
// the script name + ":" + script name + ":" + class; K = SHA-256(NK);
// id[0:16] = HMAC-SHA256(K, name)[0:16]; id[16:32] = HMAC-SHA256(K,
// id[0:16])[0:16]; lower-case hex.
//
// The vectors were computed outside Go, with Node's crypto module, and the
// test recomputes each one step by step without the package's helpers.
var idVectors = []struct{ script, class, name, id string }{
	{"my-worker", "Counter", "alice", "5fb985e0c520daaf241006c7aa19f88d9891d7e03d664960d5805f807b9b7512"},
	{"", "Counter", "", "e814f32d936ca40a856f7bc8e7a960dfad2c3671e052d9daca00c86d1c828166"},
	{"app", "Room", "lobby", "ec726464b2fefdd122420422b8860986c427bcae6142c70eef8ac9cfc5782712"},
	{"wörker", "Chat", "日本", "7fab5857fb9f6b0b8bb8fb91f8f0416801c2bec7ab2fb5e676f64795c6d4c28f"},
	{"cells:v1:d1", "__D1Database", "db", "a753795e1417d489cc40f9c837744453aebc3b0ab3f61146c11c47cdfe3ccfa1"},
}

func independentID(script, class, name string) string {
	nk := fmt.Sprintf("cells:v1:%d:%s:%s", len([]byte(script)), script, class)
	sum := sha256.Sum256([]byte(nk))
	mac := hmac.New(sha256.New, sum[:])
	mac.Write([]byte(name))
	head := mac.Sum(nil)[:16]
	mac2 := hmac.New(sha256.New, sum[:])
	mac2.Write(head)
	tail := mac2.Sum(nil)[:16]
	return hex.EncodeToString(head) + hex.EncodeToString(tail)
}

func TestIDFromNameVectors(t *testing.T) {
	for _, v := range idVectors {
		got := IDFromName(v.script, v.class, v.name)
		if got.String() != v.id {
			t.Errorf("IDFromName(%q, %q, %q) = %s, want %s", v.script, v.class, v.name, got, v.id)
		}
		if ind := independentID(v.script, v.class, v.name); ind != v.id {
			t.Errorf("independent computation gives %s, vector says %s", ind, v.id)
		}
		if got.Name() != v.name {
			t.Errorf("Name() = %q, want %q", got.Name(), v.name)
		}
	}
}

func TestIDFromString(t *testing.T) {
	v := idVectors[0]
	id, err := IDFromString(v.script, v.class, strings.ToUpper(v.id))
	if err != nil || id.String() != v.id {
		t.Fatalf("IDFromString(upper) = %v, %v; want the lower-case id", id, err)
	}
	if id.Name() != "" {
		t.Errorf("an id from a string has name %q", id.Name())
	}
	bad := []string{
		"", "abc", v.id[:63], v.id + "0", "zz" + v.id[2:],
		v.id[:32] + strings.Repeat("0", 32), // wrong tail
	}
	for _, s := range bad {
		var ie *InvalidIDError
		if _, err := IDFromString(v.script, v.class, s); !errors.As(err, &ie) {
			t.Errorf("IDFromString(%q) = %v, want *InvalidIDError", s, err)
		}
	}
	// An id made for another class or deployment is rejected.
	if _, err := IDFromString(v.script, "Other", v.id); err == nil {
		t.Error("an id of another class was accepted")
	}
	if _, err := IDFromString("other-worker", v.class, v.id); err == nil {
		t.Error("an id of another deployment was accepted")
	}
}

func TestNewUniqueID(t *testing.T) {
	a, err := NewUniqueID("w", "C")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewUniqueID("w", "C")
	if a.Equal(b) || len(a.String()) != 64 {
		t.Fatalf("unique ids %s, %s", a, b)
	}
	if _, err := IDFromString("w", "C", a.String()); err != nil {
		t.Errorf("a unique id does not validate: %v", err)
	}
	if _, err := IDFromString("w", "D", a.String()); err == nil {
		t.Error("a unique id validated for another class")
	}
}

func TestValidateCellKey(t *testing.T) {
	ok := []string{"C:" + idVectors[0].id, "a", "A-b_c.d:e$f", strings.Repeat("x", 255), ".a", "..."}
	for _, k := range ok {
		if err := ValidateCellKey(k); err != nil {
			t.Errorf("ValidateCellKey(%q) = %v", k, err)
		}
	}
	bad := []string{"", ".", "..", strings.Repeat("x", 256), "a/b", `a\b`, "a b", "é", "a\x00", "a%2f"}
	for _, k := range bad {
		var ie *InvalidCellKeyError
		if err := ValidateCellKey(k); !errors.As(err, &ie) {
			t.Errorf("ValidateCellKey(%q) = %v, want *InvalidCellKeyError", k, err)
		}
	}
}

func TestClassNamesAndPaths(t *testing.T) {
	for _, c := range []string{"Counter", "my_class-2", "$x", "a.b"} {
		if err := validateClassName(c); err != nil {
			t.Errorf("validateClassName(%q) = %v", c, err)
		}
	}
	for _, c := range []string{"", ".", "..", ".hidden", "a:b", "a/b", "a b", strings.Repeat("x", 191)} {
		if err := validateClassName(c); err == nil {
			t.Errorf("validateClassName(%q) accepted", c)
		}
	}
	id := idVectors[0].id
	p, err := DatabasePath("/data", "Counter:"+id)
	if err != nil || p != "/data/Counter/"+id+".sqlite3" {
		t.Errorf("DatabasePath = %q, %v", p, err)
	}
	for _, k := range []string{"Counter", "..:x", "Counter:", "Counter:a:b", "Counter:.x", "a/b:c"} {
		if _, err := DatabasePath("/data", k); err == nil {
			t.Errorf("DatabasePath(%q) accepted", k)
		}
	}
}

func FuzzIDFromString(f *testing.F) {
	for _, v := range idVectors {
		f.Add(v.script, v.class, v.id)
		f.Add(v.script, v.class, strings.ToUpper(v.id))
	}
	f.Add("w", "C", "not hex")
	f.Fuzz(func(t *testing.T, script, class, s string) {
		id, err := IDFromString(script, class, s)
		if err != nil {
			var ie *InvalidIDError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InvalidIDError", err)
			}
			return
		}
		if id.String() != strings.ToLower(s) {
			t.Fatalf("accepted %q as %q", s, id)
		}
		if ValidateCellKey("C:"+id.String()) != nil {
			t.Fatalf("an accepted id %q makes an invalid cell key", id)
		}
	})
}
