package resp

// Redis 7.0.15's error replies, to the letter. Every reply text shardgate
// sends that Redis also sends lives here; handlers refer to these names and
// never spell the texts themselves. Texts with a %s take arguments through
// the formatting helpers below.
const (
	ErrSyntax        = "ERR syntax error"
	ErrNotInteger    = "ERR value is not an integer or out of range"
	ErrNotFloat      = "ERR value is not a valid float"
	ErrOverflow      = "ERR increment or decrement would overflow"
	ErrIncrNaNOrInf  = "ERR increment would produce NaN or Infinity"
	ErrWrongType     = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNoSuchKey     = "ERR no such key"
	ErrStringTooLong = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	ErrOffsetRange   = "ERR offset is out of range"
	// LCS (Redis 7.0's lcsCommand).
	ErrLcsNotStrings = "ERR The specified keys must contain string values"
	ErrLcsLenAndIdx  = "ERR If you want both the length and indexes, please just use IDX."
	ErrLcsTooBig     = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
	ErrInvalidExpire = "ERR invalid expire time in '%s' command"
	ErrCrossSlot     = "CROSSSLOT Keys in request don't hash to the same slot"
	// ErrClusterDownSlot is Redis Cluster's reply for a slot nobody
	// serves; the proxy gives it for the slots of a node it cannot reach.
	ErrClusterDownSlot = "CLUSTERDOWN Hash slot not served"
	// ErrClusterDown is Redis Cluster's reply to keyed commands while the
	// cluster is down; the proxy gives it to the rest of a pipeline one
	// of whose commands could not reach its node (proxy/refuse.go).
	ErrClusterDown = "CLUSTERDOWN The cluster is down"
	// ErrClusterDownNode (proxy) answers a command that needs every node
	// (DBSIZE, KEYS, FLUSHALL ...) while one cannot be reached: it has
	// no slot of its own to name, so the node is named instead.
	ErrClusterDownNode = "CLUSTERDOWN node %s is down and the command needs every node"
	// ErrNodeConnLost (proxy) fails requests that were in flight on a
	// node connection that broke: whether they ran is unknown.
	ErrNodeConnLost = "ERR connection to node %s lost; the command may or may not have run"
	// ErrProxyConfigSetMixed refuses, on the proxy, a CONFIG SET of the
	// slow log's parameters (set on every node) together with a node
	// parameter the proxy must first read from a node.
	ErrProxyConfigSetMixed = "ERR CONFIG SET of slowlog-* together with a node parameter is not supported by the shardgate proxy: set them in two commands"
	// ErrSlowlogCount is SLOWLOG GET's error for a count below -1 or not
	// an integer.
	ErrSlowlogCount = "ERR count should be greater than or equal to -1"
	// ErrSplitPart (proxy, --cross-slot split) names the part of a split
	// command that failed: slot, node, and the node's error.
	ErrSplitPart = "ERR cross-slot part for slot %d on node %s failed: %s"
	// CLUSTER COUNTKEYSINSLOT / GETKEYSINSLOT.
	ErrInvalidSlot       = "ERR Invalid slot"
	ErrInvalidSlotOrKeys = "ERR Invalid slot or number of keys"
	ErrMaxClients        = "ERR max number of clients + cluster connections reached" // a cluster-enabled Redis's text, as INFO says cluster_enabled:1
	// ErrOOM refuses a command that may grow the data while used memory
	// is over maxmemory (noeviction).
	ErrOOM = "OOM command not allowed when used memory > 'maxmemory'."
	// ErrLoading refuses a command while the server loads its data.
	ErrLoading = "LOADING Redis is loading the dataset in memory"
	// CONFIG REWRITE: shardgate servers take flags, never a config file.
	ErrNoConfigFile = "ERR The server is running without a config file"
	// ErrProxyNotInMulti (proxy) refuses, inside MULTI, a command that
	// concerns the client's connection to the proxy and so cannot run in
	// a node's transaction.
	ErrProxyNotInMulti = "ERR '%s' inside MULTI is not supported by the shardgate proxy"
	ErrNoAuth          = "NOAUTH Authentication required."
	ErrWrongPass       = "WRONGPASS invalid username-password pair or user is disabled."
	ErrAuthNoPassword  = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	// Persistence: BGREWRITEAOF, BGSAVE, SAVE, SHUTDOWN.
	ErrRewriteInProgress = "ERR Background append only file rewriting already in progress"
	ErrRewriteFailed     = "ERR Can't execute an AOF background rewriting. Please check the server logs for more information."
	ErrSaveInProgress    = "ERR Background save already in progress"
	ErrBgsaveBusy        = "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible."
	ErrSaveFailed        = "ERR" // Redis's shared.err: a bare "-ERR" (the reason is in the log)
	ErrNoShutdown        = "ERR No shutdown in progress."
	ErrShutdownFailed    = "ERR Errors trying to SHUTDOWN. Check logs."
	// ErrNoDataDir (node) refuses SAVE/BGSAVE on a node started without
	// --dir: it has nowhere to keep a snapshot.
	ErrNoDataDir = "ERR this node keeps no data on disk (started without --dir)"
	// ErrProxyShutdown (proxy): SHUTDOWN is sent to a node, never through
	// the proxy, which would otherwise have to stop every node at once.
	ErrProxyShutdown = "ERR SHUTDOWN is not served by the shardgate proxy: send it to a node (or stop the proxy with SIGTERM)"
	// ErrSegmentBitsMismatch (proxy) refuses segmented-bitmap commands on
	// a proxy whose --segment-bits differs from the size the cluster's
	// segmented bitmaps were written with (first the cluster's, then the
	// proxy's).
	ErrSegmentBitsMismatch = "ERR this cluster's segmented bitmaps use --segment-bits %s but this proxy has %d: every proxy must use the same"
	ErrSelectCluster       = "ERR SELECT is not allowed in cluster mode"
	ErrMoveCluster         = "ERR MOVE is not allowed in cluster mode"
	ErrSwapDBCluster       = "ERR SWAPDB is not allowed in cluster mode"
	// ErrDebugDisabled is the reply to DEBUG while enable-debug-command is
	// "no" (Redis's default, and always so in shardgate).
	ErrDebugDisabled   = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
	ErrDBIndexRange    = "ERR DB index is out of range"
	ErrMultiNested     = "ERR MULTI calls can not be nested"
	ErrExecNoMulti     = "ERR EXEC without MULTI"
	ErrDiscardNoMulti  = "ERR DISCARD without MULTI"
	ErrWatchInMulti    = "ERR WATCH inside MULTI is not allowed"
	ErrExecAbort       = "EXECABORT Transaction discarded because of previous errors."
	ErrInternalPanic   = "ERR internal error while running the command (the node logged it)"
	ErrProtoMaxBulkLen = "ERR Protocol error: invalid bulk length"

	// Transactions (node/multi.go).
	ErrExecAbortBecause = "EXECABORT Transaction discarded because of: %s"
	ErrNoMultiCommand   = "ERR Command not allowed inside a transaction"
	// ErrMonitorInTx is MONITOR run by EXEC (Redis's DENY BLOCKING
	// client); ErrMonitorKeyspace refuses a monitoring connection a
	// command that reads or writes data.
	ErrMonitorInTx     = "ERR MONITOR isn't allowed for DENY BLOCKING client"
	ErrMonitorKeyspace = "ERR Replica can't interact with the keyspace"

	// Connection and server commands (node/conn_cmds.go, client_cmds.go,
	// config.go).
	ErrNoProto             = "NOPROTO unsupported protocol version"
	ErrHelloProtoVersion   = "ERR Protocol version is not an integer or out of range"
	ErrHelloOption         = "ERR Syntax error in HELLO option '%s'"
	ErrHelloNoAuth         = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	ErrIntRange            = "ERR value is out of range, value must between %d and %d"
	ErrClientName          = "ERR Client names cannot contain spaces, newlines or special characters."
	ErrNoSuchClient        = "ERR No such client"
	ErrUnblockReason       = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
	ErrSubcommandSyntax    = "ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP."
	ErrClientIDRange       = "ERR client-id should be greater than 0"
	ErrInvalidClientID     = "ERR Invalid client ID"
	ErrUnknownClientType   = "ERR Unknown client type '%s'"
	ErrUnknownNode         = "ERR Unknown node %s" // CLUSTER REPLICAS/SLAVES
	ErrNoSuchUser          = "ERR No such user '%s'"
	ErrConfigSetUnknown    = "ERR Unknown option or number of arguments for CONFIG SET - '%s'"
	ErrConfigSetFailed     = "ERR CONFIG SET failed (possibly related to argument '%s') - %s"
	ConfigReasonImmutable  = "can't set immutable config"
	ConfigReasonProtected  = "can't set protected config"
	ConfigReasonDuplicate  = "duplicate parameter"
	ConfigReasonNotInteger = "argument couldn't be parsed into an integer"
	ConfigReasonNotMemory  = "argument must be a memory value"
	ConfigReasonRange      = "argument must be between %d and %d inclusive"
	ConfigReasonYesNo      = "argument must be 'yes' or 'no'"
	// The rest of CONFIG SET's reasons for values (config.c), for
	// parameters of Redis's a server here keeps fixed.
	ConfigReasonEnum             = "argument(s) must be one of the following: " // then the values, ", " apart
	ConfigReasonNotMemoryPct     = "argument must be a memory or percent value"
	ConfigReasonPercentMax       = "percentage argument must be less or equal to %d"
	ConfigReasonEventClass       = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
	ConfigReasonOutputLimitArgs  = "Wrong number of arguments in buffer limit configuration."
	ConfigReasonOutputLimitClass = "Invalid client class specified in buffer limit configuration."
	ConfigReasonOutputLimitValue = "Error in hard, soft or soft_seconds setting in buffer limit configuration."
	ConfigReasonWrongArgs        = "wrong number of arguments"
	ConfigReasonOOMScore         = "Invalid oom-score-adj-values, elements must be between -2000 and 2000."
	ConfigReasonSave             = "Invalid save parameters"
	ConfigReasonHostname         = "Hostnames may only contain alphanumeric characters, hyphens or dots"
	// latency-tracking-info-percentiles's reasons (config.c).
	ConfigReasonPercentiles      = "Invalid latency-tracking-info-percentiles parameters"
	ConfigReasonPercentilesRange = "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
	// ConfigReasonMaxClientsOS is updateMaxclients's reason when the
	// open-files limit cannot take that many clients.
	ConfigReasonMaxClientsOS = "The operating system is not able to handle the specified number of clients, try with %d"

	// Strings (node/engine/strings*.go).
	ErrDecrOverflow = "ERR decrement would overflow"
	ErrWrongArgs    = "ERR wrong number of arguments for '%s' command"

	// COMMAND (node/cmd_command.go).
	ErrGetKeysInvalidCommand = "ERR Invalid command specified"
	ErrGetKeysArity          = "ERR Invalid number of arguments specified for command"
	ErrGetKeysNoKeys         = "ERR The command has no key arguments"
	ErrGetKeysInvalidArgs    = "ERR Invalid arguments specified for command"

	// Keyspace commands (node/engine/keyspace_cmds.go, scan.go, object.go).
	ErrInvalidCursor     = "ERR invalid cursor"
	ErrExpireNXCombo     = "ERR NX and XX, GT or LT options at the same time are not compatible"
	ErrExpireGTLT        = "ERR GT and LT options at the same time are not compatible"
	ErrUnsupportedOption = "ERR Unsupported option %s"
	ErrSameObject        = "ERR source and destination objects are the same"
	ErrCopyCrossDB       = "ERR Copying to another database is not allowed in cluster mode"
	ErrIntOutOfRange     = "ERR value is out of range, value must between %d and %d"
	ErrLFUNotSelected    = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	ErrLFUSelected       = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."

	// Bitmaps (node/engine/bits_cmds.go); BITFIELD shares ErrBitOffset.
	ErrBitOffset = "ERR bit offset is not an integer or out of range"
	ErrBitValue  = "ERR bit is not an integer or out of range"
	ErrBitposBit = "ERR The bit argument must be 1 or 0."
	ErrBitopNot  = "ERR BITOP NOT must be called with a single source key."

	// HyperLogLog (node/engine/hll*.go).
	ErrNotHLL           = "WRONGTYPE Key is not a valid HyperLogLog string value."
	ErrCorruptHLL       = "INVALIDOBJ Corrupted HLL object detected"
	ErrPFDebugNoKey     = "ERR The specified key does not exist"
	ErrPFDebugNotSparse = "ERR HLL encoding is not sparse"
	ErrPFDebugUnknown   = "ERR Unknown PFDEBUG subcommand '%s'"
	ErrPFSelfTestFailed = "TESTFAILED %s"

	// BITFIELD and BITFIELD_RO (node/engine/bitfield*.go); bad offsets
	// reply ErrBitOffset.
	ErrBitfieldType     = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	ErrBitfieldOverflow = "ERR Invalid OVERFLOW type specified"
	ErrBitfieldRO       = "ERR BITFIELD_RO only supports the GET subcommand"

	// Lists (node/engine/list_cmds.go).
	ErrIndexOutOfRange    = "ERR index out of range"
	ErrPositiveCount      = "ERR value is out of range, must be positive"
	ErrLposRankZero       = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	ErrLposCountNegative  = "ERR COUNT can't be negative"
	ErrLposMaxlenNegative = "ERR MAXLEN can't be negative"
	ErrNumkeysNotPositive = "ERR numkeys should be greater than 0"

	// SORT (node/engine/sort_cmds.go), as a Redis 7.0 Cluster node
	// answers it.
	ErrSortByCluster  = "ERR BY option of SORT denied in Cluster mode."
	ErrSortGetCluster = "ERR GET option of SORT denied in Cluster mode."
	ErrSortScores     = "ERR One or more scores can't be converted into double"

	ErrMpopCountNotPositive = "ERR count should be greater than 0"
)

// Blocking commands (node/blocking*.go), as Redis 7.0's
// getTimeoutFromObjectOrReply and CLIENT UNBLOCK ... ERROR word them.
const (
	ErrTimeoutNotFloat = "ERR timeout is not a float or out of range"
	ErrTimeoutNegative = "ERR timeout is negative"
	// ErrTimeoutNotInt: a timeout in milliseconds (XREAD BLOCK, WAIT).
	ErrTimeoutNotInt = "ERR timeout is not an integer or out of range"
	ErrUnblocked     = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
	// ErrPauseMode: CLIENT PAUSE's mode is neither WRITE nor ALL.
	ErrPauseMode = "ERR CLIENT PAUSE mode must be WRITE or ALL"
)

// Streams (node/engine/stream_cmds.go, stream_info.go), as Redis 7.0's
// t_stream.c words them. ErrStreamInvalidID is shared by every command
// that reads a stream id.
const (
	ErrStreamInvalidID        = "ERR Invalid stream ID specified as stream command argument"
	ErrStreamIDTooSmall       = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	ErrStreamIDZero           = "ERR The ID specified in XADD must be greater than 0-0"
	ErrStreamExhausted        = "ERR The stream has exhausted the last possible ID, unable to add more items"
	ErrStreamTooLarge         = "ERR Elements are too large to be stored"
	ErrStreamMaxlenAndMinid   = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
	ErrStreamMaxlenNegative   = "ERR The MAXLEN argument must be >= 0."
	ErrStreamLimitNegative    = "ERR The LIMIT argument must be >= 0."
	ErrStreamLimitNoStrategy  = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	ErrStreamXtrimNoStrategy  = "ERR syntax error, XTRIM must be called with a trimming strategy"
	ErrStreamLimitNoApprox    = "ERR syntax error, LIMIT cannot be used without the special ~ option"
	ErrStreamIntervalStart    = "ERR invalid start ID for the interval"
	ErrStreamIntervalEnd      = "ERR invalid end ID for the interval"
	ErrXsetidEntriesNegative  = "ERR entries_added must be positive"
	ErrXsetidBelowMaxDeleted  = "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
	ErrXsetidBelowTop         = "ERR The ID specified in XSETID is smaller than the target stream top item"
	ErrXsetidEntriesBelowSize = "ERR The entries_added specified in XSETID is smaller than the target stream length"
)

// Consumer groups (node/engine/stream_group_cmds.go), as Redis 7.0's
// t_stream.c words them. The NOGROUP texts differ per command: XGROUP and
// XINFO CONSUMERS name the group first, XPENDING, XCLAIM and XAUTOCLAIM
// the key first.
const (
	ErrXgroupKeyMissing  = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	ErrXgroupNoGroup     = "NOGROUP No such consumer group '%s' for key name '%s'"
	ErrXgroupBusy        = "BUSYGROUP Consumer Group name already exists"
	ErrXgroupEntriesRead = "ERR value for ENTRIESREAD must be positive or -1"
	ErrXNoKeyOrGroup     = "NOGROUP No such key '%s' or consumer group '%s'"
	ErrXclaimMinIdle     = "ERR Invalid min-idle-time argument for XCLAIM"
	ErrXclaimIdle        = "ERR Invalid IDLE option argument for XCLAIM"
	ErrXclaimTime        = "ERR Invalid TIME option argument for XCLAIM"
	ErrXclaimRetryCount  = "ERR Invalid RETRYCOUNT option argument for XCLAIM"
	ErrXclaimOption      = "ERR Unrecognized XCLAIM option '%s'"
	ErrXautoclaimMinIdle = "ERR Invalid min-idle-time argument for XAUTOCLAIM"
	ErrXautoclaimCount   = "ERR COUNT must be > 0"
	ErrXautoclaimMemory  = "ERR Insufficient memory, failed allocating transient memory, COUNT too high."
)

// XREAD and XREADGROUP (node/engine/stream_read.go, node/blocking_stream.go),
// as Redis 7.0.15's xreadCommand and its blocked-client code word them.
// XREADGROUP's unbalanced list is also called 'XREAD' there.
const (
	ErrXreadUnbalanced      = "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
	ErrXreadGroupOption     = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
	ErrXreadNoackOption     = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
	ErrXreadgroupNoGroupOpt = "ERR Missing GROUP option for XREADGROUP"
	ErrXreadgroupNoGroup    = "NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option"
	ErrXreadgroupDollar     = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
	ErrXreadGreaterID       = "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
	// A blocked XREADGROUP whose key was deleted or replaced by another
	// type, or whose group was destroyed.
	ErrXreadgroupKeyGone   = "UNBLOCKED the stream key no longer exists"
	ErrXreadgroupGroupGone = "NOGROUP the consumer group this client was blocked on no longer exists"
)

// Redis Cluster's redirection of a command for a slot another node serves
// (node/ownership.go): slot, then the owner's host:port.
const ErrMoved = "MOVED %d %s"

// ErrTryAgain is Redis Cluster's answer to a multi-key command during a
// slot's migration; a shardgate node gives it to any command for a slot
// whose migration fence outlasted the node's wait (node/migrate.go), and
// the proxy retries it with backoff.
const ErrTryAgain = "TRYAGAIN Multiple keys request during rehashing of slot"
