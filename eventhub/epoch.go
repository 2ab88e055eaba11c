package eventhub

// OwnsEventID reports whether id is an event id this hub instance issued
// (its epoch tag), so a hub that spans processes can tell a Last-Event-ID
// this instance can replay from its own ring from one issued elsewhere.
// Ids that do not parse are not owned. Safe for concurrent use.
func (h *InProcess) OwnsEventID(id string) bool {
	epoch, _, err := ParseEventID(id)
	return err == nil && epoch == h.epoch
}
