package cell

import "testing"

func TestMayAddColumns(t *testing.T) {
	for q, want := range map[string]bool{
		"CREATE TABLE t(x)": true, "create  temp table t(x)": true, "CREATE VIRTUAL TABLE f USING fts5(x)": true,
		"alter table t add column y": true, "INSERT INTO t(created_at) VALUES(1)": false,
		"SELECT * FROM tables": false, "CREATE INDEX i ON t(x)": false, "CREATE TABLE IF NOT EXISTS t(x)": true,
	} {
		if got := mayAddColumns(q); got != want {
			t.Errorf("mayAddColumns(%q) = %v, want %v", q, got, want)
		}
	}
}
