// Package rdsib holds the interoperability tests of RDS over DAT with the
// Linux kernel's RDS over RDMA (rds_rdma) on RoCE: the dat transport of
// rdsoverdat over the rdmacore provider on one lab VM's rxe device, the
// kernel's AF_RDS on another's.
//
// It sits above every other layer and only drives them. The tests (build
// tag rdmacore) run inside the godapl VM; the kernel's side is
// testdata/kpeer.py, a python3 AF_RDS server in the other VM that the
// tests drive over a TCP control connection. They skip unless
// RDSIB_LOCAL (this VM's address), RDSIB_PEER (the kernel VM's) and
// RDSIB_CTL (kpeer's control address) are set; lab.sh, run by
// `make rds-ib-lab`, boots both VMs and sets them. bench.sh (`make
// rds-ib-bench`) sets godapl and the kernel side by side with
// internal/ibbench. The wire facts the tests check are in
// docs/RDS-IB.md, the findings in docs/INTEROP-FINDINGS.md.
package rdsib
