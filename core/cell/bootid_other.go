//go:build !linux

package cell

// systemBootID: no boot identity here, so single-host cells keep syncing
// their local file once per group commit.
func systemBootID() (string, error) { return "", errNoBootID }
