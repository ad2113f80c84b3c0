package s3

// SetCopyPartSize sets the part size of multipart copies for a test and
// returns a function that restores it.
func SetCopyPartSize(n int64) (restore func()) {
	old := maxCopyPart
	maxCopyPart = n
	return func() { maxCopyPart = old }
}
