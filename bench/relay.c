// relay: the floor of any stdio gateway. Spawns argv[1..] and copies bytes
// stdin -> child stdin and child stdout -> stdout with one poll() loop.
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static int pump(int from, int to) {
  char buf[65536];
  ssize_t n = read(from, buf, sizeof buf);
  if (n <= 0) return -1;
  for (ssize_t off = 0; off < n;) {
    ssize_t w = write(to, buf + off, n - off);
    if (w < 0) return -1;
    off += w;
  }
  return 0;
}
int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: relay CMD [ARGS]\n"); return 2; }
  int in[2], out[2];
  if (pipe(in) || pipe(out)) { perror("pipe"); return 1; }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0); dup2(out[1], 1);
    close(in[0]); close(in[1]); close(out[0]); close(out[1]);
    execvp(argv[1], argv + 1);
    perror("exec"); _exit(127);
  }
  close(in[0]); close(out[1]);
  struct pollfd fds[2] = {{0, POLLIN, 0}, {out[0], POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) break;
    if (fds[0].revents & (POLLIN | POLLHUP)) { if (pump(0, in[1])) break; }
    if (fds[1].revents & (POLLIN | POLLHUP)) { if (pump(out[0], 1)) break; }
  }
  close(in[1]);
  waitpid(pid, NULL, 0);
  return 0;
}
