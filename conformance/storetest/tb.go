package storetest

// tb is the part of testing.TB the cases use. Run and RunReport both hand
// the cases the shared runner's suite.Recorder.
//
// Cases call Fatalf only from the goroutine that runs the case; helper
// goroutines use Errorf.
type tb interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Failed() bool
}
