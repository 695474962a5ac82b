# The lab network (sourced by vm.sh): one network namespace holding a bridge
# with the host-side address, and one tap per VM enslaved to it. QEMU runs
# inside the namespace, so the VMs reach nothing but each other and
# processes started there (vm.sh nsexec); the host's own network is never
# touched. Other copies of the lab use the same names at the same time, so
# every step tolerates finding its result already made by someone else.

net_up() {
	if ! ip netns exec "$LAB_NETNS" true 2>/dev/null; then
		ip netns add "$LAB_NETNS" 2>/dev/null || ip netns exec "$LAB_NETNS" true ||
			die "cannot create network namespace $LAB_NETNS"
	fi
	ip -n "$LAB_NETNS" link set lo up
	if ! ip -n "$LAB_NETNS" link show "$LAB_BRIDGE" >/dev/null 2>&1; then
		ip -n "$LAB_NETNS" link add "$LAB_BRIDGE" type bridge 2>/dev/null || true
		# IPv4 only: router solicitations and MLD reports would be the only
		# unsolicited traffic on the bridge, and captures read better without.
		ip netns exec "$LAB_NETNS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1
	fi
	if ! ip -n "$LAB_NETNS" -4 addr show dev "$LAB_BRIDGE" | grep -q " $LAB_HOST_IP/"; then
		ip -n "$LAB_NETNS" addr add "$LAB_HOST_IP/$LAB_PREFIX" dev "$LAB_BRIDGE" 2>/dev/null || true
	fi
	ip -n "$LAB_NETNS" link set "$LAB_BRIDGE" up
}

# vm_tap NAME: the tap device of VM NAME. Interface names hold 15 bytes.
vm_tap() { echo "rl-$1"; }

tap_up() {
	local tap
	tap=$(vm_tap "$1")
	net_up
	ip -n "$LAB_NETNS" link show "$tap" >/dev/null 2>&1 ||
		ip -n "$LAB_NETNS" tuntap add dev "$tap" mode tap 2>/dev/null || true
	ip -n "$LAB_NETNS" link set "$tap" master "$LAB_BRIDGE" up
}

# qemu_on_tap NAME: the pid of a QEMU process, of any copy of the lab, that
# holds VM NAME's tap; nothing (and status 1) when there is none.
qemu_on_tap() {
	local p
	p=$(pgrep -f "^qemu-system[^ ]* .*ifname=$(vm_tap "$1")," | head -1)
	[ -n "$p" ] && echo "$p"
}

# net_down removes the namespace, but only when no QEMU of any lab copy
# uses a tap in it: other people's VMs live there too.
net_down() {
	ip netns exec "$LAB_NETNS" true 2>/dev/null || return 0
	if pgrep -f "^qemu-system[^ ]* .*ifname=rl-" >/dev/null; then
		die "VMs still run in namespace $LAB_NETNS; left in place"
	fi
	ip netns del "$LAB_NETNS"
}
