# Shared helpers of the bench/*.sh scripts; source it, do not run it.

# free_port prints a TCP port nothing listens on (the kernel-assigned port
# of a throwaway listener would be better, but bash has none). It picks
# below 32768, where Linux's outgoing connections take their local ports
# (a port in use by one refuses connections, so it looks free, but it
# cannot be bound).
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 12000))
		if command -v ss >/dev/null && [[ -n $(ss -Htan "sport = :$p") ]]; then
			continue
		fi
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "no free port found" >&2
	exit 1
}

# wait_ping waits until something answers PING on a port.
wait_ping() {
	local port=$1
	for _ in $(seq 200); do
		if [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]]; then
			return
		fi
		sleep 0.05
	done
	echo "nothing answers PING on port $port" >&2
	exit 1
}
