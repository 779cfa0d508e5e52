# Shell helpers shared by the CI scripts (deploy/ci-*.sh), sourced, not run.
# The sourcing script defines die.

# free_port prints a loopback port nothing listens on, below the ephemeral
# range (32768 and up), which the local ends of client sockets take.
free_port() {
	local p
	for _ in $(seq 1 200); do
		p=$((10000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	die "no free port found"
}

# listening PORT: something accepts connections on the loopback port.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_for SECONDS COMMAND... polls COMMAND every 0.2 s; it fails when
# COMMAND did not succeed within SECONDS.
wait_for() {
	local limit=$1 i
	shift
	for ((i = 0; i < limit * 5; i++)); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	return 1
}
