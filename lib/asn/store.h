/* asn/store.h — the SQLite index of records: every record (prompt,
 * candidate, annotated candidate, pair) keyed by its id, upserted so that
 * indexing the same file twice changes nothing and annotations added by
 * later tools merge into the stored record (JSON merge patch). */
#ifndef ASN_STORE_H
#define ASN_STORE_H

#include <jansson.h>

#include "asn/core.h"

typedef struct asn_store asn_store;

/* The schema version (PRAGMA user_version) of the indexes this asn writes.
 * 1: the records table and views of store.c, the version set. Indexes of
 * an older asn (user_version 0) are migrated when opened for writing: the
 * columns they lack added, the views made anew. */
#define ASN_STORE_SCHEMA_VERSION 1

/* Opens (creating if needed) a database in WAL mode with asn's schema and
 * views; an older index is migrated, a newer one (or a database whose
 * "records" table is not asn's) refused with a message. A record merged
 * into a stored one: objects merged field by field, other values (null
 * included) replace, so upserting the same record twice changes nothing. */
asn_store *asn_store_open(const char *path, asn_err *e);
void asn_store_close(asn_store *s);

/* Upserts one record (it must have a string "id"; a pair record without id
 * gets "pair/<chosen_id>/<rejected_id>"). Returns 0 or -1. Records are
 * grouped into transactions of `batch` records (asn_store_flush ends one). */
int asn_store_put(asn_store *s, const json_t *rec, asn_err *e);
int asn_store_flush(asn_store *s, asn_err *e);

/* Merges every record of another asn database into this one (same upsert). */
int asn_store_merge(asn_store *s, const char *other, asn_err *e);

/* 1 if a record with this id is stored, 0 if not. */
int asn_store_has(asn_store *s, const char *id);
/* Number of candidate records stored for a prompt id. */
long asn_store_count_prompt(asn_store *s, const char *prompt_id);

/* The underlying handle, for read-only queries (report). */
struct sqlite3;
struct sqlite3 *asn_store_db(asn_store *s);

#endif
