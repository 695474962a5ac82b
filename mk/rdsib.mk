# RDS over DAT against the kernel's RDS over RDMA (rds_rdma) on RoCE, in two
# lab VMs joined by rxe (tests/rdsib/lab.sh). Needs root; boots ib1
# (192.168.77.31, the kernel's AF_RDS) and ib2 (.32, godapl) and stops them.
# Included by the main Makefile.
LAB_CACHE ?= /var/cache/ratlab
LAB       ?= $(CURDIR)/tests/lab

.PHONY: rds-ib-lab
rds-ib-lab:
	./scripts/install-deps.sh
	LAB_CACHE=$(LAB_CACHE) scripts/lab-setup.sh
	LAB=$(LAB) LAB_CACHE=$(LAB_CACHE) RUN='$(RUN)' tests/rdsib/lab.sh

# godapl against the kernel's rds_rdma on the same two VMs, interleaved
# (tests/rdsib/bench.sh): 64 KiB throughput, 64 B rate, 64 B round trip.
.PHONY: rds-ib-bench
rds-ib-bench:
	./scripts/install-deps.sh
	LAB_CACHE=$(LAB_CACHE) scripts/lab-setup.sh
	LAB=$(LAB) LAB_CACHE=$(LAB_CACHE) REPS=$(REPS) tests/rdsib/bench.sh
