# Booting and stopping one VM (sourced by vm.sh). A VM is known by its name;
# its state lives in $LAB_CACHE/vms/NAME, which the VM itself mounts too:
#   qemu.pid     QEMU's pid while it runs
#   console.log  the kernel console (ttyS0)
#   ctl.in       FIFO to the agent in the VM (ttyS1): one request per line
#   ctl.out      what the VM writes back on ttyS1 (nothing; QEMU wants it)
#   ready        written by the agent once the network and rdma links are up
#   jobs/ID/     one directory per job (see lib/jobs.sh)
# The options below are set by vm.sh's option parser.
VM_NAME=vm
VM_IP=192.168.77.2
VM_CPUS=2
VM_MEM=4096
VM_ACCEL=${LAB_ACCEL:-auto}
VM_RDMA="siw0:siw:eth0,siw_lo:siw:lo"
VM_VERBOSE=0
VM_SHARES=()
# Under emulation and on a busy host a boot has taken minutes.
LAB_BOOT_TIMEOUT=${LAB_BOOT_TIMEOUT:-600}

vm_state() { echo "$LAB_CACHE/vms/$VM_NAME"; }

check_vm_options() {
	[[ $VM_NAME =~ ^[A-Za-z0-9_-]{1,12}$ ]] ||
		die "--name '$VM_NAME': 1 to 12 letters, digits, '-' or '_' (it names the VM's tap device)"
	local net=${LAB_HOST_IP%.*}
	[[ $VM_IP =~ ^${net//./\\.}\.([0-9]+)$ ]] && ((BASH_REMATCH[1] >= 2 && BASH_REMATCH[1] <= 254)) ||
		die "--ip '$VM_IP': must be $net.2 to $net.254 ($LAB_HOST_IP is the host side)"
	[[ $VM_RDMA =~ ^([A-Za-z0-9_]+:(siw|rxe):[A-Za-z0-9_.-]+(,|$))*$ ]] ||
		die "--rdma '$VM_RDMA': a comma-separated list of DEVICE:siw|rxe:NETDEV, or empty"
	case $VM_ACCEL in auto | kvm | tcg) ;; *) die "--accel '$VM_ACCEL': auto, kvm or tcg" ;; esac
	[[ $VM_CPUS =~ ^[1-9][0-9]*$ && $VM_MEM =~ ^[1-9][0-9]*$ ]] || die "--cpus and --mem take positive integers"
}

# vm_pid prints the pid of VM NAME's QEMU when it runs.
vm_pid() {
	local f p
	f=$(vm_state)/qemu.pid
	[ -s "$f" ] || return 1
	p=$(<"$f")
	# A pid left from a dead VM may have been reused by anything else.
	case $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) in
	qemu-system-*"ifname=$(vm_tap "$VM_NAME"),"*) echo "$p" ;;
	*) return 1 ;;
	esac
}

vm_running() { vm_pid >/dev/null; }

# accel_args prints QEMU's accelerator options. KVM only when it can run a
# stock kernel: a /dev/kvm served by kvm_pvm (a nested, paravirtual KVM)
# boots only guests built for it, and a Debian kernel hangs early there.
accel_args() {
	local accel=$VM_ACCEL
	if [ "$accel" = auto ]; then
		accel=tcg
		[ -c /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; } && accel=kvm
	fi
	case $accel in
	kvm) echo "-accel kvm -cpu host" ;;
	# One host thread per vCPU, and a large translation cache: the guest
	# runs the host's whole userland, which otherwise gets retranslated.
	tcg) echo "-accel tcg,thread=multi,tb-size=1024 -cpu max" ;;
	esac
}

# fsdev TAG PATH [ro]: a virtio-9p export of PATH under mount tag TAG.
fsdev() {
	local ro=
	[ "${3:-}" = ro ] && ro=,readonly=on
	echo "-fsdev local,id=fs-$1,path=$2,security_model=none,multidevs=remap$ro"
	echo "-device virtio-9p-pci,fsdev=fs-$1,mount_tag=$1"
}

vm_start() {
	local state pid initrd mac append quiet=quiet\ loglevel=1 i t0 s
	state=$(vm_state)
	# Two starts of one VM at once (two test processes, say) must not both
	# clear its state: the second waits, then finds the VM running.
	mkdir -p "$LAB_CACHE/vms"
	exec 8>"$LAB_CACHE/vms/.$VM_NAME.lock"
	flock 8
	if pid=$(vm_pid); then
		exec 8>&-
		echo "VM '$VM_NAME' already running (pid $pid)"
		return 0
	fi
	if pid=$(qemu_on_tap "$VM_NAME"); then
		die "a VM named '$VM_NAME' runs from another lab copy or cache (QEMU pid $pid); use another --name"
	fi
	initrd=$("$LAB_DIR/mkinitramfs.sh")
	rm -rf "$state"
	mkdir -p "$state/jobs"
	mkfifo "$state/ctl.in" "$state/ctl.out"
	echo "$VM_IP" >"$state/ip"
	tap_up "$VM_NAME"
	# The MAC follows the address, so that a VM rebooted at the same address
	# does not leave stale neighbour entries behind.
	mac=$(printf '52:54:00:4c:4d:%02x' "${VM_IP##*.}")
	[ "$VM_VERBOSE" = 1 ] && quiet="loglevel=7"
	append="console=ttyS0 $quiet panic=-1 lab.dir=$LAB_DIR lab.cache=$LAB_CACHE lab.state=$state"
	append+=" lab.name=$VM_NAME lab.ip=$VM_IP/$LAB_PREFIX lab.rdma=${VM_RDMA:-none} lab.verbose=$VM_VERBOSE"
	for s in "${VM_SHARES[@]}"; do append+=" lab.share=$s"; done
	# Under TCG the kernel's TSC synchronisation check fails and it falls
	# back to the HPET, whose every read is an emulated device access and a
	# system call from user space: a clock read costs 5-6 us instead of
	# 0.3-0.8 us through the vDSO. Go's scheduler reads the clock on every
	# wake-up, so the HPET weighs on Go programs far more than on C ones or
	# on the kernel, and real machines run on the TSC. LAB_TSC=0 keeps the
	# kernel's own choice.
	[ "${LAB_TSC:-1}" = 1 ] && append+=" tsc=reliable"
	[ -n "${LAB_KERNEL_ARGS:-}" ] && append+=" $LAB_KERNEL_ARGS"
	local args=(-name "lab-$VM_NAME" -machine pc $(accel_args) -smp "$VM_CPUS" -m "$VM_MEM"
		-nodefaults -no-user-config -display none -no-reboot)
	[ -f /usr/share/qemu/qboot.rom ] && args+=(-bios /usr/share/qemu/qboot.rom)
	args+=(-kernel "$LAB_CACHE/kernel/boot/vmlinuz-$(cache_kver)" -initrd "$initrd" -append "$append")
	args+=($(fsdev hostroot / ro) $(fsdev labdir "$LAB_DIR") $(fsdev labcache "$LAB_CACHE"))
	i=0
	for s in "${VM_SHARES[@]}"; do
		args+=($(fsdev "share$i" "$s"))
		i=$((i + 1))
	done
	args+=(-netdev "tap,id=net0,ifname=$(vm_tap "$VM_NAME"),script=no,downscript=no"
		-device "virtio-net-pci,netdev=net0,mac=$mac"
		-serial "file:$state/console.log" -serial "pipe:$state/ctl"
		-daemonize -pidfile "$state/qemu.pid")
	t0=$SECONDS
	# QEMU must not inherit the lock: it would hold it as long as it runs.
	ip netns exec "$LAB_NETNS" qemu-system-x86_64 "${args[@]}" 8>&- || die "QEMU failed to start VM '$VM_NAME'"
	while [ ! -f "$state/ready" ]; do
		if ! vm_running; then
			echo "VM '$VM_NAME' stopped while booting; its console:" >&2
			tail -n 30 "$state/console.log" >&2
			return 1
		fi
		if ((SECONDS - t0 > LAB_BOOT_TIMEOUT)); then
			echo "VM '$VM_NAME' not ready after $LAB_BOOT_TIMEOUT s; stopping it. Its console:" >&2
			tail -n 30 "$state/console.log" >&2
			kill "$(vm_pid)" 2>/dev/null
			return 1
		fi
		sleep 0.1
	done
	exec 8>&-
	echo "VM '$VM_NAME' ready (pid $(vm_pid), guest uptime $(<"$state/ready") s, ip $VM_IP)"
}

# ctl_send LINE: one request to the VM's agent. Opening the FIFO read-write
# never blocks, even if QEMU has gone; the line is at most a few dozen bytes,
# so concurrent writers never interleave.
ctl_send() { printf '%s\n' "$1" 1<>"$(vm_state)/ctl.in"; }

vm_stop() {
	local pid state i
	state=$(vm_state)
	if ! pid=$(vm_pid); then
		echo "VM '$VM_NAME' not running"
		return 0
	fi
	ctl_send stop
	for i in $(seq 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "VM '$VM_NAME' did not power off in 30 s; killing QEMU (pid $pid)" >&2
		kill "$pid"
		for i in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$state/jobs" "$state/qemu.pid" "$state/ready" "$state/ctl.in" "$state/ctl.out"
	echo "VM '$VM_NAME' stopped"
}

vm_status() {
	local pid
	if pid=$(vm_pid); then
		echo "VM '$VM_NAME' running (pid $pid, ip $(cat "$(vm_state)/ip" 2>/dev/null))"
	else
		echo "VM '$VM_NAME' not running"
		return 1
	fi
}
