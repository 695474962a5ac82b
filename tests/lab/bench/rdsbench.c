// rdsbench: the kernel's RDS (AF_RDS) as the reference for the lab's RDS
// benchmarks, with the workload cmd/rds-bench runs over godapl, so that the
// two print comparable lines.
//
//   rdsbench tput SIZE SECONDS [RX_ADDR TX_ADDR [RX_NETNS TX_NETNS]]
//   rdsbench pingpong SIZE ITERS [RX_ADDR TX_ADDR [RX_NETNS TX_NETNS]]
//
// A receiver process (RX_ADDR, port 19001) and a sender process (TX_ADDR,
// port 19002), each optionally inside a network namespace given by path
// (/var/run/netns/NAME, "-" for none). Both addresses default to 127.0.0.1,
// where the kernel uses its loopback transport; RDS/TCP proper needs the two
// ends in two namespaces.
//
// tput: the sender sends SIZE-byte messages for SECONDS (a whole number of
// batches of 64), then a 1-byte end marker. The receiver times from the
// first message to the marker and prints
//   tput size=N msgs=N secs=S MB/s=X msgs/s=Y
// pingpong: the receiver echoes every message; the sender makes 10 untimed
// and ITERS timed round trips and prints
//   pingpong size=N iters=N rtt_us avg=A min=M p50=P p99=Q
// A send refused with ENOBUFS (the destination port is congested) or EAGAIN
// is retried after 50 us, as cmd/rds-bench does.
//
// Build: cc -O2 -Wall -o rdsbench rdsbench.c
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define AF_RDS_ 21            // linux/socket.h
#define SOL_RDS_ 276
#define SO_RDS_TRANSPORT_ 8   // linux/rds.h
#define RDS_TRANS_TCP_ 2
#define MAX_MSG (1 << 20)     // RDS_MAX_MSG_SIZE
#define RX_PORT 19001
#define TX_PORT 19002
#define WARMUP 10

struct opts {
	int pingpong;
	size_t size;
	double seconds;
	long iters;
	const char *rx_addr, *tx_addr, *rx_ns, *tx_ns;
};

static void fail(const char *what) {
	perror(what);
	exit(1);
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct sockaddr_in inet(const char *addr, int port) {
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "rdsbench: bad IPv4 address %s\n", addr);
		exit(2);
	}
	return sa;
}

static void join_netns(const char *path) {
	if (path == NULL || strcmp(path, "-") == 0)
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) != 0)
		fail(path);
	close(fd);
}

static int open_rds(const char *addr, int port) {
	int fd = socket(AF_RDS_, SOCK_SEQPACKET, 0);
	if (fd < 0)
		fail("socket(AF_RDS)");
	int tcp = RDS_TRANS_TCP_;
	if (setsockopt(fd, SOL_RDS_, SO_RDS_TRANSPORT_, &tcp, sizeof tcp) != 0)
		fail("SO_RDS_TRANSPORT");
	// A message may not exceed half the send buffer, and a deep receive
	// queue keeps the receiver's port from congesting at every burst; the
	// FORCE options go past net.core.[rw]mem_max.
	int bytes = 16 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
		fail("SO_SNDBUFFORCE");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
		fail("SO_RCVBUFFORCE");
	struct sockaddr_in sa = inet(addr, port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		fail("bind");
	return fd;
}

static void send_msg(int fd, const void *buf, size_t len, const struct sockaddr_in *to) {
	static const struct timespec pause = {0, 50000};
	while (sendto(fd, buf, len, 0, (const struct sockaddr *)to, sizeof *to) < 0) {
		if (errno == ENOBUFS || errno == EAGAIN)
			nanosleep(&pause, NULL);
		else if (errno != EINTR)
			fail("sendto");
	}
}

static ssize_t recv_msg(int fd, void *buf, size_t cap, struct sockaddr_in *from) {
	for (;;) {
		socklen_t len = sizeof *from;
		ssize_t n = recvfrom(fd, buf, cap, 0, (struct sockaddr *)from, &len);
		if (n >= 0)
			return n;
		if (errno != EINTR)
			fail("recvfrom");
	}
}

// receiver runs in the child: it binds, tells the sender over ctl, then
// counts (tput) or echoes (pingpong) until the end marker.
static void receiver(const struct opts *o, int ctl, char *buf) {
	join_netns(o->rx_ns);
	int fd = open_rds(o->rx_addr, RX_PORT);
	if (write(ctl, "r", 1) != 1)
		fail("write ready");
	struct sockaddr_in from;
	long msgs = 0;
	double bytes = 0, start = 0;
	for (;;) {
		ssize_t n = recv_msg(fd, buf, o->size, &from);
		if (n == 1)
			break;
		if (o->pingpong) {
			send_msg(fd, buf, n, &from);
			continue;
		}
		if (msgs++ == 0)
			start = now();
		bytes += n;
	}
	if (!o->pingpong) {
		double secs = now() - start;
		char line[200];
		int len = snprintf(line, sizeof line, "tput size=%zu msgs=%ld secs=%.3f MB/s=%.1f msgs/s=%.0f\n",
				   o->size, msgs, secs, bytes / secs / 1e6, msgs / secs);
		if (write(ctl, line, len) != len)
			fail("write result");
	}
	exit(0);
}

static void sender_tput(const struct opts *o, int fd, const struct sockaddr_in *to, int ctl, char *buf) {
	double end = now() + o->seconds;
	do {
		for (int i = 0; i < 64; i++)
			send_msg(fd, buf, o->size, to);
	} while (now() < end);
	send_msg(fd, "", 1, to);
	char line[200];
	ssize_t n = read(ctl, line, sizeof line - 1);
	if (n <= 0) {
		fprintf(stderr, "rdsbench: the receiver reported nothing\n");
		exit(1);
	}
	line[n] = 0;
	fputs(line, stdout);
}

static int by_value(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void sender_pingpong(const struct opts *o, int fd, const struct sockaddr_in *to, char *buf) {
	double *rtt = malloc(o->iters * sizeof *rtt), sum = 0;
	if (rtt == NULL)
		fail("malloc");
	struct sockaddr_in from;
	for (long i = -WARMUP; i < o->iters; i++) {
		double t = now();
		send_msg(fd, buf, o->size, to);
		recv_msg(fd, buf, o->size, &from);
		if (i >= 0)
			rtt[i] = now() - t;
	}
	send_msg(fd, "", 1, to);
	for (long i = 0; i < o->iters; i++)
		sum += rtt[i];
	qsort(rtt, o->iters, sizeof *rtt, by_value);
	printf("pingpong size=%zu iters=%ld rtt_us avg=%.1f min=%.1f p50=%.1f p99=%.1f\n", o->size, o->iters,
	       sum / o->iters * 1e6, rtt[0] * 1e6, rtt[o->iters / 2] * 1e6, rtt[o->iters * 99 / 100] * 1e6);
	free(rtt);
}

static void usage(void) {
	fprintf(stderr, "usage: rdsbench tput SIZE SECONDS [RX_ADDR TX_ADDR [RX_NETNS TX_NETNS]]\n"
			"       rdsbench pingpong SIZE ITERS [RX_ADDR TX_ADDR [RX_NETNS TX_NETNS]]\n");
	exit(2);
}

int main(int argc, char **argv) {
	if (argc < 4 || argc == 5 || argc == 7 || argc > 8)
		usage();
	struct opts o = {.rx_addr = "127.0.0.1", .tx_addr = "127.0.0.1"};
	if (strcmp(argv[1], "pingpong") == 0)
		o.pingpong = 1;
	else if (strcmp(argv[1], "tput") != 0)
		usage();
	o.size = strtoul(argv[2], NULL, 0);
	if (o.pingpong)
		o.iters = strtol(argv[3], NULL, 0);
	else
		o.seconds = strtod(argv[3], NULL);
	if (argc >= 6) {
		o.rx_addr = argv[4];
		o.tx_addr = argv[5];
	}
	if (argc == 8) {
		o.rx_ns = argv[6];
		o.tx_ns = argv[7];
	}
	// A 1-byte message is the end marker, so no workload may use that size.
	if (o.size < 2 || o.size > MAX_MSG) {
		fprintf(stderr, "rdsbench: SIZE must be 2 to %d bytes\n", MAX_MSG);
		return 2;
	}
	if ((o.pingpong && o.iters < 1) || (!o.pingpong && !(o.seconds > 0))) {
		fprintf(stderr, "rdsbench: SECONDS and ITERS must be positive\n");
		return 2;
	}
	char *buf = calloc(1, o.size);
	int ctl[2];
	if (buf == NULL || socketpair(AF_UNIX, SOCK_STREAM, 0, ctl) != 0)
		fail("setup");
	signal(SIGPIPE, SIG_IGN);
	pid_t child = fork();
	if (child < 0)
		fail("fork");
	if (child == 0) {
		close(ctl[0]);
		receiver(&o, ctl[1], buf);
	}
	close(ctl[1]);
	join_netns(o.tx_ns);
	int fd = open_rds(o.tx_addr, TX_PORT);
	char ready;
	if (read(ctl[0], &ready, 1) != 1) {
		fprintf(stderr, "rdsbench: the receiver failed to start\n");
		return 1;
	}
	struct sockaddr_in to = inet(o.rx_addr, RX_PORT);
	if (o.pingpong)
		sender_pingpong(&o, fd, &to, buf);
	else
		sender_tput(&o, fd, &to, ctl[0], buf);
	int status;
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "rdsbench: the receiver failed\n");
		return 1;
	}
	return 0;
}
