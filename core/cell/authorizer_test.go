package cell

import (
	"strings"
	"testing"

	"github.com/cellb/cellb/core/driver"
)

func TestUserPolicy(t *testing.T) {
	tests := []struct {
		action     driver.Action
		arg1, arg2 string
		deny       string // substring the denial must carry; "" = allowed
	}{
		{driver.ActionRead, "t", "v", ""},
		{driver.ActionRead, "_cf_KV", "v", "_cf_KV"},
		{driver.ActionRead, "_CF_kv", "v", "_CF_kv"},
		{driver.ActionInsert, "_cf_ALARM", "", "_cf_ALARM"},
		{driver.ActionUpdate, "_litestream_seq", "seq", "_litestream_seq"},
		{driver.ActionDelete, "_cf_METADATA", "", "_cf_METADATA"},
		{driver.ActionCreateTable, "_cf_mine", "", "_cf_mine"},
		{driver.ActionCreateIndex, "i", "_cf_KV", "_cf_KV"},
		{driver.ActionCreateTrigger, "trg", "_cf_ALARM", "_cf_ALARM"},
		{driver.ActionDropTable, "_litestream_lock", "", "_litestream_lock"},
		{driver.ActionAlterTable, "main", "_cf_KV", "_cf_KV"},
		{driver.ActionRead, "sqlite_dbpage", "data", "sqlite_dbpage"},
		{driver.ActionCreateTable, "users", "", ""},
		{driver.ActionAttach, "other.db", "", "ATTACH"},
		{driver.ActionDetach, "other", "", "DETACH"},
		{driver.ActionFunction, "", "load_extension", "load_extension"},
		{driver.ActionFunction, "", "LOAD_EXTENSION", "LOAD_EXTENSION"},
		{driver.ActionFunction, "", "json_extract", ""},
		{driver.ActionTransaction, "BEGIN", "", "TRANSACTION BEGIN"},
		{driver.ActionTransaction, "COMMIT", "", "TRANSACTION"},
		{driver.ActionSavepoint, "BEGIN", "sp", "SAVEPOINT"},
		{driver.ActionPragma, "journal_mode", "wal", "journal_mode=wal"},
		{driver.ActionPragma, "journal_mode", "", ""},
		{driver.ActionPragma, "synchronous", "OFF", "synchronous"},
		{driver.ActionPragma, "locking_mode", "EXCLUSIVE", "locking_mode"},
		{driver.ActionPragma, "wal_autocheckpoint", "0", "wal_autocheckpoint"},
		{driver.ActionPragma, "wal_checkpoint", "", "wal_checkpoint"},
		{driver.ActionPragma, "writable_schema", "1", "writable_schema"},
		{driver.ActionPragma, "schema_version", "5", "schema_version"},
		{driver.ActionPragma, "schema_version", "", ""},
		{driver.ActionPragma, "page_size", "8192", "page_size"},
		{driver.ActionPragma, "auto_vacuum", "FULL", "auto_vacuum"},
		{driver.ActionPragma, "mmap_size", "1", "mmap_size"},
		{driver.ActionPragma, "query_only", "1", "query_only"},
		{driver.ActionPragma, "temp_store_directory", "/tmp", "temp_store_directory"},
		{driver.ActionPragma, "table_info", "t", ""},
		{driver.ActionPragma, "table_info", "_cf_KV", "_cf_KV"},
		{driver.ActionPragma, "foreign_keys", "ON", ""},
		{driver.ActionPragma, "user_version", "3", ""},
		{driver.ActionPragma, "integrity_check", "", ""},
		{driver.ActionSelect, "", "", ""},
	}
	for _, tt := range tests {
		d := userPolicy(tt.action, tt.arg1, tt.arg2)
		switch {
		case tt.deny == "" && d != nil:
			t.Errorf("%v(%q, %q) denied: %v", tt.action, tt.arg1, tt.arg2, d)
		case tt.deny != "" && d == nil:
			t.Errorf("%v(%q, %q) allowed, want a denial naming %s", tt.action, tt.arg1, tt.arg2, tt.deny)
		case d != nil && !strings.Contains(d.Error(), tt.deny):
			t.Errorf("%v(%q, %q): denial %q does not name %q", tt.action, tt.arg1, tt.arg2, d, tt.deny)
		}
	}
}

func TestRenameTargets(t *testing.T) {
	tests := []struct {
		sql  string
		want []string
	}{
		{"ALTER TABLE t RENAME TO _cf_x", []string{"_cf_x"}},
		{"alter table t rename to \"a\"\"b\"", []string{`a"b`}},
		{"ALTER TABLE t RENAME TO [x y]", []string{"x y"}},
		{"ALTER TABLE t RENAME TO `q`", []string{"q"}},
		{"ALTER TABLE t RENAME TO 'it''s'", []string{"it's"}},
		{"ALTER TABLE t RENAME /* c */ TO -- c\n n", []string{"n"}},
		{"ALTER TABLE t RENAME a TO b", nil},
		{"ALTER TABLE t RENAME COLUMN a TO b", nil},
		{"SELECT 'RENAME TO _cf_x' -- RENAME TO _cf_y", nil},
		{"SELECT \"RENAME TO x\"", nil},
		{"/* unterminated RENAME TO x", nil},
		{"SELECT 1; ALTER TABLE t RENAME TO u; ALTER TABLE u RENAME TO v", []string{"u", "v"}},
		{"ALTER TABLE t RENAME TO", nil},
		{"ALTER TABLE t RENAME TO ;", nil},
		{"ALTER TABLE t RENAME TO é_x", []string{"é_x"}},
	}
	for _, tt := range tests {
		got := renameTargets(tt.sql)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("renameTargets(%q) = %q, want %q", tt.sql, got, tt.want)
		}
	}
	if d := renamePolicy("ALTER TABLE t RENAME TO _Litestream_x"); d == nil || !strings.Contains(d.Error(), "RENAME TO _Litestream_x") {
		t.Errorf("renamePolicy = %v, want a denial naming the new name", d)
	}
	if d := renamePolicy("ALTER TABLE t RENAME TO users"); d != nil {
		t.Errorf("renamePolicy(users) = %v, want nil", d)
	}
}
