#!/bin/bash
# PID 1 of the VM once the root is mounted (init.sh hands over to it).
#
# It loads the RDS and RDMA modules, brings up eth0 and the requested rdma
# links, tells the host it is ready, and then serves the job protocol:
# the host writes one line per request into the VM's second serial port
# (ttyS1), and the agent answers through files in the VM's state directory
# in the cache, which the VM sees uncached over 9p:
#
#   go ID     run jobs/ID/cmd.sh in a new session; write jobs/ID/pid, the
#             output to jobs/ID/out, and the exit status to jobs/ID/rc
#   kill ID   SIGTERM to the job's process group, SIGKILL 2 s later
#   stop      power off
#
# Blocking on the serial port, rather than polling the state directory,
# keeps an idle VM idle: under emulation a polling loop costs a visible
# share of the vCPUs that benchmarks run on.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
# The request port stays open from here on: the driver resets the UART's
# receive FIFO whenever the port is opened afresh, and must not echo what
# the host writes back to it.
exec 3</dev/ttyS1
stty raw -echo <&3

dir= cache= state= name=vm ip= rdma= verbose=0
for arg in $(</proc/cmdline); do
	case $arg in
	lab.dir=*) dir=${arg#*=} ;;
	lab.cache=*) cache=${arg#*=} ;;
	lab.state=*) state=${arg#*=} ;;
	lab.name=*) name=${arg#*=} ;;
	lab.ip=*) ip=${arg#*=} ;;
	lab.rdma=*) rdma=${arg#*=} ;;
	lab.verbose=*) verbose=${arg#*=} ;;
	esac
done
[ "$rdma" = none ] && rdma=
export LAB_DIR=$dir LAB_CACHE=$cache

log() {
	echo "$*" >>/run/lab/agent.log
	[ "$verbose" = 1 ] && echo "lab agent: $*" >/dev/console
}
fail() {
	echo "lab agent: $*" >/dev/console
	echo o >/proc/sysrq-trigger
}

# devtmpfs makes device nodes but none of the links udev would; bash's
# process substitution needs /dev/fd.
ln -sfn /proc/self/fd /dev/fd
ln -sfn /proc/self/fd/0 /dev/stdin
ln -sfn /proc/self/fd/1 /dev/stdout
ln -sfn /proc/self/fd/2 /dev/stderr
mkdir -p /dev/pts /dev/shm /run/lock
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# The host's /lib/modules belongs to the host's kernel; the VM's modules
# are the ones setup.sh unpacked into the cache.
mount --bind "$cache/kernel/lib/modules" /lib/modules || fail "no modules in $cache/kernel"
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
hostname "lab-$name"
log "up at $(cut -d' ' -f1 /proc/uptime) s"

mods="virtio_net rds rds_tcp ib_core ib_uverbs ib_umad iw_cm ib_cm rdma_cm rdma_ucm"
case ",$rdma" in *:siw:*) mods="$mods siw" ;; esac
case ",$rdma" in *:rxe:*) mods="$mods rdma_rxe" ;; esac
modprobe -a $mods 2>>/run/lab/agent.log || log "modprobe -a $mods failed"
sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip link set lo up
ip link set eth0 up
ip addr add "$ip" dev eth0 || fail "cannot set $ip on eth0"
IFS=, read -ra links <<<"$rdma"
for l in "${links[@]}"; do
	IFS=: read -r dev type netdev <<<"$l"
	rdma link add "$dev" type "$type" netdev "$netdev" 2>>/run/lab/agent.log ||
		log "rdma link add $dev type $type netdev $netdev failed"
done
# Registering memory for RDMA pins it; the default limit is 8 MiB.
ulimit -l unlimited

start_job() {
	local j=$state/jobs/$1
	[ -f "$j/cmd.sh" ] || { log "go $1: no such job"; return; }
	(
		# Not a group leader, so setsid makes the job's pid its session
		# and process group id: kill_job signals the whole group.
		setsid bash "$j/cmd.sh" </dev/null >"$j/out" 2>&1 3<&- &
		p=$!
		echo "$p" >"$j/pid.new" && mv "$j/pid.new" "$j/pid"
		wait "$p"
		echo $? >"$j/rc.new" && mv "$j/rc.new" "$j/rc"
	) &
}

kill_job() {
	local j=$state/jobs/$1 p i
	for i in $(seq 50); do # a kill may overtake the start it follows
		[ -s "$j/pid" ] || [ -f "$j/rc" ] || [ ! -d "$j" ] && break
		sleep 0.1
	done
	[ -s "$j/pid" ] && [ ! -f "$j/rc" ] || return 0
	p=$(<"$j/pid")
	kill -TERM -- "-$p" 2>/dev/null || return 0
	for i in $(seq 20); do
		[ -f "$j/rc" ] && return 0
		sleep 0.1
	done
	kill -KILL -- "-$p" 2>/dev/null
}

mkdir -p "$state/jobs"
uptime=$(cut -d' ' -f1 /proc/uptime)
log "ready at $uptime s"
echo "$uptime" >"$state/ready.new" && mv "$state/ready.new" "$state/ready"

while :; do
	if ! read -r verb id <&3; then
		sleep 1 # a serial port does not end; never spin if it fails
		continue
	fi
	case $verb in
	go) start_job "$id" ;;
	kill) kill_job "$id" & ;;
	stop) break ;;
	*) log "unknown request '$verb $id'" ;;
	esac
done
log "stop at $(cut -d' ' -f1 /proc/uptime) s"
sync
# The host's poweroff asks systemd, which does not run here.
echo o >/proc/sysrq-trigger
sleep 5
busybox poweroff -f
