/* store.c — the SQLite record index: one table keyed by id holding each
 * record's JSON, a few extracted columns for indexing, and views for the
 * usual questions. Upserts merge JSON (asn_merge below: RFC 7396's merge
 * patch, except that a null is a value, not a deletion). The schema has a
 * version (PRAGMA user_version): older indexes are migrated on open, newer
 * ones refused. */
#include "asn/store.h"
#include "asn/json.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 1000 }; /* records per transaction */
enum { SCHEMA_VERSION = ASN_STORE_SCHEMA_VERSION };

struct asn_store {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *put, *has, *count;
    int in_tx, pending;
};

static const char *TABLE =
    "CREATE TABLE IF NOT EXISTS records ("
    "  id TEXT PRIMARY KEY,"
    "  kind TEXT NOT NULL,"           /* prompt, candidate, pair */
    "  prompt_id TEXT,"
    "  heuristic_id TEXT,"
    "  heuristic_name TEXT,"
    "  seed INTEGER,"
    "  json TEXT NOT NULL);";
/* the columns an older records table may lack (added, NULL) */
static const char *const ADDED_COLUMNS[][2] = {
    {"prompt_id", "TEXT"}, {"heuristic_id", "TEXT"}, {"heuristic_name", "TEXT"}, {"seed", "INTEGER"},
};
static const char *VIEWS =
    "DROP VIEW IF EXISTS prompt_stats; DROP VIEW IF EXISTS heuristic_stats; DROP VIEW IF EXISTS candidates;"
    "CREATE INDEX IF NOT EXISTS records_prompt ON records(prompt_id);"
    "CREATE INDEX IF NOT EXISTS records_heuristic ON records(heuristic_id);"
    /* one row per candidate with the numbers later stages add */
    "CREATE VIEW IF NOT EXISTS candidates AS SELECT id, prompt_id, heuristic_id, heuristic_name, seed,"
    "  json_extract(json, '$.n_tokens') AS n_tokens,"
    "  json_extract(json, '$.finish') AS finish,"
    "  json_extract(json, '$.heuristic.processors') AS processors,"
    "  coalesce(json_extract(json, '$.quality.bt'), json_extract(json, '$.bradley_terry_rating')) AS quality,"
    "  json_extract(json, '$.quality.swiss_points') AS swiss_points,"
    "  json_extract(json, '$.quality.games') AS games,"
    "  json_extract(json, '$.diversity.self_bleu') AS self_bleu,"
    "  json_extract(json, '$.diversity.embedding_entropy') AS embedding_entropy,"
    "  json_extract(json, '$.ngram.coverage') AS ngram_coverage,"
    "  json_extract(json, '$.verifiable_reward') AS verifiable_reward,"
    "  json_extract(json, '$.score.final') AS final_score,"
    "  json_extract(json, '$.rank') AS rank,"
    "  json_extract(json, '$.model.sha256') AS model_sha256"
    "  FROM records WHERE kind = 'candidate';"
    "CREATE VIEW IF NOT EXISTS heuristic_stats AS SELECT heuristic_id, heuristic_name,"
    "  count(*) AS candidates, avg(n_tokens) AS mean_tokens,"
    "  sum(finish = 'eos') AS finish_eos, sum(finish = 'stop') AS finish_stop,"
    "  sum(finish = 'length') AS finish_length,"
    "  avg(quality) AS mean_quality, avg(embedding_entropy) AS mean_embedding_entropy,"
    "  avg(self_bleu) AS mean_self_bleu, avg(ngram_coverage) AS mean_ngram_coverage,"
    "  avg(verifiable_reward) AS mean_verifiable_reward, avg(final_score) AS mean_final_score,"
    "  sum(rank IS NOT NULL) AS kept"
    "  FROM candidates GROUP BY heuristic_id ORDER BY heuristic_name;"
    "CREATE VIEW IF NOT EXISTS prompt_stats AS SELECT prompt_id, count(*) AS candidates,"
    "  count(DISTINCT heuristic_id) AS heuristics, count(DISTINCT seed) AS seeds,"
    "  avg(n_tokens) AS mean_tokens FROM candidates GROUP BY prompt_id;";

static int sql_err(asn_store *s, asn_err *e, const char *what)
{
    if (sqlite3_errcode(s->db) == SQLITE_FULL) /* the disk, as the other tools say it */
        return asn_err_set(e, "%s: %s: No space left on device (%s)", s->path, what, sqlite3_errmsg(s->db));
    return asn_err_set(e, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

/* ------------------------------------------------------------- merging */

/* patch merged into target (both objects): an object into an object
 * recursively, any other value (null included) replaces. */
static void merge_into(json_t *target, json_t *patch)
{
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v)
    {
        json_t *old = json_object_get(target, k);
        if (json_is_object(old) && json_is_object(v))
            merge_into(old, v);
        else
            json_object_set(target, k, v);
    }
}

/* SQL asn_merge(stored, new): the stored record with the new one merged
 * in, as JSON text. Unlike json_patch (RFC 7396), a null in the new record
 * is kept as a null field, so indexing a record twice changes nothing. */
static void sql_merge(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *a = (const char *)sqlite3_value_text(argv[0]), *b = (const char *)sqlite3_value_text(argv[1]);
    json_t *ja = a ? json_loads(a, JSON_DECODE_ANY, NULL) : NULL, *jb = b ? json_loads(b, JSON_DECODE_ANY, NULL) : NULL;
    if (!jb) {
        json_decref(ja);
        sqlite3_result_error(cx, "asn_merge: the new record is not JSON", -1);
        return;
    }
    char *out;
    if (json_is_object(ja) && json_is_object(jb)) {
        merge_into(ja, jb);
        out = asn_json_dumps(ja, 0);
    } else {
        out = asn_json_dumps(jb, 0);
    }
    json_decref(ja);
    json_decref(jb);
    sqlite3_result_text(cx, out, -1, free);
}

/* -------------------------------------------------------------- schema */

static int user_version(sqlite3 *db)
{
    sqlite3_stmt *q;
    int v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return v;
}

static int has_column(sqlite3 *db, const char *col)
{
    sqlite3_stmt *q;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('records') WHERE name = ?1", -1, &q, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(q, 1, col, -1, SQLITE_STATIC);
        found = sqlite3_step(q) == SQLITE_ROW;
    }
    sqlite3_finalize(q);
    return found;
}

/* Creates the schema, or brings an older index to SCHEMA_VERSION (in one
 * transaction); a newer index or a database that is not an index is
 * refused. */
static int schema(asn_store *s, const char *path, asn_err *e)
{
    sqlite3 *db = s->db;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return asn_err_set(e, "%s: %s", path, sqlite3_errmsg(db));
    int v = user_version(db), rc = 0;
    char *msg = NULL;
    if (v > SCHEMA_VERSION) {
        rc = asn_err_set(e, "%s: the index has schema version %d, newer than this asn's (%d): use a newer asn", path,
                         v, SCHEMA_VERSION);
    } else if (v < SCHEMA_VERSION) {
        /* a new database, or one of an older asn: the table (kept), the
         * columns it lacks, then the views and indexes anew */
        if (sqlite3_exec(db, TABLE, NULL, NULL, &msg) != SQLITE_OK)
            rc = -1;
        if (!rc && (!has_column(db, "id") || !has_column(db, "kind") || !has_column(db, "json")))
            rc = asn_err_set(e, "%s: a \"records\" table without id, kind and json columns: not an asn index", path);
        for (size_t i = 0; !rc && i < sizeof ADDED_COLUMNS / sizeof *ADDED_COLUMNS; i++)
            if (!has_column(db, ADDED_COLUMNS[i][0])) {
                char sql[200];
                snprintf(sql, sizeof sql, "ALTER TABLE records ADD COLUMN %s %s", ADDED_COLUMNS[i][0],
                         ADDED_COLUMNS[i][1]);
                if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
                    rc = -1;
            }
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", SCHEMA_VERSION);
        if (!rc && (sqlite3_exec(db, VIEWS, NULL, NULL, &msg) != SQLITE_OK ||
                    sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK))
            rc = -1;
        if (rc && msg)
            asn_err_set(e, "%s: %s", path, msg);
        else if (rc && e->msg[0] == 0)
            asn_err_set(e, "%s: %s", path, sqlite3_errmsg(db));
    }
    sqlite3_free(msg);
    if (sqlite3_exec(db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) != SQLITE_OK && !rc)
        rc = asn_err_set(e, "%s: %s", path, sqlite3_errmsg(db));
    return rc ? -1 : 0;
}

asn_store *asn_store_open(const char *path, asn_err *e)
{
    asn_store *s = asn_xcalloc(1, sizeof *s);
    s->path = asn_xstrdup(path);
    if (sqlite3_open(path, &s->db) != SQLITE_OK) {
        asn_err_set(e, "%s: %s", path, s->db ? sqlite3_errmsg(s->db) : "cannot open");
        sqlite3_close(s->db);
        free(s->path);
        free(s);
        return NULL;
    }
    /* a writer holds the database for the whole of its input (one
     * transaction: all or nothing), so another waits that long */
    sqlite3_busy_timeout(s->db, 300000);
    char *msg = NULL;
    e->msg[0] = 0;
    /* switching a new database to WAL takes an exclusive lock, and SQLite
     * does not call the busy handler for it: writers opening one new
     * database at once retry here (for as long as the busy timeout) */
    int rc;
    for (int tries = 0; (rc = sqlite3_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL,
                                           &msg)) == SQLITE_BUSY && tries < 30000; tries++) {
        sqlite3_free(msg);
        msg = NULL;
        sqlite3_sleep(10);
    }
    if (rc) {
        asn_err_set(e, "%s: %s", path, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        asn_store_close(s);
        return NULL;
    }
    if (schema(s, path, e)) {
        asn_store_close(s);
        return NULL;
    }
    if (sqlite3_create_function(s->db, "asn_merge", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_merge, NULL,
                                NULL) ||
        sqlite3_prepare_v2(s->db,
                           "INSERT INTO records(id, kind, prompt_id, heuristic_id, heuristic_name, seed, json)"
                           " VALUES(?1, ?2, ?3, ?4, ?5, ?6, json(?7)) ON CONFLICT(id) DO UPDATE SET"
                           " json = asn_merge(records.json, excluded.json),"
                           " prompt_id = coalesce(excluded.prompt_id, records.prompt_id),"
                           " heuristic_id = coalesce(excluded.heuristic_id, records.heuristic_id),"
                           " heuristic_name = coalesce(excluded.heuristic_name, records.heuristic_name),"
                           " seed = coalesce(excluded.seed, records.seed)",
                           -1, &s->put, NULL) ||
        sqlite3_prepare_v2(s->db, "SELECT 1 FROM records WHERE id = ?1", -1, &s->has, NULL) ||
        sqlite3_prepare_v2(s->db, "SELECT count(*) FROM records WHERE prompt_id = ?1 AND kind = 'candidate'",
                           -1, &s->count, NULL)) {
        asn_err_set(e, "%s: %s", path, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        asn_store_close(s);
        return NULL;
    }
    return s;
}

void asn_store_close(asn_store *s)
{
    if (!s)
        return;
    asn_err e;
    asn_store_flush(s, &e);
    sqlite3_finalize(s->put);
    sqlite3_finalize(s->has);
    sqlite3_finalize(s->count);
    sqlite3_close(s->db);
    free(s->path);
    free(s);
}

int asn_store_flush(asn_store *s, asn_err *e)
{
    if (!s->in_tx)
        return 0;
    s->in_tx = 0;
    s->pending = 0;
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return sql_err(s, e, "commit");
    return 0;
}

static const char *str_field(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int asn_store_put(asn_store *s, const json_t *rec, asn_err *e)
{
    char pair_id[1024];
    const char *id = str_field(rec, "id");
    const char *kind = "prompt";
    const json_t *h = json_object_get(rec, "heuristic");
    if (json_object_get(rec, "chosen") && json_object_get(rec, "rejected")) {
        kind = "pair";
        if (!id) {
            snprintf(pair_id, sizeof pair_id, "pair/%s/%s", str_field(rec, "chosen_id") ? str_field(rec, "chosen_id") : "?",
                     str_field(rec, "rejected_id") ? str_field(rec, "rejected_id") : "?");
            id = pair_id;
        }
    } else if (json_is_object(h) || json_object_get(rec, "generation")) {
        kind = "candidate";
    }
    if (!id)
        return asn_err_set(e, "field \"id\" is missing (a string is required to index a record)");
    if (!s->in_tx) {
        if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
            return sql_err(s, e, "begin");
        s->in_tx = 1;
    }
    char *js = asn_json_dumps(rec, 0);
    const json_t *seed = json_object_get(rec, "seed");
    sqlite3_reset(s->put);
    sqlite3_bind_text(s->put, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s->put, 2, kind, -1, SQLITE_STATIC);
    const char *pid = str_field(rec, "prompt_id");
    if (pid)
        sqlite3_bind_text(s->put, 3, pid, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s->put, 3);
    const char *hid = json_is_object(h) ? str_field(h, "id") : NULL;
    const char *hname = json_is_object(h) ? str_field(h, "name") : NULL;
    if (hid)
        sqlite3_bind_text(s->put, 4, hid, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s->put, 4);
    if (hname)
        sqlite3_bind_text(s->put, 5, hname, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s->put, 5);
    if (json_is_integer(seed))
        sqlite3_bind_int64(s->put, 6, json_integer_value(seed));
    else
        sqlite3_bind_null(s->put, 6);
    sqlite3_bind_text(s->put, 7, js, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(s->put);
    free(js);
    if (rc != SQLITE_DONE)
        return sql_err(s, e, "insert");
    if (++s->pending >= BATCH)
        return asn_store_flush(s, e);
    return 0;
}

int asn_store_merge(asn_store *s, const char *other, asn_err *e)
{
    if (asn_store_flush(s, e))
        return -1;
    sqlite3 *o;
    if (sqlite3_open_v2(other, &o, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        asn_err_set(e, "%s: %s", other, sqlite3_errmsg(o));
        sqlite3_close(o);
        return -1;
    }
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(o, "SELECT json FROM records ORDER BY rowid", -1, &q, NULL) != SQLITE_OK) {
        asn_err_set(e, "%s: not an asn index (%s)", other, sqlite3_errmsg(o));
        sqlite3_close(o);
        return -1;
    }
    int rc = 0;
    while (!rc && sqlite3_step(q) == SQLITE_ROW) {
        json_error_t je;
        json_t *rec = json_loads((const char *)sqlite3_column_text(q, 0), 0, &je);
        if (!rec)
            rc = asn_err_set(e, "%s: a stored record is not JSON: %s", other, je.text);
        else
            rc = asn_store_put(s, rec, e);
        json_decref(rec);
    }
    sqlite3_finalize(q);
    sqlite3_close(o);
    return rc ? -1 : asn_store_flush(s, e);
}

int asn_store_has(asn_store *s, const char *id)
{
    sqlite3_reset(s->has);
    sqlite3_bind_text(s->has, 1, id, -1, SQLITE_TRANSIENT);
    return sqlite3_step(s->has) == SQLITE_ROW;
}

long asn_store_count_prompt(asn_store *s, const char *prompt_id)
{
    sqlite3_reset(s->count);
    sqlite3_bind_text(s->count, 1, prompt_id, -1, SQLITE_TRANSIENT);
    return sqlite3_step(s->count) == SQLITE_ROW ? (long)sqlite3_column_int64(s->count, 0) : 0;
}

struct sqlite3 *asn_store_db(asn_store *s) { return s->db; }
