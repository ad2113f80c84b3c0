package cell

import "os"

// systemBootID is Linux's boot identity: a random id the kernel draws at
// every boot, so it differs after a power loss or an OS crash (the events
// that lose writes still in the page cache) and stays while processes
// come and go.
func systemBootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return string(b), err
}
