# Shared by setup.sh, vm.sh and mkinitramfs.sh (sourced, never run): where
# the lab and its cache live, and small helpers. Every caller sets LAB_DIR
# (this directory's parent, resolved with pwd -P) before sourcing.

# The cache holds everything downloaded or built (the Debian kernel, siw.ko,
# the initramfs) and the state of running VMs. Several checkouts may share
# one; every command of the lab must see the same LAB_CACHE.
LAB_CACHE=${LAB_CACHE:-/var/cache/ratlab}

# The lab network, shared with every other copy of the lab on this host: the
# namespace and the bridge are global names, so all copies must agree on them.
LAB_NETNS=ratlab
LAB_BRIDGE=br77
LAB_HOST_IP=192.168.77.1
LAB_PREFIX=24

die() { echo "${0##*/}: $*" >&2; exit 1; }

need_root() { [ "$(id -u)" = 0 ] || die "run as root"; }

# The paths go on the kernel command line and into QEMU's -fsdev options,
# which split on whitespace and commas respectively.
check_path() {
	case $1 in
	*[[:space:],]*) die "path '$1' contains whitespace or a comma, which the VM's command line cannot carry" ;;
	/*) ;;
	*) die "path '$1' is not absolute" ;;
	esac
}

# resolve_cache makes LAB_CACHE absolute and physical (the VM mounts it at the
# same path, and the tests compare paths with QEMU's command line).
resolve_cache() {
	[ -d "$LAB_CACHE" ] || die "no lab cache at $LAB_CACHE (run $LAB_DIR/setup.sh with the same LAB_CACHE)"
	LAB_CACHE=$(cd "$LAB_CACHE" && pwd -P)
	check_path "$LAB_CACHE"
	export LAB_CACHE
}

# The kernel the cache holds (written by setup.sh once the kernel and siw.ko
# are in place).
cache_kver() {
	[ -s "$LAB_CACHE/KVER" ] || die "the cache $LAB_CACHE holds no kernel yet (run $LAB_DIR/setup.sh)"
	cat "$LAB_CACHE/KVER"
}
