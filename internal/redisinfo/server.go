package redisinfo

import (
	"hash/fnv"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"
)

// Server is what INFO server says about one process besides what every
// shardgate process says alike.
type Server struct {
	Version string // the Redis release followed (redis_version)
	Mode    string // redis_mode: "cluster" or "standalone"
	RunID   string
	Port    string // tcp_port
	Now     time.Time
	Start   time.Time
}

// ServerFields gives INFO server with Redis 7.0.15's fields in its order.
// Fields about how Redis was built (git sha1, gcc) have Redis's values for
// a build without that information; os is uname's system, release and
// machine, as Redis prints it.
func ServerFields(s Server, field func(k, v string)) {
	up := int64(s.Now.Sub(s.Start).Seconds())
	exe, _ := os.Executable()
	num := func(k string, v int64) { field(k, strconv.FormatInt(v, 10)) }
	field("redis_version", s.Version)
	field("redis_git_sha1", "00000000")
	field("redis_git_dirty", "0")
	field("redis_build_id", buildID(s.Version))
	field("redis_mode", s.Mode)
	field("os", osName())
	num("arch_bits", strconv.IntSize)
	field("monotonic_clock", "Go runtime monotonic clock")
	field("multiplexing_api", pollerName())
	field("atomicvar_api", "go-sync/atomic")
	field("gcc_version", "0.0.0") // built by the Go toolchain
	num("process_id", int64(os.Getpid()))
	field("process_supervised", "no")
	field("run_id", s.RunID)
	field("tcp_port", s.Port)
	num("server_time_usec", s.Now.UnixMicro())
	num("uptime_in_seconds", up)
	num("uptime_in_days", up/86400)
	num("hz", 10)
	num("configured_hz", 10)
	num("lru_clock", s.Now.Unix()&(1<<24-1))
	field("executable", exe)
	field("config_file", "")
	num("io_threads_active", 0)
}

// buildID stands for Redis's build id (a hash of how the binary was
// built, in hex): a hash of the Redis release followed and of the Go
// build's description (module versions, toolchain, VCS stamp), the same
// for every process of one build.
func buildID(version string) string {
	h := fnv.New64a()
	h.Write([]byte(version))
	if bi, ok := debug.ReadBuildInfo(); ok {
		h.Write([]byte(bi.String()))
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// pollerName is the readiness API the Go runtime's network poller uses.
func pollerName() string {
	switch runtime.GOOS {
	case "linux", "android":
		return "epoll"
	case "darwin", "freebsd", "netbsd", "openbsd", "dragonfly", "ios":
		return "kqueue"
	case "windows":
		return "iocp"
	}
	return "go-netpoll"
}
