package engine

// Consumer-group progress as Redis 7.0 counts it: a group's entries-read
// is the logical position of its last delivered id among all entries
// ever added, kept exactly while no deletion lies ahead of it and
// estimated otherwise; its lag is entries-added minus that position.
// Deletions (XDEL) leave tombstones that make positions between the first
// entry and the greatest deleted id unknowable, and then Redis answers
// null. These are 7.0.15's rules (later versions changed the estimate).

// invalidEntriesRead is Redis's SCG_INVALID_ENTRIES_READ: the counter is
// not known.
const invalidEntriesRead = -1

// EstimateDistance is Redis's streamEstimateDistanceFromFirstEverEntry:
// the logical read counter of id (how many entries ever added come up to
// it), or -1 when it cannot be known.
func (s *Stream) EstimateDistance(id StreamID) int64 {
	if s.entriesAdded == 0 {
		return 0 // nothing was ever added: every id is at 0
	}
	// An empty stream: every id up to the last one has seen it all.
	if s.length == 0 && id.Compare(s.lastID) < 1 {
		return s.entriesAdded
	}
	switch id.Compare(s.lastID) {
	case 0:
		return s.entriesAdded
	case 1:
		return invalidEntriesRead // the future
	}
	// Before or at the first entry, and no tombstone from the first entry
	// on: the entries before the first are all gone.
	if s.maxDeletedID.IsZero() || s.maxDeletedID.Less(s.firstID) {
		switch id.Compare(s.firstID) {
		case -1:
			return s.entriesAdded - s.length
		case 0:
			return s.entriesAdded - s.length + 1
		}
	}
	return invalidEntriesRead
}

// RangeHasTombstones is Redis's streamRangeHasTombstones: whether the
// greatest deleted id lies within [start, end] of a non-empty stream
// (and at or after its first entry). Redis's NULL bounds are 0-0 and
// MaxStreamID.
func (s *Stream) RangeHasTombstones(start, end StreamID) bool {
	if s.length == 0 || s.maxDeletedID.IsZero() {
		return false
	}
	if s.maxDeletedID.Less(s.firstID) {
		return false // the last tombstone is before the first entry
	}
	return !s.maxDeletedID.Less(start) && !end.Less(s.maxDeletedID)
}

// GroupLag is XINFO's lag of g (Redis 7.0's streamReplyWithCGLag): how
// many entries remain to be delivered to it, or false (null) when that
// cannot be known.
func (s *Stream) GroupLag(g *StreamGroup) (int64, bool) {
	if s.entriesAdded == 0 {
		return 0, true
	}
	if g.EntriesRead != invalidEntriesRead && !s.RangeHasTombstones(g.LastID, MaxStreamID) {
		return s.entriesAdded - g.EntriesRead, true
	}
	read := s.EstimateDistance(g.LastID)
	if read == invalidEntriesRead {
		return 0, false
	}
	return s.entriesAdded - read, true
}

// GroupDelivered moves g's last delivered id to id, when id is past it,
// as XREADGROUP does for each new entry it delivers (Redis 7.0's
// streamReplyWithRange): the read counter goes up by one while it is
// valid and no tombstone lies from id on, else it is estimated afresh.
func (s *Stream) GroupDelivered(g *StreamGroup, id StreamID) {
	if !g.LastID.Less(id) {
		return
	}
	if g.EntriesRead != invalidEntriesRead && !s.RangeHasTombstones(id, MaxStreamID) {
		g.EntriesRead++
	} else if s.entriesAdded != 0 {
		g.EntriesRead = s.EstimateDistance(id)
	}
	g.LastID = id
}
