# Running commands in a VM (sourced by vm.sh). A job is a directory
# $LAB_CACHE/vms/NAME/jobs/ID holding
#   cmd.sh   written here: the command, run by bash in the caller's directory
#   owner    the pid of the vm.sh that waits for the job (it removes the
#            directory when done; killjobs leaves it to that process)
#   pid      written by the agent once the job runs
#   out      the job's stdout and stderr
#   rc       its exit status, written last
# and is started by the request "go ID" to the VM's agent (guest/agent.sh).

# job_new CMD...: makes a job directory for CMD and prints its id.
job_new() {
	local id j
	id=$(date +%s%N)-$$
	j=$(vm_state)/jobs/$id
	mkdir -p "$j"
	{
		printf 'cd %q 2>/dev/null || cd /\n' "$PWD"
		printf '%q ' "$@"
		echo
	} >"$j/cmd.sh"
	echo $$ >"$j/owner"
	echo "$id"
}

# job_attach ID: copies the job's output to stdout as it grows, until the
# job ends; sets JOB_RC. INT, TERM and HUP stop the job in the VM too
# (vm.sh cannot forward SIGKILL: killjobs is for that case).
job_attach() {
	local id=$1 j off=0 done_
	j=$(vm_state)/jobs/$id
	JOB_RC=
	trap 'job_interrupt '"$id"' 130' INT
	trap 'job_interrupt '"$id"' 143' TERM
	trap 'job_interrupt '"$id"' 129' HUP
	# A request sent before the agent listens could be lost: wait for a
	# VM still booting (started by another vm.sh).
	while [ ! -f "$(vm_state)/ready" ]; do
		vm_running || break
		sleep 0.1
	done
	ctl_send "go $id"
	while [ -z "$JOB_RC" ]; do
		done_=0
		[ -f "$j/rc" ] && done_=1
		job_drain
		if [ $done_ = 1 ]; then
			JOB_RC=$(<"$j/rc")
		elif ! vm_running; then
			echo "VM '$VM_NAME' stopped while running the job" >&2
			JOB_RC=125
		elif [ ! -d "$j" ]; then
			echo "job $id disappeared (VM stopped?)" >&2
			JOB_RC=137
		else
			sleep 0.05
		fi
	done
	trap - INT TERM HUP
	rm -rf "$j"
}

# job_drain: prints what the job wrote since the last call (uses j, off).
# One process reads exactly the bytes counted: the file keeps growing while
# it is copied, and a pipeline whose reader stops early would kill its
# writer with SIGPIPE.
job_drain() {
	local size
	[ -f "$j/out" ] || return 0
	size=$(stat -c %s "$j/out")
	if ((size > off)); then
		dd if="$j/out" iflag=skip_bytes,count_bytes skip="$off" count="$((size - off))" \
			bs=64K status=none
		off=$size
	fi
}

# job_interrupt ID STATUS: a signal reached vm.sh exec. The agent sends
# SIGTERM to the job's group and SIGKILL 2 s later; wait for its status,
# pass on its last output, and end with the signal's status.
job_interrupt() {
	local i
	trap '' INT TERM HUP
	ctl_send "kill $1"
	for i in $(seq 100); do
		[ -f "$j/rc" ] && break
		sleep 0.05
	done
	job_drain
	rm -rf "$j"
	exit "$2"
}

# jobs_kill: stops every job still running in the VM, waits for them to end
# and removes the finished jobs no vm.sh waits for any more.
jobs_kill() {
	local d n=0 left i owner
	for d in "$(vm_state)"/jobs/*/; do
		[ -d "$d" ] && [ ! -f "$d/rc" ] || continue
		ctl_send "kill $(basename "$d")"
		n=$((n + 1))
	done
	for i in $(seq 100); do
		left=0
		for d in "$(vm_state)"/jobs/*/; do
			if [ -d "$d" ] && [ ! -f "$d/rc" ]; then left=$((left + 1)); fi
		done
		[ $left = 0 ] && break
		sleep 0.1
	done
	for d in "$(vm_state)"/jobs/*/; do
		[ -f "$d/rc" ] || continue
		owner=$(cat "$d/owner" 2>/dev/null)
		[ -n "$owner" ] && kill -0 "$owner" 2>/dev/null && continue
		rm -rf "$d"
	done
	echo "VM '$VM_NAME': stopped $n job(s)"
	if [ $left != 0 ]; then
		echo "VM '$VM_NAME': $left job(s) did not end" >&2
		return 1
	fi
}
