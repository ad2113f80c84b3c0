package gcs

import "testing"

func TestIsLoopbackURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"http://127.0.0.1:4443": true, "http://localhost/": true, "http://[::1]:80": true,
		"https://storage.example": false, "127.0.0.1": false, "http://10.0.0.1": false,
	} {
		if got := isLoopbackURL(raw); got != want {
			t.Errorf("isLoopbackURL(%q) = %v", raw, got)
		}
	}
}
