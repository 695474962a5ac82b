# Interoperability tests against the Linux kernel (siw, later RDS/TCP) in the QEMU lab of
# ../shared/lab. Needs root; the first run downloads the lab kernel (about 70 s), each run boots
# one VM (10-16 s under TCG). Included by the main Makefile.
LAB_CACHE ?= /var/cache/ratlab

.PHONY: interop
interop:
	LAB_CACHE=$(LAB_CACHE) scripts/lab-setup.sh
	LAB_CACHE=$(LAB_CACHE) GODAPL_INTEROP=1 go test -count=1 -v -timeout 30m ./tests/interop/...
