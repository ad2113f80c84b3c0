package cli

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseFlagsInterspersed(t *testing.T) {
	cases := []struct {
		args     []string
		wantPos  []string
		wantTxid int
		wantQ    bool
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, 0, false},
		{[]string{"--txid", "5", "a", "b"}, []string{"a", "b"}, 5, false},
		{[]string{"a", "--txid", "5", "b"}, []string{"a", "b"}, 5, false},
		{[]string{"a", "b", "--txid=7", "-q"}, []string{"a", "b"}, 7, true},
		{[]string{"a", "--", "-q"}, []string{"a", "-q"}, 0, false},
		{[]string{"-q", "--", "--txid"}, []string{"--txid"}, 0, true},
	}
	for _, c := range cases {
		cl := New("prog", "t", "", "", 0, -1, "")
		txid := cl.Flags.Int("txid", 0, "")
		q := cl.Flags.Bool("q", false, "")
		pos, err := cl.ParseArgs(c.args)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if !reflect.DeepEqual(pos, c.wantPos) && !(len(pos) == 0 && len(c.wantPos) == 0) {
			t.Errorf("%v: positional %v, want %v", c.args, pos, c.wantPos)
		}
		if *txid != c.wantTxid || *q != c.wantQ {
			t.Errorf("%v: txid=%d q=%v, want %d %v", c.args, *txid, *q, c.wantTxid, c.wantQ)
		}
	}
	cl := New("prog", "t", "", "", 0, -1, "")
	cl.Flags.Int("txid", 0, "")
	cl.Flags.Bool("q", false, "")
	cl.Alias("old-txid", "txid")
	for args, want := range map[string]string{
		"a --nope":     "unknown flag --nope",
		"-nope=1 a":    "unknown flag -nope",
		"a --txid":     "--txid needs a value",
		"--txid x":     `bad value "x" for --txid: want a whole number`,
		"--q=maybe":    `bad value "maybe" for --q: want true or false`,
		"--old-txid=x": `bad value "x" for --txid: want a whole number`,
		"--=1":         "unknown flag --",
		"---txid=1":    "unknown flag ---txid",
	} {
		_, err := cl.ParseArgs(strings.Fields(args))
		var ue *UsageError
		if !errors.As(err, &ue) || err.Error() != want {
			t.Errorf("%s: %v, want usage error %q", args, err, want)
		}
	}
	for _, h := range []string{"-h", "--help", "-help"} {
		if _, err := cl.ParseArgs([]string{"a", h, "--nope"}); !errors.Is(err, ErrHelp) {
			t.Errorf("%s: %v", h, err)
		}
	}
	if _, err := cl.ParseArgs([]string{"--old-txid", "4"}); err != nil || cl.Flags.Lookup("txid").Value.String() != "4" {
		t.Errorf("alias: %v", err)
	}
}
