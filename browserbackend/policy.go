package browserbackend

// Policy decides whether a failed candidate gives way to the next one during
// an invocation's first command. It is a plain value: copy it,
// compare its Name in tests, log it. The zero value behaves as DefaultPolicy.
type Policy struct {
	// Name identifies the policy in logs.
	Name string
	// Failover reports whether the walk may try the next candidate after err
	// ended a candidate at stage (StageConstruction or StageSend). nil means
	// DefaultFailover. It is called on the sending goroutine and must not block.
	Failover func(err *Error, stage Stage) bool
}

// DefaultFailover fails over on transport errors only: a protocol
// error, a timeout after dispatch, a cancellation or a closed client end the
// walk.
func DefaultFailover(err *Error, _ Stage) bool { return err.Class == ClassTransport }

// NoReplayFailover fails over on transport errors only when the command
// cannot have reached a browser: construction failures and sends that report
// Dispatched == false. It suits commands that must never run twice.
func NoReplayFailover(err *Error, stage Stage) bool {
	return err.Class == ClassTransport && (stage == StageConstruction || !err.Dispatched)
}

// The ready-made policies.
var (
	// DefaultPolicy fails over on transport errors only (DefaultFailover).
	DefaultPolicy = Policy{Name: "default", Failover: DefaultFailover}
	// NoReplayPolicy never fails over once a command may have reached a
	// browser; the returned error's Dispatched field says whether it did.
	NoReplayPolicy = Policy{Name: "no-replay", Failover: NoReplayFailover}
)

func (p Policy) failover(err *Error, stage Stage) bool {
	if p.Failover == nil {
		return DefaultFailover(err, stage)
	}
	return p.Failover(err, stage)
}

func (p Policy) name() string {
	if p.Name == "" {
		return DefaultPolicy.Name
	}
	return p.Name
}
