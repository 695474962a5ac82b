# The rdma-core provider (verbs/rdmacore, build tag rdmacore) on the lab
# VM's kernel devices: conformance on rxe and siw, under cgocheck2 too,
# the benchmarks beside perftest, interop, port events and RDS over DAT
# over rdmacore (tests/rdmacore/lab.sh). Needs root; boots two VMs
# (rdmacore at 192.168.77.21, rdmacore2 at .22). Included by the main
# Makefile.
LAB_CACHE ?= /var/cache/ratlab
LAB       ?= $(CURDIR)/tests/lab
REPS      ?= 3

.PHONY: rdmacore-lab
rdmacore-lab:
	./scripts/install-deps.sh
	LAB_CACHE=$(LAB_CACHE) scripts/lab-setup.sh
	LAB=$(LAB) LAB_CACHE=$(LAB_CACHE) REPS=$(REPS) tests/rdmacore/lab.sh
