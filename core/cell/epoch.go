package cell

// Epoch is the lease epoch this instance of the cell runs under: it grows
// with every activation under a fleet lease (one writer per epoch), and is 0
// without ownership. Useful in logs and diagnostics.
func (s *State) Epoch() uint64 {
	if s.inst.grant == nil {
		return 0
	}
	return s.inst.grant.Epoch()
}
