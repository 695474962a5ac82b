#!/bin/bash
# Checks the kernel's soft-iWARP inside a lab VM: the siw devices exist,
# siw0 reports the iWARP transport, and one rping client and server
# exchange pings over siw0 on the VM's own address. Prints "siw smoke: OK"
# and exits 0 when both rping ends succeed.
#   vm.sh exec -- tests/lab/smoke/siw.sh [PORT]      (default port 7174)
set -u
port=${1:-7174}
addr=$(ip -4 -o addr show dev eth0 | awk '{ split($4, a, "/"); print a[1]; exit }')
[ -n "$addr" ] || { echo "siw smoke: eth0 has no address"; exit 1; }
rdma link show
ibv_devices
ibv_devinfo -d siw0 || { echo "siw smoke: no siw0 (start the VM with a siw link on eth0)"; exit 1; }

# rdma_cm's listener shows up as a TCP listener on the port once it exists;
# a client started before that is refused.
rping -s -a "$addr" -p "$port" -C 3 -S 64 -v &
server=$!
for _ in $(seq 300); do
	ss -ltnH "sport = :$port" | grep -q . && break
	kill -0 $server 2>/dev/null || break
	sleep 0.1
done
timeout 60 rping -c -a "$addr" -p "$port" -C 3 -S 64 -v
client_rc=$?
timeout 30 tail --pid=$server -f /dev/null # the server ends after its client's last ping
kill $server 2>/dev/null
wait $server
server_rc=$?
echo "rping over siw0 on $addr:$port: client rc=$client_rc server rc=$server_rc"
if [ $client_rc = 0 ] && [ $server_rc = 0 ]; then
	echo "siw smoke: OK"
else
	echo "siw smoke: FAILED"
	exit 1
fi
