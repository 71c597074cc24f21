package pullnames

// Problem is one thing wrong with a pull Application, in words a user can act on. The hub
// Application's PullModelError and PullModelWarning conditions list them, an Event of the
// reason announces each, and a MulticlusterApplicationSetReport's entry carries the
// spoke's: always as String writes it, "<Reason>: <Message>", so that a reader finds the
// reason first.
type Problem struct {
	Reason  string
	Message string
}

func (p Problem) String() string { return p.Reason + ": " + p.Message }
