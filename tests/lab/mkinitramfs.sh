#!/bin/bash
# Builds the VM's initramfs for the kernel in the cache and prints its path:
# busybox, the modules the first stage needs to mount the host root (virtio
# PCI, 9p over virtio, overlayfs, with their dependencies in load order),
# guest/init.sh as /init and guest/agent.sh beside it.
#
# The file's name carries a hash of the kernel version and of the scripts
# packed into it, so it is rebuilt exactly when one of them changes, and
# lab copies of different versions sharing one cache each find their own.
# Built under a temporary name and renamed, so concurrent builds are safe.
#   mkinitramfs.sh [-f]     -f: build even if the file exists
set -euo pipefail
LAB_DIR=$(cd "$(dirname "$0")" && pwd -P)
. "$LAB_DIR/lib/common.sh"
resolve_cache
kver=$(cache_kver)
kdir=$LAB_CACHE/kernel
sum=$(cat <(echo "$kver") "$LAB_DIR/guest/init.sh" "$LAB_DIR/guest/agent.sh" "$0" | sha256sum | cut -c1-16)
out=$LAB_CACHE/godapl-initramfs-$sum.cpio.gz
if [ -f "$out" ] && [ "${1:-}" != -f ]; then
	echo "$out"
	exit 0
fi
# The initramfs has no libc: busybox must be the static build.
[ -x /bin/busybox ] || die "no /bin/busybox (package busybox-static)"

tree=$(mktemp -d "$LAB_CACHE/.initramfs.XXXXXX")
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree"/{bin,dev,proc,sys,modules}
cp /bin/busybox "$tree/bin/busybox"
# modprobe resolves the dependencies against the unpacked kernel and lists
# them before the modules that need them; keep each module once.
for m in virtio_pci 9pnet_virtio 9p overlay; do
	modprobe -d "$kdir" -S "$kver" --show-depends "$m"
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r ko; do
	cp "$ko" "$tree/modules/"
	basename "$ko" >>"$tree/modules/order"
done
cp "$LAB_DIR/guest/init.sh" "$tree/init"
cp "$LAB_DIR/guest/agent.sh" "$tree/agent.sh"
chmod 755 "$tree/init" "$tree/agent.sh"
(cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.$$"
mv "$out.$$" "$out"
echo "$out"
