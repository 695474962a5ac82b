# godapl — the targets the README and CI use.
#
#   make test     unit, conformance and property tests with the race detector (what CI runs)
#   make bench    benchmarks with a raw-TCP baseline in the same run (-benchmem)
#   make fuzz     every fuzz target for FUZZTIME (default 30s each)
#   make interop  tests against the Linux kernel in the QEMU lab (boots a VM; root)
#   make hooks    install scripts/commit-msg as this clone's commit-msg hook

GO       ?= go
FUZZTIME ?= 30s
BENCHTIME ?= 2s

.PHONY: test bench fuzz vet interop hooks

test: vet
	$(GO) test -race -count=1 -timeout 15m ./...

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	./scripts/install-deps.sh && $(GO) vet -tags rdmacore ./verbs/rdmacore/... ./dat/providers/...
	$(GO) vet -tags udapl ./udapl/...

bench:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./...

fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

# The hooks directory comes from git, so that worktrees and core.hooksPath
# are honoured.
hooks:
	@dir=$$(git rev-parse --git-path hooks) && mkdir -p "$$dir" && \
	install -m 0755 scripts/commit-msg "$$dir/commit-msg" && echo "installed $$dir/commit-msg"

-include mk/*.mk
