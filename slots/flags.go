package slots

// Flag is a command property, as Redis's COMMAND INFO lists them.
type Flag uint32

// Command flags, in the order COMMAND INFO prints them (FlagNames follows
// this order). FlagMayReplicate is kept for dispatch decisions although
// Redis hides it from COMMAND INFO.
const (
	FlagWrite Flag = 1 << iota
	FlagReadOnly
	FlagDenyOOM
	FlagModule
	FlagAdmin
	FlagPubSub
	FlagNoScript
	FlagBlocking
	FlagLoading
	FlagStale
	FlagSkipMonitor
	FlagSkipSlowlog
	FlagAsking
	FlagFast
	FlagNoAuth
	FlagMayReplicate
	FlagNoMandatoryKeys
	FlagNoAsyncLoading
	FlagNoMulti
	FlagMovableKeys
	FlagAllowBusy
)

// FlagNames maps each printed flag to its COMMAND INFO name, in print order.
var FlagNames = []struct {
	Flag Flag
	Name string
}{
	{FlagWrite, "write"},
	{FlagReadOnly, "readonly"},
	{FlagDenyOOM, "denyoom"},
	{FlagModule, "module"},
	{FlagAdmin, "admin"},
	{FlagPubSub, "pubsub"},
	{FlagNoScript, "noscript"},
	{FlagBlocking, "blocking"},
	{FlagLoading, "loading"},
	{FlagStale, "stale"},
	{FlagSkipMonitor, "skip_monitor"},
	{FlagSkipSlowlog, "skip_slowlog"},
	{FlagAsking, "asking"},
	{FlagFast, "fast"},
	{FlagNoAuth, "no_auth"},
	{FlagNoMandatoryKeys, "no_mandatory_keys"},
	{FlagNoAsyncLoading, "no_async_loading"},
	{FlagNoMulti, "no_multi"},
	{FlagMovableKeys, "movablekeys"},
	{FlagAllowBusy, "allow_busy"},
}

// ACLCategory is a set of ACL categories ("@read", "@string", ...).
type ACLCategory uint32

// ACL categories, in the order COMMAND INFO prints them.
const (
	ACLKeyspace ACLCategory = 1 << iota
	ACLRead
	ACLWrite
	ACLSet
	ACLSortedSet
	ACLList
	ACLHash
	ACLString
	ACLBitmap
	ACLHyperLogLog
	ACLGeo
	ACLStream
	ACLPubSub
	ACLAdmin
	ACLFast
	ACLSlow
	ACLBlocking
	ACLDangerous
	ACLConnection
	ACLTransaction
	ACLScripting
)

// ACLNames maps each category to its name without the '@', in print order.
var ACLNames = []struct {
	Cat  ACLCategory
	Name string
}{
	{ACLKeyspace, "keyspace"},
	{ACLRead, "read"},
	{ACLWrite, "write"},
	{ACLSet, "set"},
	{ACLSortedSet, "sortedset"},
	{ACLList, "list"},
	{ACLHash, "hash"},
	{ACLString, "string"},
	{ACLBitmap, "bitmap"},
	{ACLHyperLogLog, "hyperloglog"},
	{ACLGeo, "geo"},
	{ACLStream, "stream"},
	{ACLPubSub, "pubsub"},
	{ACLAdmin, "admin"},
	{ACLFast, "fast"},
	{ACLSlow, "slow"},
	{ACLBlocking, "blocking"},
	{ACLDangerous, "dangerous"},
	{ACLConnection, "connection"},
	{ACLTransaction, "transaction"},
	{ACLScripting, "scripting"},
}

// KeySpecFlag describes how a key spec's keys are used (Redis 7 key specs).
type KeySpecFlag uint16

// Key spec flags, in the order COMMAND INFO prints them.
const (
	KeyRO KeySpecFlag = 1 << iota
	KeyRW
	KeyOW
	KeyRM
	KeyAccess
	KeyUpdate
	KeyInsert
	KeyDelete
	KeyNotKey
	KeyIncomplete
	KeyVariableFlags
)

// KeySpecFlagNames maps each key spec flag to its name, in print order.
var KeySpecFlagNames = []struct {
	Flag KeySpecFlag
	Name string
}{
	{KeyRO, "RO"},
	{KeyRW, "RW"},
	{KeyOW, "OW"},
	{KeyRM, "RM"},
	{KeyAccess, "access"},
	{KeyUpdate, "update"},
	{KeyInsert, "insert"},
	{KeyDelete, "delete"},
	{KeyNotKey, "not_key"},
	{KeyIncomplete, "incomplete"},
	{KeyVariableFlags, "variable_flags"},
}
