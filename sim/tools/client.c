/*
 * The thin client of a simulated host's tool server (server.ts): every simulated tool's name in the host's bin/
 * is a link to this program, so argv[0] names the tool. It sends the call (argv, environment, cwd, uid, pid) over
 * the host's socket ($LIFTOFF_SIM_HOST_DIR/tool-server/tools.sock), writes the output the server sends back to
 * its own stdout and stderr, and exits with the code the server replies. When there is no server to ask (no
 * socket, a refused connection, another user's call, a real-Docker container) or the server answers "not mine",
 * it execs the node bundle exactly as the shell shims did: `node simtool.mjs TOOL ARGS...`, same pid.
 *
 * Built by sim/build-tools.ts with SIMTOOL_NODE and SIMTOOL_BUNDLE defined as string literals. The wire is
 * described in server.ts.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SIMTOOL_NODE
#error "SIMTOOL_NODE (the node binary) must be defined"
#endif
#ifndef SIMTOOL_BUNDLE
#error "SIMTOOL_BUNDLE (simtool.mjs) must be defined"
#endif

extern char **environ;

#define REQUEST_MAGIC 0x3153544cu
#define MAX_REQUEST (4u << 20)
/* A simulated host's container of sim/real-docker.ts: its tools run there, apart from the host's server. */
#define IN_CONTAINER_MARK "/etc/liftoff-sim/env"

/*
 * The tool argv[0] names: its file name up to the first dot. No tool's name has one, and a copy of a tool kept
 * beside a wrapper of it (nvidia-smi.real, as a test wraps a tool) still runs that tool, as a copy of the shell
 * shim, which named its tool inside, did.
 */
static const char *tool_name(const char *argv0) {
  const char *slash = strrchr(argv0, '/');
  const char *base = slash ? slash + 1 : argv0;
  const char *dot = strchr(base, '.');
  if (!dot || dot == base) return base;
  char *name = strndup(base, (size_t)(dot - base));
  return name ? name : base;
}

/* The node bundle, as the shell shim ran it; never returns. */
static void run_bundle(int argc, char **argv, const char *tool) {
  char **args = calloc((size_t)argc + 3, sizeof *args);
  if (!args) _exit(127);
  args[0] = SIMTOOL_NODE;
  args[1] = SIMTOOL_BUNDLE;
  args[2] = (char *)tool;
  for (int i = 1; i < argc; i++) args[i + 2] = argv[i];
  execv(SIMTOOL_NODE, args);
  fprintf(stderr, "simtool: cannot run %s: %s\n", SIMTOOL_NODE, strerror(errno));
  _exit(127);
}

struct buffer {
  char *data;
  size_t len, cap;
};

static int put(struct buffer *b, const void *src, size_t n) {
  if (b->len + n > MAX_REQUEST) return -1;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data) return -1;
    b->data = data;
    b->cap = cap;
  }
  memcpy(b->data + b->len, src, n);
  b->len += n;
  return 0;
}

static int put_u32(struct buffer *b, uint32_t v) { return put(b, &v, sizeof v); }

static int put_str(struct buffer *b, const char *s) { return put(b, s, strlen(s) + 1); }

/*
 * The request (server.ts's wire): header, uid, pid, counts, then cwd, argv and environ as NUL-ended strings, the
 * tool's name in argv[0]'s place.
 */
static int build_request(struct buffer *b, const char *tool, int argc, char **argv) {
  uint32_t envc = 0;
  for (char **e = environ; *e; e++) envc++;
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, "/");
  if (put_u32(b, REQUEST_MAGIC) || put_u32(b, 0) || put_u32(b, (uint32_t)getuid()) ||
      put_u32(b, (uint32_t)getpid()) || put_u32(b, (uint32_t)argc) || put_u32(b, envc) || put_str(b, cwd))
    return -1;
  if (put_str(b, tool)) return -1;
  for (int i = 1; i < argc; i++)
    if (put_str(b, argv[i])) return -1;
  for (char **e = environ; *e; e++)
    if (put_str(b, *e)) return -1;
  uint32_t body = (uint32_t)(b->len - 8);
  memcpy(b->data + 4, &body, sizeof body);
  return 0;
}

static int connect_server(const char *host_dir) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  int n = snprintf(addr.sun_path, sizeof addr.sun_path, "%s/tool-server/tools.sock", host_dir);
  if (n < 0 || (size_t)n >= sizeof addr.sun_path) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Writes all of it, waiting out a non-blocking descriptor; -1 when the reader is gone. */
static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && errno == EAGAIN) {
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      poll(&pfd, 1, -1);
    } else {
      return -1;
    }
  }
  return 0;
}

/* Reads exactly n bytes: 1 when done, 0 at end of stream before any byte, -1 on a short read or error. */
static int read_exact(int fd, char *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r > 0) {
      got += (size_t)r;
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else {
      return got == 0 && r == 0 ? 0 : -1;
    }
  }
  return 1;
}

int main(int argc, char **argv) {
  const char *tool = tool_name(argc > 0 ? argv[0] : "simtool");
  const char *host_dir = getenv("LIFTOFF_SIM_HOST_DIR");
  if (!host_dir || !*host_dir || access(IN_CONTAINER_MARK, F_OK) == 0) run_bundle(argc, argv, tool);
  int fd = connect_server(host_dir);
  if (fd < 0) run_bundle(argc, argv, tool);
  struct buffer req = {0};
  if (build_request(&req, tool, argc < 1 ? 1 : argc, argv) != 0 || write_all(fd, req.data, req.len) != 0) {
    close(fd);
    run_bundle(argc, argv, tool);
  }
  free(req.data);
  int answered = 0; /* whether any output came: after it, the call cannot be run again */
  char *body = NULL;
  for (;;) {
    unsigned char head[5];
    int r = read_exact(fd, (char *)head, sizeof head);
    if (r != 1) break;
    uint32_t len;
    memcpy(&len, head + 1, sizeof len);
    char *grown = realloc(body, len ? len : 1);
    if (!grown) break;
    body = grown;
    if (len > 0 && read_exact(fd, body, len) != 1) break;
    switch (head[0]) {
      case 'o':
      case 'e':
        answered = 1;
        /* A reader that went away ends the client by SIGPIPE, as it ends a C tool. */
        write_all(head[0] == 'o' ? 1 : 2, body, len);
        break;
      case 'x': {
        int32_t code = 1;
        if (len == sizeof code) memcpy(&code, body, sizeof code);
        return code & 0xff;
      }
      case 'f':
        if (!answered) {
          close(fd);
          run_bundle(argc, argv, tool);
        }
        break;
      default:
        break;
    }
  }
  /* The server went away mid-call. Before any output the call is run again as its own process (the server only
   * takes read-only calls; the host's commands.log then lists it twice); after it, the caller learns it failed. */
  close(fd);
  if (!answered) run_bundle(argc, argv, tool);
  fputs("simtool: the host's tool server ended during the call\n", stderr);
  return 1;
}
