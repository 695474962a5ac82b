//go:build udapl

// Package udapltest runs C programs on godapl's uDAPL provider library
// (udapl/libdatgodapl): Debian's unmodified dtest and dapltest, and a
// bad-input program of its own, all loading the library through libdat2
// with DAT_OVERRIDE naming a dat.conf of the test's. It builds the library
// itself, and its tests skip, saying why, where the DAT headers, the
// registry, the programs or a C compiler are missing. It is test code
// only; make udapl-test runs it.
package udapltest
