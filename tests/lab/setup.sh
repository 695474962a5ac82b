#!/bin/bash
# Prepares the lab: host packages, and in the cache the Debian kernel the VMs
# boot, a siw.ko for it, and the initramfs. Unattended and idempotent: every
# step whose result is already in the cache is skipped, so a rerun on a
# complete cache takes seconds and needs no network. Debian 12 (bookworm)
# on x86-64, as root.
#
#   LAB_CACHE=/some/dir tests/lab/setup.sh      (default /var/cache/ratlab)
#   LAB_KERNEL_REFRESH=1 ...                    move to the kernel Debian ships now
#   LAB_WRITE_VERSIONS=1 ...                    record the versions found in versions.txt
#
# The kernel is the one linux-image-amd64 depends on, downloaded and unpacked
# into the cache, never installed on the host. Debian builds it without siw
# (CONFIG_RDMA_SIW is unset), so siw.ko is built out of tree from Debian's
# linux-source of the kernel's version against its linux-headers. Several
# checkouts may share one cache; concurrent runs wait for each other.
set -euo pipefail
LAB_DIR=$(cd "$(dirname "$0")" && pwd -P)
. "$LAB_DIR/lib/common.sh"
need_root
mkdir -p "$LAB_CACHE"
resolve_cache
check_path "$LAB_DIR"
t0=$SECONDS
step() { echo "[setup +$((SECONDS - t0))s] $*"; }

exec 9>"$LAB_CACHE/.setup.lock"
flock -w 3600 9 || die "$LAB_CACHE is locked by another setup.sh for an hour"

export DEBIAN_FRONTEND=noninteractive
apt_install=(apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600
	-o Acquire::Retries=3 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

# What the lab runs on the host and, through the shared root, in the VM.
packages=(
	qemu-system-x86 qemu-system-data busybox-static kmod cpio gzip xz-utils # VM and initramfs
	iproute2 procps util-linux tcpdump python3                              # network, jobs, peers
	rdma-core ibverbs-utils rdmacm-utils perftest dapl2-utils               # the kernel's RDMA peers
	libibverbs-dev librdmacm-dev gcc libc6-dev make binutils                # builds (siw.ko, rdsbench)
)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

updated=0
apt_update() {
	[ $updated = 1 ] && return
	step "apt-get update"
	apt-get -q -o Acquire::Retries=3 update
	updated=1
}

# pkg_version PKG: the candidate version apt would install.
pkg_version() { apt-cache show --no-all-versions "$1" 2>/dev/null | awk '/^Version:/ { print $2; exit }'; }

# fetch PKG VERSION: the .deb of PKG=VERSION in $LAB_CACHE/debs, downloaded
# when missing or damaged; prints its path.
fetch() {
	local deb dl
	deb=$(find "$LAB_CACHE/debs" -maxdepth 1 -name "${1}_${2//:/%3a}_*.deb" 2>/dev/null | head -1)
	if [ -n "$deb" ] && dpkg-deb --info "$deb" >/dev/null 2>&1; then
		echo "$deb"
		return
	fi
	dl=$LAB_CACHE/debs/.download
	rm -rf "$dl"
	mkdir -p "$dl"
	chmod 777 "$dl" # apt downloads as its own unprivileged user
	(cd "$dl" && apt-get -q -o Acquire::Retries=3 download "$1=$2") >&2
	deb=$(find "$dl" -name '*.deb' | head -1)
	dpkg-deb --info "$deb" >/dev/null || die "the download of $1 $2 is damaged"
	mv "$deb" "$LAB_CACHE/debs/"
	rm -rf "$dl"
	echo "$LAB_CACHE/debs/${deb##*/}"
}

host_packages() {
	local missing=() p
	for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
	[ ${#missing[@]} = 0 ] && return
	apt_update
	step "install ${missing[*]}"
	"${apt_install[@]}" "${missing[@]}"
}

# kernel: unpacks the kernel package into $LAB_CACHE/kernel and records its
# version in KVER (written last: its presence means a usable cache).
kernel() {
	local kver= pkg ver deb
	[ -s "$LAB_CACHE/KVER" ] && [ "${LAB_KERNEL_REFRESH:-0}" != 1 ] && kver=$(<"$LAB_CACHE/KVER")
	if [ -z "$kver" ]; then
		apt_update
		pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
		[ -n "$pkg" ] || die "cannot tell which kernel linux-image-amd64 depends on"
		kver=${pkg#linux-image-}
	fi
	KVER=$kver
	[ -f "$LAB_CACHE/kernel/boot/vmlinuz-$kver" ] && return
	pkg=linux-image-$kver
	ver=$(pkg_version "$pkg")
	[ -n "$ver" ] || { apt_update; ver=$(pkg_version "$pkg"); }
	[ -n "$ver" ] || die "no package $pkg"
	step "download $pkg $ver"
	deb=$(fetch "$pkg" "$ver")
	step "unpack ${deb##*/}"
	rm -rf "$LAB_CACHE/kernel" "$LAB_CACHE/kernel.new" "$LAB_CACHE/KVER"
	dpkg -x "$deb" "$LAB_CACHE/kernel.new"
	echo "$ver" >"$LAB_CACHE/kernel.new/.debversion"
	mv "$LAB_CACHE/kernel.new" "$LAB_CACHE/kernel"
}

# siw: builds siw.ko for the cached kernel into its module tree, and keeps
# the kernel's siw and RDS sources in $LAB_CACHE/src (the wire reference).
siw() {
	local ko=$LAB_CACHE/kernel/lib/modules/$KVER/updates/siw.ko
	local ver srcpkg=linux-source-${KVER%%.0-*} hdr=linux-headers-$KVER deb tarball src build
	if [ ! -f "$ko" ]; then
		ver=$(cat "$LAB_CACHE/kernel/.debversion" 2>/dev/null || pkg_version "linux-image-$KVER")
		if ! installed "$hdr"; then
			apt_update
			step "install $hdr $ver"
			"${apt_install[@]}" "$hdr=$ver" || "${apt_install[@]}" "$hdr"
		fi
		if ! apt-cache show "$srcpkg=$ver" >/dev/null 2>&1; then
			apt_update
			if ! apt-cache show "$srcpkg=$ver" >/dev/null 2>&1; then
				echo "setup.sh: $srcpkg $ver is gone from the archive; using $(pkg_version "$srcpkg")" >&2
				ver=$(pkg_version "$srcpkg")
			fi
		fi
		step "download $srcpkg $ver"
		deb=$(fetch "$srcpkg" "$ver")
		step "extract siw and rds from ${deb##*/}"
		src=$LAB_CACHE/src
		tarball=usr/src/$srcpkg.tar.xz
		rm -rf "$src"
		mkdir -p "$src"
		dpkg-deb --fsys-tarfile "$deb" | tar -xf - -C "$src" "./$tarball"
		tar -xJf "$src/$tarball" -C "$src" --wildcards \
			"$srcpkg/drivers/infiniband/sw/siw/*" "$srcpkg/net/rds/*"
		rm -rf "$src/usr"
		step "build siw.ko against $hdr"
		build=$LAB_CACHE/siw-build
		rm -rf "$build"
		cp -r "$src/$srcpkg/drivers/infiniband/sw/siw" "$build"
		make -s -C "/usr/src/$hdr" M="$build" CONFIG_RDMA_SIW=m modules -j"$(nproc)"
		modinfo -F vermagic "$build/siw.ko" | grep -q "^$KVER " || die "siw.ko was not built for $KVER"
		mkdir -p "${ko%/*}"
		strip --strip-debug -o "$ko.new" "$build/siw.ko"
		mv "$ko.new" "$ko"
		echo "$srcpkg $ver" >"$build/SOURCE"
	fi
	depmod -b "$LAB_CACHE/kernel" "$KVER"
	echo "$KVER" >"$LAB_CACHE/KVER.new"
	mv "$LAB_CACHE/KVER.new" "$LAB_CACHE/KVER"
}

# versions: the packages the lab uses now; a difference from versions.txt
# (what the lab's published figures were taken with) is worth knowing.
versions() {
	local now p
	now=$(
		for p in "${packages[@]}" "linux-headers-$KVER"; do
			dpkg-query -W -f='${Package} ${Version}\n' "$p" 2>/dev/null || echo "$p (not installed)"
		done
		echo "linux-image-$KVER $(cat "$LAB_CACHE/kernel/.debversion" 2>/dev/null || echo unknown) (in the cache)"
		echo "siw.ko from $(cat "$LAB_CACHE/siw-build/SOURCE" 2>/dev/null || echo unknown)"
	)
	if [ "${LAB_WRITE_VERSIONS:-0}" = 1 ]; then
		{
			echo "# The package versions the lab was last checked with (setup.sh compares)."
			sort <<<"$now"
		} >"$LAB_DIR/versions.txt"
	fi
	if ! diff <(grep -v '^#' "$LAB_DIR/versions.txt") <(sort <<<"$now") >/dev/null; then
		echo "note: package versions differ from $LAB_DIR/versions.txt (< there, > here):"
		diff <(grep -v '^#' "$LAB_DIR/versions.txt") <(sort <<<"$now") | grep '^[<>]' | sed 's/^/  /' || true
	fi
}

host_packages
kernel
siw
step "initramfs $("$LAB_DIR/mkinitramfs.sh")"
versions
step "done: kernel $KVER in $LAB_CACHE"
