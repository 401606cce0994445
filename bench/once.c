/*
 * mt_bench_once FILE: the floor of a one-process view. It reads its stdin
 * (as `memtool call` reads its input), then opens, stats and reads FILE and
 * writes it to stdout. Linked against libc alone, it costs what any exec of
 * a small C program costs plus the system calls of the view.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    static char buf[1 << 16];
    struct stat sb;
    ssize_t n;
    int fd;

    if (argc != 2)
        return 2;
    while ((n = read(0, buf, sizeof(buf))) > 0)
        continue;
    fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb) < 0 || sb.st_size > (off_t)sizeof(buf))
        return 1;
    n = read(fd, buf, (size_t)sb.st_size);
    close(fd);
    if (n < 0 || write(1, buf, (size_t)n) != n)
        return 1;
    return 0;
}
