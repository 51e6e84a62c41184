// The storage's own speed for one file, the floor under a cold load: evicts FILE from the page
// cache (sync, posix_fadvise DONTNEED), then reads it once with THREADS threads in PIECE_KIB
// pieces and prints GB/s. MODE: dr / ds (O_DIRECT, one region per thread / pieces shared in
// file order), br / bs (buffered, the same).
//
//   cc -O2 -pthread benches/raw_read.c -o /tmp/raw_read && /tmp/raw_read FILE br 16 16384
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char* path;
static int direct, regions, threads;
static uint64_t piece, size, span;
static atomic_uint_fast64_t next;
static atomic_int failed;

static void read_at(int fd, void* buf, uint64_t off, uint64_t end) {
  uint64_t n = end - off < piece ? end - off : piece;
  n = (n + 4095) & ~(uint64_t)4095;  // O_DIRECT lengths are whole blocks; the tail reads short
  if (pread(fd, buf, n, (off_t)off) <= 0) atomic_store(&failed, 1);
}

static void* work(void* arg) {
  const uint64_t i = (uint64_t)(uintptr_t)arg;
  const int fd = open(path, O_RDONLY | (direct ? O_DIRECT : 0));
  void* buf = NULL;
  if (fd < 0 || posix_memalign(&buf, 4096, piece) != 0) {
    atomic_store(&failed, 1);
    return NULL;
  }
  if (regions) {
    const uint64_t end = (i + 1) * span < size ? (i + 1) * span : size;
    for (uint64_t off = i * span; off < end; off += piece) read_at(fd, buf, off, end);
  } else {
    for (uint64_t off; (off = atomic_fetch_add(&next, piece)) < size;) read_at(fd, buf, off, size);
  }
  free(buf);
  close(fd);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5 || strlen(argv[2]) != 2 || !strchr("db", argv[2][0]) || !strchr("rs", argv[2][1])) {
    fprintf(stderr, "usage: %s FILE dr|ds|br|bs THREADS PIECE_KIB\n", argv[0]);
    return 2;
  }
  path = argv[1];
  direct = argv[2][0] == 'd';
  regions = argv[2][1] == 'r';
  threads = atoi(argv[3]);
  piece = (uint64_t)atoi(argv[4]) << 10;
  struct stat st;
  if (threads < 1 || threads > 256 || piece == 0 || stat(path, &st) != 0) {
    fprintf(stderr, "raw_read: bad arguments or no such file\n");
    return 2;
  }
  size = (uint64_t)st.st_size;
  span = ((size + threads - 1) / threads + piece - 1) / piece * piece;
  sync();
  const int fd = open(path, O_RDONLY);
  if (fd >= 0) {
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  struct timespec a, z;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pthread_t t[256];
  for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, work, (void*)(uintptr_t)i);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &z);
  const double s = (double)(z.tv_sec - a.tv_sec) + 1e-9 * (double)(z.tv_nsec - a.tv_nsec);
  printf("%s %s threads %d piece %llu KiB: %.2f GB/s (%.3f s)%s\n", path, argv[2], threads,
         (unsigned long long)(piece >> 10), (double)size / s / 1e9, s,
         atomic_load(&failed) ? " READ FAILED" : "");
  return atomic_load(&failed) ? 1 : 0;
}
