#!/bin/busybox sh
# First stage of the VM's boot: /init of the initramfs, run by busybox.
#
# The VM has no disk. Its root is the host's root, exported read-only by
# QEMU over virtio-9p, with a tmpfs overlay so that programs may write
# anywhere (the writes vanish at power-off). The lab directory, the cache
# and every --share directory are mounted again on top, read-write and
# uncached, at their host paths: files there change while the VM runs
# (state of the job protocol, binaries rebuilt by a test) and the VM must
# see each change at once. Then the agent (agent.sh, packed beside this
# file) takes over as PID 1 on the new root.
/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

fail() {
	echo "lab init: $*" >/dev/console
	poweroff -f
}

while read -r m; do
	insmod "/modules/$m" || fail "insmod $m failed"
done </modules/order

dir= cache= shares=
for arg in $(cat /proc/cmdline); do
	case $arg in
	lab.dir=*) dir=${arg#*=} ;;
	lab.cache=*) cache=${arg#*=} ;;
	lab.share=*) shares="$shares ${arg#*=}" ;;
	esac
done
[ -n "$dir" ] && [ -n "$cache" ] || fail "lab.dir= and lab.cache= missing from the kernel command line"

# 512000 is the largest msize the 6.1 virtio transport accepts; larger
# messages mean fewer round trips through QEMU for big reads.
opts=trans=virtio,version=9p2000.L,msize=512000
mkdir -p /host /rw /newroot
mount -t 9p -o "$opts,ro,cache=loose" hostroot /host || fail "cannot mount the host root"
mount -t tmpfs -o size=2g tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /newroot ||
	fail "cannot mount the overlay root"

# Private scratch space first: a lab, cache or share below /tmp (a fresh
# clone there, say) is then mounted on top of it rather than hidden.
for d in tmp run var/tmp; do
	mkdir -p "/newroot/$d" && mount -t tmpfs tmpfs "/newroot/$d"
done

share() { # share TAG PATH
	mkdir -p "/newroot$2" && mount -t 9p -o "$opts,cache=none" "$1" "/newroot$2" ||
		fail "cannot mount $2 (tag $1)"
}
share labdir "$dir"
share labcache "$cache"
i=0
for s in $shares; do
	share "share$i" "$s"
	i=$((i + 1))
done

mkdir -p /newroot/run/lab
cp /agent.sh /newroot/run/lab/agent.sh
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash /run/lab/agent.sh
