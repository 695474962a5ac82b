# godapl as a uDAPL provider for C programs (udapl/libdatgodapl). Needs cgo
# and the DAT 2.0 headers and registry (Debian libdapl-dev); the tests also
# run Debian's dapl2-utils (dtest, dapltest). Included by the main Makefile.
#
#   make udapl        builds $(UDAPL_OUT)/libdatgodapl.so and its dat.conf
#   make udapl UDAPL_TAGS=rdmacore
#                     the same with rdma-core's devices as well (verbs/
#                     rdmacore; needs libibverbs-dev and librdmacm-dev): the
#                     dat.conf has an ofa-v2-<device>-<port> IA per RDMA
#                     port present when it is built
#   make udapl-test   runs dtest and dapltest (T, P, L, F) on it over loopback,
#                     and the C bad-input program; vets the rdmacore build
#   make udapl-bench  the cgo crossing per DTO and dapltest -T P against
#                     dattest -T P, as ratios
#   make udapl-lab    against OFA dapl over the kernel's siw and rxe in the
#                     QEMU lab (root; boots VMs; needs UDAPL_OUT=bin)

UDAPL_OUT ?= bin
# Extra build tags of the library: rdmacore adds rdma-core's devices.
UDAPL_TAGS ?=
udapl_empty :=
udapl_space := $(udapl_empty) $(udapl_empty)
udapl_comma := ,
udapl_tags := $(subst $(udapl_space),$(udapl_comma),$(strip udapl $(UDAPL_TAGS)))

.PHONY: udapl udapl-test udapl-bench
udapl:
	@mkdir -p $(UDAPL_OUT)
	CGO_ENABLED=1 $(GO) build -tags $(udapl_tags) -buildmode=c-shared -o $(UDAPL_OUT)/libdatgodapl.so ./udapl/libdatgodapl
	@rm -f $(UDAPL_OUT)/libdatgodapl.h
	udapl/datconf.sh $(if $(filter rdmacore,$(UDAPL_TAGS)),--rdmacore) $(abspath $(UDAPL_OUT))/libdatgodapl.so > $(UDAPL_OUT)/dat.conf
	@echo "export DAT_OVERRIDE=$(abspath $(UDAPL_OUT))/dat.conf   # then: dtest -P godapl-siw-lo ..."

# The rdmacore build of the library is vetted and its instance data tested
# too, so that it keeps building where no RDMA device is.
udapl-test:
	CGO_ENABLED=1 $(GO) test -tags udapl -count=1 -v -timeout 20m ./udapl/...
	CGO_ENABLED=1 $(GO) vet -tags udapl,rdmacore ./udapl/...
	CGO_ENABLED=1 $(GO) test -tags udapl,rdmacore -count=1 ./udapl/libdatgodapl

udapl-bench:
	CGO_ENABLED=1 $(GO) test -tags udapl -run '^$$' -bench . -benchtime $(BENCHTIME) -timeout 20m ./udapl/...

# godapl's library against OFA dapl over the kernel's siw and rxe in the QEMU lab (root; boots
# VMs), built with rdmacore (libibverbs-dev, librdmacm-dev).
.PHONY: udapl-lab
udapl-lab:
	$(MAKE) udapl UDAPL_TAGS=rdmacore UDAPL_OUT=bin
	udapl/lab.sh
