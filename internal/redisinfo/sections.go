package redisinfo

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
)

// ReplicationFields gives INFO replication as a Redis 7.0 master without
// replicas has it: shardgate has no replication, and tools that read
// role:master (redis-py's info("replication"), monitoring agents) should
// see a master rather than an empty section.
func ReplicationFields(replID string, field func(k, v string)) {
	for _, f := range [...][2]string{
		{"role", "master"},
		{"connected_slaves", "0"},
		{"master_failover_state", "no-failover"},
		{"master_replid", replID},
		{"master_replid2", strings.Repeat("0", 40)},
		{"master_repl_offset", "0"},
		{"second_repl_offset", "-1"},
		{"repl_backlog_active", "0"},
		{"repl_backlog_size", "1048576"},
		{"repl_backlog_first_byte_offset", "0"},
		{"repl_backlog_histlen", "0"},
	} {
		field(f[0], f[1])
	}
}

// CPUFields gives INFO cpu from the process's own CPU time, six decimals
// as Redis prints them; shardgate forks no children. Redis's main-thread
// fields are the process's time again: Go spreads the work Redis's main
// thread does over its threads, so no one thread stands for it.
func CPUFields(field func(k, v string)) {
	user, sys := ProcessCPU()
	secs := func(s float64) string { return strconv.FormatFloat(s, 'f', 6, 64) }
	field("used_cpu_sys", secs(sys.Seconds()))
	field("used_cpu_user", secs(user.Seconds()))
	field("used_cpu_sys_children", secs(0))
	field("used_cpu_user_children", secs(0))
	field("used_cpu_sys_main_thread", secs(sys.Seconds()))
	field("used_cpu_user_main_thread", secs(user.Seconds()))
}

// RandomHex returns n random bytes in hex: run_id and master_replid are
// 40 such characters.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
