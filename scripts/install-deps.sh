#!/usr/bin/env bash
# Installs the system tools the tests drive, with apt, when they are
# missing: iproute2 (ip, tc, ss) for the network-namespace tests under
# tests/ (tests/internal/netns, tests/faults), and rdma-core's
# development files for the rdmacore build tag. Idempotent and quiet: it
# prints nothing when everything is present, and does nothing without
# root or apt (the tests that need the tools then skip and say why).
# It also loads the kernel's rds module when the running kernel has one,
# so that rdsoverdat's kernel-backend tests run (see load_rds).
set -euo pipefail

# load_rds gives the host AF_RDS for rdsoverdat's TestBackend* kernel
# halves (Config{Kernel: true}); they bind 127.x addresses, which the
# kernel serves with its loopback transport, so the rds module alone is
# enough. rds_tcp is deliberately not loaded: it listens on *:16385 in
# every network namespace, and rdsoverdat's own tcp transport tests listen
# on 127.x:16385, which would then fail with EADDRINUSE. Without the
# module (or without root or modprobe) the kernel halves skip and say so.
# TestBackendCongestion's kernel half needs a non-loopback address (the
# loopback transport never congests), hence rds_tcp: it skips here and
# runs in the lab VM (tests/interop).
load_rds() {
	[ -d /proc/sys/net/rds ] && return 0 # loaded (or built in) already
	if [ "$(id -u)" -ne 0 ] || ! command -v modprobe >/dev/null 2>&1 ||
		! modprobe -q rds 2>/dev/null; then
		echo "install-deps: no rds module for kernel $(uname -r): rdsoverdat's kernel-backend tests will skip" >&2
	fi
	return 0
}
load_rds

need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v ss >/dev/null 2>&1 || need+=(iproute2)
# The rdma-core development files, for the rdmacore build tag
# (verbs/rdmacore): make vet builds and vets the tagged package. The
# user-space drivers (ibverbs-providers) let the tests open the devices
# a machine has; without a device they skip.
[ -f /usr/include/infiniband/verbs.h ] || need+=(libibverbs-dev)
[ -f /usr/include/rdma/rdma_cma.h ] || need+=(librdmacm-dev)
[ -d /usr/lib/x86_64-linux-gnu/libibverbs ] || [ -d /usr/lib/aarch64-linux-gnu/libibverbs ] ||
	need+=(ibverbs-providers)
# udapl/ (the uDAPL provider library and its tests): DAT 2.0 headers and registry, dtest, dapltest.
{ [ -f /usr/include/dat2/udat.h ] && command -v dapltest >/dev/null 2>&1; } || need+=(libdapl-dev dapl2-utils)
# Deduplicate: one package provides all three.
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u | sed '/^$/d')
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing ${need[*]} (need root and apt-get to install; namespace tests will skip, the rdmacore tag will not build)" >&2
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get -qq update >/dev/null
apt-get -qq install -y --no-install-recommends "${need[@]}" >/dev/null
