# RDS/TCP figures in the QEMU lab (tests/lab): the kernel's rds_tcp beside rdsoverdat's tcp
# transport (and the kernel through rdsoverdat's kernel backend) in one boot. Needs root; see
# scripts/rds-lab-bench.sh. Included by the main Makefile. The VM has its own name and address
# (rdsbench, 192.168.77.8 by default) so that it never collides with the interop tests' VMs or
# lab-bench's.
LAB_CACHE ?= /var/cache/ratlab
LAB       ?= $(CURDIR)/tests/lab
REPS      ?= 3
# GO_MAXPROCS, when set, is the GOMAXPROCS of every Go process of the run (empty: Go's default,
# one P per vCPU).
GO_MAXPROCS ?=
# WORKLOADS, when set, is the workloads of each round (rate tput rtt by default).
WORKLOADS ?=
# BASE, when set, is another rds-bench binary under the repository, run beside ours in every round
# (scripts/rds-lab-bench.sh).
BASE ?=
# RDS_BENCH_NAME and RDS_BENCH_IP name the VM and give its address, so that runs from two
# checkouts can share the host.
RDS_BENCH_NAME ?= rdsbench
RDS_BENCH_IP   ?= 192.168.77.8
RDS_BENCH_VM := --name $(RDS_BENCH_NAME)

.PHONY: rds-lab-bench
rds-lab-bench:
	LAB_CACHE=$(LAB_CACHE) GODAPL_LAB=$(LAB) scripts/lab-setup.sh
	mkdir -p bin && CGO_ENABLED=0 go build -o bin/rds-bench ./cmd/rds-bench
	$(CC) -O2 -Wall -o bin/rdsbench $(LAB)/bench/rdsbench.c
	LAB_CACHE=$(LAB_CACHE) $(LAB)/vm.sh start $(RDS_BENCH_VM) --ip $(RDS_BENCH_IP) --rdma "" --share $(CURDIR)
	LAB_CACHE=$(LAB_CACHE) $(LAB)/vm.sh exec $(RDS_BENCH_VM) -- env REPS=$(REPS) GO_MAXPROCS=$(GO_MAXPROCS) WORKLOADS="$(WORKLOADS)" BASE="$(BASE)" \
	  $(CURDIR)/scripts/rds-lab-bench.sh > bin/rds-lab-bench.txt 2>&1; status=$$?; \
	  LAB_CACHE=$(LAB_CACHE) $(LAB)/vm.sh stop $(RDS_BENCH_VM); cat bin/rds-lab-bench.txt; exit $$status
	python3 $(LAB)/bench/summarize.py bin/rds-lab-bench.txt
