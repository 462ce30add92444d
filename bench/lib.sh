# Shared helpers of the bench/*.sh scripts; source it, do not run it.

# free_port prints a TCP port nothing listens on (the kernel-assigned port
# of a throwaway listener would be better, but bash has none).
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 20000))
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
