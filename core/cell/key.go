package cell

import (
	"path/filepath"
	"strings"
)

// maxCellKeyLen is celld's limit on a cell key ("scope").
const maxCellKeyLen = 255

// CellKey is celld's name for a cell: "<Class>:<id>". It is used verbatim in
// bucket keys and as the scope column of the _cf_* tables.
func CellKey(className string, id ID) string { return className + ":" + id.String() }

// ValidateCellKey checks a cell key against celld's fence: 1–255 bytes, not
// "." or "..", only ASCII letters, digits and _ - . : $. celld escapes
// nothing, so a key outside the fence could never reach a bucket.
func ValidateCellKey(key string) error {
	switch {
	case key == "":
		return &InvalidCellKeyError{Key: key, Reason: "it is empty"}
	case len(key) > maxCellKeyLen:
		return &InvalidCellKeyError{Key: key, Reason: "it is longer than 255 bytes"}
	case key == "." || key == "..":
		return &InvalidCellKeyError{Key: key, Reason: `it is "." or ".."`}
	}
	for i := 0; i < len(key); i++ {
		if !keyByte(key[i]) {
			return &InvalidCellKeyError{Key: key, Reason: "byte " + quoteByte(key[i]) + " is outside [A-Za-z0-9_.:$-]"}
		}
	}
	return nil
}

// validateClassName keeps class names inside the cell-key fence, free of
// ':' (the separator) and not starting with '.', so that a class is also a
// safe directory name under the data directory.
func validateClassName(name string) error {
	if name == "" {
		return &InvalidCellKeyError{Key: name, Reason: "a class name is empty"}
	}
	if name[0] == '.' {
		return &InvalidCellKeyError{Key: name, Reason: "a class name may not start with '.'"}
	}
	if len(name)+1+64 > maxCellKeyLen {
		return &InvalidCellKeyError{Key: name, Reason: "a class name longer than 190 bytes makes cell keys over 255 bytes"}
	}
	for i := 0; i < len(name); i++ {
		if name[i] == ':' || !keyByte(name[i]) {
			return &InvalidCellKeyError{Key: name, Reason: "byte " + quoteByte(name[i]) + " is not allowed in a class name ([A-Za-z0-9_.$-])"}
		}
	}
	return nil
}

func keyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == ':' || c == '$'
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return "'" + string(c) + "'"
	}
	const digits = "0123456789abcdef"
	return "0x" + string(digits[c>>4]) + string(digits[c&15])
}

// DatabasePath is where the runtime keeps the SQLite database of cell key
// under dataDir: <dataDir>/<Class>/<id>.sqlite3. Keeping ':' out of file
// names keeps the layout portable.
func DatabasePath(dataDir, key string) (string, error) {
	if err := ValidateCellKey(key); err != nil {
		return "", err
	}
	class, id, ok := strings.Cut(key, ":")
	if !ok || id == "" {
		return "", &InvalidCellKeyError{Key: key, Reason: "it is not <Class>:<id>"}
	}
	if err := validateClassName(class); err != nil {
		return "", err
	}
	if strings.ContainsAny(id, ":") || id[0] == '.' {
		return "", &InvalidCellKeyError{Key: key, Reason: "its id part is not a plain file name"}
	}
	return filepath.Join(dataDir, class, id+dbSuffix), nil
}

const dbSuffix = ".sqlite3"
