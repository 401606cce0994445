/*
 * The floor of memtool server's benchmark: libmicrohttpd, set up as memtool
 * server sets it up (an internal epoll thread pool), answering every request
 * with a fixed body of the size of a retrieve's answer. What is left between
 * this and memtool server is memtool's own work.
 *
 *   mt_bench_http_floor BODY_BYTES THREADS   (prints its URL, serves until killed)
 */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *body;
static size_t body_len;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct MHD_Response *r;
    enum MHD_Result ret;

    (void)cls, (void)url, (void)method, (void)version, (void)upload;
    if (!*con_cls) {
        *con_cls = conn;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    r = MHD_create_response_from_buffer(body_len, body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Content-Type", "application/json");
    ret = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r);
    return ret;
}

int main(int argc, char **argv)
{
    struct MHD_Daemon *d;
    const union MHD_DaemonInfo *info;
    sigset_t set;
    int sig;

    if (argc != 3)
        return fprintf(stderr, "usage: mt_bench_http_floor BODY_BYTES THREADS\n"), 2;
    body_len = (size_t)strtoul(argv[1], NULL, 10);
    body = malloc(body_len + 1);
    memset(body, 'x', body_len);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC, 0, NULL,
                         NULL, on_request, NULL, MHD_OPTION_THREAD_POOL_SIZE,
                         (unsigned)strtoul(argv[2], NULL, 10), MHD_OPTION_CONNECTION_LIMIT, 256u,
                         MHD_OPTION_END);
    if (!d)
        return perror("MHD_start_daemon"), 1;
    info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("http://127.0.0.1:%u\n", info->port);
    fflush(stdout);
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    free(body);
    return 0;
}
