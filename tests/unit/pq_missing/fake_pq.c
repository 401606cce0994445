/* A libpq.so.5 that has none of libpq's functions: what memtool must refuse
 * with a clear error instead of crashing (tests/unit/pq_missing/run.sh). */
int mt_fake_pq_marker(void);
int mt_fake_pq_marker(void)
{
    return 5;
}
