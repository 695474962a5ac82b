# Side-by-side figures in the QEMU lab (tests/lab): the kernel's siw beside godapl's soft-iWARP in
# one boot. Needs root; see scripts/lab-bench.sh. Included by the main Makefile. The VM has its own
# name and address so that it never collides with the interop tests' VM.
LAB_CACHE ?= /var/cache/ratlab
LAB       ?= $(CURDIR)/tests/lab
REPS      ?= 3
BENCH_VM  := --name bench

.PHONY: lab-bench
lab-bench:
	LAB_CACHE=$(LAB_CACHE) GODAPL_LAB=$(LAB) scripts/lab-setup.sh
	mkdir -p bin && CGO_ENABLED=0 go build -o bin/rdma-perf ./cmd/rdma-perf
	LAB_CACHE=$(LAB_CACHE) $(LAB)/vm.sh start $(BENCH_VM) --ip 192.168.77.9 --share $(CURDIR)
	LAB_CACHE=$(LAB_CACHE) $(LAB)/vm.sh exec $(BENCH_VM) -- env REPS=$(REPS) ADDR=192.168.77.9 \
	  $(CURDIR)/scripts/lab-bench.sh > bin/lab-bench.txt 2>&1; status=$$?; \
	  LAB_CACHE=$(LAB_CACHE) $(LAB)/vm.sh stop $(BENCH_VM); cat bin/lab-bench.txt; exit $$status
	python3 $(LAB)/bench/summarize.py bin/lab-bench.txt
