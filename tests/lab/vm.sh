#!/bin/bash
# Boots and drives the lab's VMs: a Debian kernel under QEMU whose root is
# the host's root (read-only, with a throw-away overlay), with the kernel's
# RDS/TCP, siw and rxe, on a private bridge with the host side at
# 192.168.77.1. README.md describes it in full.
#
#   vm.sh [OPTIONS] [--] CMD...       boot, run CMD, power off; exits with CMD's status
#   vm.sh start [OPTIONS]             boot in the background; returns once the VM is ready
#   vm.sh exec [--name N] [--] CMD... run CMD in a running VM (as root, in the caller's
#                                     directory); output streamed, exit status kept;
#                                     INT, TERM and HUP stop CMD in the VM as well
#   vm.sh killjobs [--name N]         stop every job still running in the VM
#   vm.sh stop [--name N]             power the VM off
#   vm.sh status [--name N]           exit 0 when it runs
#   vm.sh nsexec [--] CMD...          run CMD on the host inside the lab's namespace,
#                                     where it has 192.168.77.1 and reaches the VMs
#   vm.sh net up|down                 make or remove the namespace (down refuses while
#                                     any VM of any lab copy runs)
#
# OPTIONS: --name N (vm)  --ip 192.168.77.X (.2)  --cpus N (2)  --mem MiB (4096)
#          --accel auto|kvm|tcg (auto; env LAB_ACCEL)  -v (kernel messages to the console log)
#          --rdma "DEV:siw|rxe:NETDEV,..." (siw0:siw:eth0,siw_lo:siw:lo; "" for none)
#          --share DIR (repeatable: DIR is visible read-write and uncached in the VM)
# Environment: LAB_CACHE, the cache setup.sh filled (default /var/cache/ratlab);
#              LAB_KERNEL_ARGS, more arguments for the VM kernel's command line.
set -euo pipefail
LAB_DIR=$(cd "$(dirname "$0")" && pwd -P)
. "$LAB_DIR/lib/common.sh"
. "$LAB_DIR/lib/net.sh"
. "$LAB_DIR/lib/machine.sh"
. "$LAB_DIR/lib/jobs.sh"

usage() { sed -n '7,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

cmd=run
case ${1:-} in
start | exec | killjobs | stop | status | nsexec | net) cmd=$1; shift ;;
-h | --help | help) usage ;;
esac

need_root
case $cmd in
nsexec)
	[ "${1:-}" = -- ] && shift
	[ $# -gt 0 ] || usage
	net_up
	[ -d "$LAB_CACHE" ] && LAB_CACHE=$(cd "$LAB_CACHE" && pwd -P)
	export LAB_CACHE LAB_DIR
	exec ip netns exec "$LAB_NETNS" "$@"
	;;
net)
	case ${1:-} in
	up) net_up ;;
	down) net_down ;;
	*) usage ;;
	esac
	exit 0
	;;
esac

while [ $# -gt 0 ]; do
	case $1 in
	--name | --ip | --cpus | --mem | --accel | --rdma | --share)
		[ $# -ge 2 ] || die "$1 needs a value"
		case $1 in
		--name) VM_NAME=$2 ;;
		--ip) VM_IP=$2 ;;
		--cpus) VM_CPUS=$2 ;;
		--mem) VM_MEM=$2 ;;
		--accel) VM_ACCEL=$2 ;;
		--rdma) VM_RDMA=$2 ;;
		--share)
			[ -d "$2" ] || die "--share $2: not a directory"
			VM_SHARES+=("$(cd "$2" && pwd -P)")
			check_path "${VM_SHARES[-1]}"
			;;
		esac
		shift 2
		;;
	-v) VM_VERBOSE=1; shift ;;
	--) shift; break ;;
	-*) die "unknown option $1 (vm.sh --help)" ;;
	*) break ;;
	esac
done
check_path "$LAB_DIR"
resolve_cache
check_vm_options

case $cmd in
start)
	[ $# = 0 ] || die "start takes no command; use exec"
	vm_start
	;;
exec)
	[ $# -gt 0 ] || usage
	vm_running || die "VM '$VM_NAME' not running (vm.sh start --name $VM_NAME)"
	job_attach "$(job_new "$@")"
	exit "$JOB_RC"
	;;
run)
	[ $# -gt 0 ] || usage
	vm_running && die "VM '$VM_NAME' already runs; use exec, or another --name"
	trap 'vm_stop >/dev/null' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	vm_start >/dev/null
	job_attach "$(job_new "$@")"
	exit "$JOB_RC"
	;;
killjobs)
	vm_running || { echo "VM '$VM_NAME' not running"; exit 0; }
	jobs_kill
	;;
stop) vm_stop ;;
status) vm_status ;;
esac
