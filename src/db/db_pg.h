/* The PostgreSQL driver's internals that its tests look at. */
#ifndef MT_STORE_DB_PG_H
#define MT_STORE_DB_PG_H

/* The round trips to PostgreSQL servers this process has made (each query
 * sent and answered), so a test can count what a command costs. */
unsigned long mt_db_pg_round_trips(void);

#endif
