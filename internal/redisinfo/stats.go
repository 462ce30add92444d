package redisinfo

import "strconv"

// Stats is what INFO stats reports; the fields of what shardgate does not
// do (replication, forks, eviction, Pub/Sub, defragmentation, client-side
// caching, I/O threads, DUMP payloads) are 0.
type Stats struct {
	Connections      int64 // total_connections_received
	Commands         int64 // total_commands_processed
	Ops              float64
	NetInput         int64
	NetOutput        int64
	InputRate        float64 // bytes per second
	OutputRate       float64
	Rejected         int64 // rejected_connections
	ExpiredKeys      int64
	ExpireCycleMs    int64 // expire_cycle_cpu_milliseconds
	ExpireTimeCap    int64 // expired_time_cap_reached_count
	KeyspaceHits     int64
	KeyspaceMisses   int64
	UnexpectedErrors int64 // unexpected_error_replies
	ErrorReplies     int64 // total_error_replies
	Reads            int64 // total_reads_processed
	Writes           int64 // total_writes_processed
}

// StatsSection gives INFO stats with Redis 7.0's fields in its order.
func StatsSection(st Stats, field func(k, v string)) {
	num := func(k string, n int64) { field(k, strconv.FormatInt(n, 10)) }
	kbps := func(k string, bytesPerSec float64) { field(k, strconv.FormatFloat(bytesPerSec/1024, 'f', 2, 64)) }
	zero := func(keys ...string) {
		for _, k := range keys {
			field(k, "0")
		}
	}
	num("total_connections_received", st.Connections)
	num("total_commands_processed", st.Commands)
	num("instantaneous_ops_per_sec", int64(st.Ops))
	num("total_net_input_bytes", st.NetInput)
	num("total_net_output_bytes", st.NetOutput)
	zero("total_net_repl_input_bytes", "total_net_repl_output_bytes")
	kbps("instantaneous_input_kbps", st.InputRate)
	kbps("instantaneous_output_kbps", st.OutputRate)
	kbps("instantaneous_input_repl_kbps", 0)
	kbps("instantaneous_output_repl_kbps", 0)
	num("rejected_connections", st.Rejected)
	zero("sync_full", "sync_partial_ok", "sync_partial_err")
	num("expired_keys", st.ExpiredKeys)
	// Redis's estimate of expired keys not yet reclaimed comes from its
	// expire cycle's sampling, which shardgate's does not keep.
	field("expired_stale_perc", "0.00")
	num("expired_time_cap_reached_count", st.ExpireTimeCap)
	num("expire_cycle_cpu_milliseconds", st.ExpireCycleMs)
	zero("evicted_keys", "evicted_clients", "total_eviction_exceeded_time", "current_eviction_exceeded_time")
	num("keyspace_hits", st.KeyspaceHits)
	num("keyspace_misses", st.KeyspaceMisses)
	zero("pubsub_channels", "pubsub_patterns", "pubsubshard_channels", "latest_fork_usec", "total_forks",
		"migrate_cached_sockets", "slave_expires_tracked_keys", "active_defrag_hits", "active_defrag_misses",
		"active_defrag_key_hits", "active_defrag_key_misses", "total_active_defrag_time",
		"current_active_defrag_time", "tracking_total_keys", "tracking_total_items", "tracking_total_prefixes")
	num("unexpected_error_replies", st.UnexpectedErrors)
	num("total_error_replies", st.ErrorReplies)
	zero("dump_payload_sanitizations")
	num("total_reads_processed", st.Reads)
	num("total_writes_processed", st.Writes)
	zero("io_threaded_reads_processed", "io_threaded_writes_processed", "reply_buffer_shrinks", "reply_buffer_expands")
}
