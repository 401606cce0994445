/*
 * libpq, loaded when a PostgreSQL store is first opened. Linking it would
 * make every process start map the twenty-odd libraries it brings (Kerberos,
 * LDAP, GnuTLS, whose start-up runs at load) even on a file or SQLite store:
 * a one-shot `memtool call` took five times as long with it linked.
 */
#ifndef MT_PQ_LOAD_H
#define MT_PQ_LOAD_H

#include <libpq-fe.h>

/* Every libpq function the store calls: the pointers are named as the
 * functions and typed from libpq's own declarations. */
#define MT_PQ_FNS(X)                                                                               \
    X(PQclear)                                                                                     \
    X(PQresultStatus)                                                                              \
    X(PQexec)                                                                                      \
    X(PQresultErrorField)                                                                          \
    X(PQuser)                                                                                      \
    X(PQtransactionStatus)                                                                         \
    X(PQfinish)                                                                                    \
    X(PQstatus)                                                                                    \
    X(PQntuples)                                                                                   \
    X(PQgetvalue)                                                                                  \
    X(PQfreemem)                                                                                   \
    X(PQdb)                                                                                        \
    X(PQprepare)                                                                                   \
    X(PQgetisnull)                                                                                 \
    X(PQftype)                                                                                     \
    X(PQexecPrepared)                                                                              \
    X(PQerrorMessage)                                                                              \
    X(PQconninfoParse)                                                                             \
    X(PQconninfoFree)                                                                              \
    X(PQsocket)                                                                                    \
    X(PQport)                                                                                      \
    X(PQparameterStatus)                                                                           \
    X(PQnfields)                                                                                   \
    X(PQhost)                                                                                      \
    X(PQgetlength)                                                                                 \
    X(PQescapeLiteral)                                                                             \
    X(PQconnectdbParams)                                                                           \
    X(PQcmdTuples)                                                                                 \
    X(PQcmdStatus)

typedef struct {
#define MT_PQ_FIELD(name) __typeof__(name) *name;
    MT_PQ_FNS(MT_PQ_FIELD)
#undef MT_PQ_FIELD
} mt_pq_fns;

/* Load libpq once per process; *out is valid from then on. MT_ENOSYS, with
 * what to install, when it cannot be loaded. */
int mt_pq_load(const mt_pq_fns **out);

#endif
