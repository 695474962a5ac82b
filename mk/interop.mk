# Interoperability tests against the Linux kernel (siw, RDS/TCP) in the QEMU lab of tests/lab.
# Needs root; the first run fills the lab cache (about 40 s with a fast Debian mirror), each run
# boots the VMs it needs (10-16 s each under TCG). Included by the main Makefile.
LAB_CACHE ?= /var/cache/ratlab
LAB       ?= $(CURDIR)/tests/lab

.PHONY: interop
interop:
	LAB_CACHE=$(LAB_CACHE) GODAPL_LAB=$(LAB) scripts/lab-setup.sh
	LAB_CACHE=$(LAB_CACHE) GODAPL_LAB=$(LAB) GODAPL_INTEROP=1 go test -count=1 -v -timeout 30m ./tests/interop/...
