// Package ring holds FIFO, a first-in first-out queue of fixed capacity
// whose storage is allocated once. It sits below every layer that keeps
// a small bounded queue on a hot path — soft-iWARP's RDMA Read queues,
// RDS over DAT's look-ahead messages and admitted RDMA ops — so that
// none of them allocates per entry or carries its own ring arithmetic.
package ring
