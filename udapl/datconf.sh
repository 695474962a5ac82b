#!/bin/sh
# Prints dat.conf lines for godapl's uDAPL provider library LIB: the
# lines of udapl/dat.conf and, with --rdmacore (a library built with
# UDAPL_TAGS=rdmacore), one IA per port of every RDMA device this
# machine has now, named as OFA dapl's dat.conf names them
# (ofa-v2-<device>-<port>), each once nonthreadsafe and once threadsafe.
#   udapl/datconf.sh [--rdmacore] LIB > dat.conf
# env: SYSFS the sysfs mount (default /sys)
set -eu
rdma=
if [ "${1:-}" = --rdmacore ]; then rdma=1; shift; fi
[ $# -eq 1 ] || { echo "usage: $0 [--rdmacore] LIB" >&2; exit 2; }
lib=$1
here=$(dirname "$0")
sed "s|libdatgodapl.so|$lib|" "$here/dat.conf"
[ -n "$rdma" ] || exit 0
echo "# rdma-core devices (\"rdmacore device port\"), as found when this file was made"
for port in "${SYSFS:-/sys}"/class/infiniband/*/ports/*; do
	[ -d "$port" ] || continue
	dev=$(basename "$(dirname "$(dirname "$port")")") num=$(basename "$port")
	for ts in nonthreadsafe threadsafe; do
		printf 'ofa-v2-%s-%s u2.0 %s default %s dapl.2.0 "rdmacore %s %s" ""\n' "$dev" "$num" $ts "$lib" "$dev" "$num"
	done
done
