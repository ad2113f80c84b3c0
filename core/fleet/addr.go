package fleet

// UnroutableAddr is the address a node that does not speak celld's peer
// protocol advertises: celld routes to it, fails, and refuses the call,
// instead of treating the live owner as dead. ".invalid" never resolves.
func UnroutableAddr(node string) string { return node + ".cellb.invalid:9" }
