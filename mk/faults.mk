# The reliability suite (tests/faults; figures in docs/RELIABILITY.md), long version: every
# scenario at full size, the dat-transport scenarios with known bugs included, the fuzz-coverage
# check strict, and the soak for SOAK with a fault every SOAK_FAULT_EVERY. `make test` runs the
# short version. Needs root (network namespaces, tc, ss -K); included by the main Makefile.
#
#   make faults                      soak 5m, a fault every 10s
#   make faults SOAK=30m RACE=-race  longer, under the race detector
SOAK ?= 5m
SOAK_FAULT_EVERY ?= 10s
RACE ?=
FAULTS_TIMEOUT ?= 90m

.PHONY: faults
faults:
	./scripts/install-deps.sh
	FAULTS_LONG=1 SOAK=$(SOAK) SOAK_FAULT_EVERY=$(SOAK_FAULT_EVERY) \
		$(GO) test $(RACE) -count=1 -v -timeout $(FAULTS_TIMEOUT) ./tests/internal/netns ./tests/faults
