package natshub

// WithWaits sets how long a holder keeps a delivery answer back and how
// long a publish or Send waits for a silent replica. A test that sets both
// far beyond its own run shows that a path ends without either.
var WithWaits = withWaits
