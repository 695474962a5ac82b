# The speed rounds' arithmetic, shared by udapl/lab.sh and
# udapl/lab/rxe.sh (sourced).

# round_ratio O1 G1 G2 O2: a round runs OFA dapl, godapl, godapl, OFA
# dapl, so that a host load that changes through the round weighs on both
# alike; its ratio is godapl's pair over OFA's, "-" when a transfer gave
# no figure.
round_ratio() {
	echo "${1:-0} ${2:-0} ${3:-0} ${4:-0}" |
		awk '{ if ($1 > 0 && $2 > 0 && $3 > 0 && $4 > 0) printf "%.3f", ($2 + $3) / ($1 + $4); else print "-" }'
}

# median_ratio RATIO...: the median of the rounds that gave a ratio.
median_ratio() {
	printf '%s\n' "$@" | sed '/^$/d' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) printf "median ratio libdatgodapl/OFA over %d rounds: %.3f\n", NR, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else print "no round completed" }'
}
