package main

import (
	"flag"
	"reflect"
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
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		txid := fs.Int("txid", 0, "")
		q := fs.Bool("q", false, "")
		pos, err := parseFlags(fs, c.args)
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
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("txid", 0, "")
	if _, err := parseFlags(fs, []string{"a", "--nope"}); err == nil {
		t.Error("unknown flag after a positional argument was accepted")
	}
}
