package wake

// maxCellKeyLen is celld's bound on a cell key ("scope").
const maxCellKeyLen = 255

// cellKeyProblem checks a cell key against celld's fence (valid_cell_scope):
// 1–255 bytes, not "." or "..", only ASCII letters, digits and _ - . : $.
// It returns "" when the key is valid. celld does not require the ':' of
// "<Class>:<id>" here, so neither do we: an entry celld would wake is one
// we must be able to read. The rules are those of core/cell's
// ValidateCellKey, repeated because core/cell may not be imported here.
func cellKeyProblem(key string) string {
	switch {
	case key == "":
		return "the cell key is empty"
	case len(key) > maxCellKeyLen:
		return "the cell key is longer than 255 bytes"
	case key == "." || key == "..":
		return `the cell key is "." or ".."`
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || c == '.' || c == ':' || c == '$') {
			return "the cell key has a byte outside [A-Za-z0-9_.:$-]"
		}
	}
	return ""
}
