package drivertest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cellb/cellb/core/driver"
)

// This file compares databases by content (rows), for claims that are not
// about bytes: a restored or changeset-updated copy holds the same data.

// dump returns every user table's rows as sorted text lines, keyed by table.
func (c *checkT) dump(conn driver.Conn) map[string][]string {
	out := map[string][]string{}
	for _, row := range c.query(conn, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name") {
		name, _ := row[0].(string)
		var lines []string
		for _, r := range c.query(conn, "SELECT * FROM "+quoteIdent(name)) {
			lines = append(lines, formatRow(r))
		}
		slices.Sort(lines)
		out[name] = lines
	}
	return out
}

// diffDumps describes how two dumps differ; "" when they are equal.
func diffDumps(got, want map[string][]string) string {
	var tables []string
	for t := range want {
		tables = append(tables, t)
	}
	for t := range got {
		if _, ok := want[t]; !ok {
			tables = append(tables, t)
		}
	}
	slices.Sort(tables)
	for _, t := range tables {
		g, gok := got[t]
		w, wok := want[t]
		switch {
		case !gok:
			return fmt.Sprintf("table %s is missing", t)
		case !wok:
			return fmt.Sprintf("unexpected table %s", t)
		case !slices.Equal(g, w):
			return fmt.Sprintf("table %s: %d rows, want %d; %s", t, len(g), len(w), firstLineDiff(g, w))
		}
	}
	return ""
}

func firstLineDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference: got %s, want %s", clip(got[i]), clip(want[i]))
		}
	}
	if len(got) > len(want) {
		return "extra row " + clip(got[len(want)])
	}
	if len(want) > len(got) {
		return "missing row " + clip(want[len(got)])
	}
	return "equal"
}

// formatRow renders a row so that different storage classes never print
// alike.
func formatRow(r []any) string {
	parts := make([]string, len(r))
	for i, v := range r {
		switch x := v.(type) {
		case nil:
			parts[i] = "NULL"
		case int64:
			parts[i] = fmt.Sprintf("i:%d", x)
		case float64:
			parts[i] = fmt.Sprintf("f:%v", x)
		case string:
			parts[i] = fmt.Sprintf("s:%q", x)
		case []byte:
			parts[i] = fmt.Sprintf("b:%x", x)
		default:
			parts[i] = fmt.Sprintf("?%T:%v", x, x)
		}
	}
	return strings.Join(parts, "|")
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
