#!/bin/sh
# Runs a uDAPL server and its client on one machine (the lab VM), each
# with its own dat.conf, and prints both outputs' tails.
#   pair.sh OUT READY SERVER_CONF "SERVER CMD" CLIENT_CONF "CLIENT CMD" [kill]
# The server's output goes to OUT.server, the client's to OUT.client; the
# client starts once the server printed READY. Without "kill" the server
# must end by itself (dtest) and its status counts, unless the client
# failed; with it the server
# (dapltest -T S) is stopped after the client, and waited for, so that
# its port is free for the next pair. Exit status: 0 if both did.
set -u
out=$1 ready=$2 sconf=$3 scmd=$4 cconf=$5 ccmd=$6 mode=${7:-}
# shellcheck disable=SC2086 # the commands are words
DAT_OVERRIDE=$sconf timeout 600 $scmd >"$out.server" 2>&1 &
spid=$!
i=0
until grep -q "$ready" "$out.server" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 600 ] || ! kill -0 $spid 2>/dev/null; then
		echo "pair.sh: server never ready: $scmd" >&2
		tail -n 20 "$out.server" >&2
		kill $spid 2>/dev/null
		wait $spid
		exit 1
	fi
	sleep 0.5
done
# shellcheck disable=SC2086
DAT_OVERRIDE=$cconf timeout 600 $ccmd >"$out.client" 2>&1
crc=$?
if [ "$mode" = kill ] || [ $crc -ne 0 ]; then
	kill $spid 2>/dev/null
	wait $spid
	src=0
else
	wait $spid
	src=$?
fi
echo "client $crc, server $src"
[ $crc -eq 0 ] && [ $src -eq 0 ]
