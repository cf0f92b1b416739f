/*
 * registry_pg_sql.h -- the SQL of the `postgres://` registry, included once,
 * by registry_pg.c (docs/DESIGN.md §11).  Data, not an interface: every name
 * is static.  (Kept apart so that registry_pg.c stays under the house's
 * 1,500 lines; each statement is found by its name.)
 *
 * `@` stands for the registry's schema, quoted ("idgen", or ?schema=NAME):
 * pg_run puts it in before a statement is sent.  Every table, function and
 * trigger is named with it, so no session's search_path can take a
 * statement to another schema's tables (two roles with their own
 * search_path had two registries in one database: 1,369,216 duplicates in
 * 4,000,000 IDs).  No other `@` appears in this SQL: values, pool names
 * with theirs among them, are parameters.  The session's own search_path is
 * pinned to pg_catalog (SQL_SESSION), so a name left unqualified by mistake
 * fails instead of finding a table of some other schema.
 */
#ifndef IDGEN_REGISTRY_PG_SQL_H
#define IDGEN_REGISTRY_PG_SQL_H

/* clang-format off */

/* Unix ms of a timestamptz, or ms of an interval. */
#define MS(x) "floor(extract(epoch FROM " x ") * 1000)::bigint"
#define MSEC(p) "(" p "::bigint * interval '1 millisecond')"
#define HELD "(holder IS NOT NULL AND expires_at > now())"

/* The advisory lock every earlier version made its tables under, taken
 * with pg_try_advisory_xact_lock (exclusive); and this version's own. */
#define KEY_EARLIER "7283920174628301"
#define KEY_MAKE "7283920174628302"

/* Every session: statements end on the server before the client gives up
 * on them (QUERY_TIMEOUT_MS), so no write the client took for failed can
 * land later; a row lock held elsewhere fails fast; commits are durable
 * when they return (durable); READ COMMITTED, whose ON CONFLICT re-checks
 * the newest row version; and only the system catalogs on the search_path
 * (every table of ours is named with its schema), whatever the role's,
 * database's or URI's (options=-csearch_path=...) defaults.  Last, the
 * guard (column 6): KEY_EARLIER, shared, for the life of the session, so
 * that no earlier version can make a registry of its own in this database
 * while this session lasts (its exclusive try fails; it waits 30 s on its
 * side and gives up).  Tried, never waited for: an earlier version making
 * its tables this very moment holds it, and those tables are then seen in
 * the catalogs (SQL_EARLIER); pg_guard tries again later. */
static const char SQL_SESSION[] =
    "SELECT set_config('statement_timeout', '4s', false),"
    " set_config('lock_timeout', '2s', false),"
    " set_config('synchronous_commit', 'on', false),"
    " set_config('default_transaction_isolation', 'read committed', false),"
    " set_config('default_transaction_read_only', 'off', false),"
    " set_config('search_path', 'pg_catalog, pg_temp', false),"
    " pg_try_advisory_lock_shared(" KEY_EARLIER ")";
static const char SQL_GUARD[] = "SELECT pg_try_advisory_lock_shared(" KEY_EARLIER ")";

/* What this version writes on the idgen_nodes it makes or mends: a registry
 * whose table has it is one this version made, reached by its schema's
 * name; one without, an earlier version's, found through a search_path. */
#define OWN "'idgen registry: every statement names its schema, none follows search_path'"

/* The schema is whole: the tables, and the three triggers that keep the
 * floors (a row deleted or changed, idgen_nodes truncated, idgen_pools
 * emptied), each firing in normal sessions ('O'rigin or 'A'lways) and
 * calling a function of the same schema that fixes its own search_path;
 * and idgen_nodes carries OWN.  A trigger dropped or disabled by hand makes
 * the next starter run SQL_SCHEMA again, which puts it back (a missing
 * truncate trigger let a TRUNCATE of idgen_nodes hand out a live holder's
 * worker ID with its floor unraised); so does an earlier version's registry
 * named with ?schema=, whose functions found their tables through the
 * session's search_path.  Column 0: the schema is whole; column 1: whole
 * but for idgen_seqs (a registry made before sequences: leases work,
 * sequences wait for a role that may add the table, pg_create_schema). */
static const char SQL_EXISTS[] =
    "SELECT leases AND to_regclass('@.idgen_seqs') IS NOT NULL, leases FROM (SELECT"
    " to_regclass('@.idgen_nodes') IS NOT NULL AND to_regclass('@.idgen_pools') IS NOT NULL"
    " AND to_regclass('@.idgen_spaces') IS NOT NULL"
    " AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('@.idgen_pools')"
    " AND attname = 'keys' AND NOT attisdropped)"
    " AND (SELECT count(*) FROM pg_trigger t JOIN pg_proc f ON f.oid = t.tgfoid"
    " WHERE t.tgenabled IN ('O', 'A') AND f.pronamespace = to_regnamespace('@')"
    " AND f.proconfig = '{\"search_path=pg_catalog, pg_temp\"}' AND"
    " ((t.tgname IN ('idgen_nodes_removed', 'idgen_nodes_truncated')"
    " AND t.tgrelid = to_regclass('@.idgen_nodes'))"
    " OR (t.tgname = 'idgen_pools_kept' AND t.tgrelid = to_regclass('@.idgen_pools')))) = 3"
    " AND obj_description(to_regclass('@.idgen_nodes'), 'pg_class') = " OWN " AS leases) w";

/* Whether the schema has none of idgen's tables: a registry would be new. */
static const char SQL_NONE_HERE[] =
    "SELECT to_regclass('@.idgen_nodes') IS NULL AND to_regclass('@.idgen_pools') IS NULL"
    " AND to_regclass('@.idgen_leases') IS NULL";

/* The registries in other schemas than $1 and $2, where an earlier one is
 * parked (from the catalogs alone, which every role may read): how many an
 * earlier version made (their idgen_nodes lacks OWN, or only the first
 * version's idgen_leases is there) and their schemas, then how many this
 * one made and theirs. */
static const char SQL_ELSEWHERE[] =
    "SELECT count(*) FILTER (WHERE NOT own), string_agg(nspname, ', ' ORDER BY nspname)"
    " FILTER (WHERE NOT own), count(*) FILTER (WHERE own),"
    " string_agg(nspname, ', ' ORDER BY nspname) FILTER (WHERE own) FROM"
    " (SELECT n.nspname, EXISTS (SELECT 1 FROM pg_class x JOIN pg_description d"
    "  ON d.objoid = x.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0"
    "  WHERE x.relnamespace = n.oid AND x.relname = 'idgen_nodes' AND d.description = " OWN ") AS own"
    "  FROM pg_namespace n WHERE n.nspname <> $1 AND n.nspname <> $2 AND EXISTS (SELECT 1 FROM pg_class c"
    "  WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'p') AND c.relpersistence <> 't'"
    "  AND c.relname IN ('idgen_nodes', 'idgen_pools', 'idgen_leases'))) r";

/* An earlier version's tables in another schema than this registry's
 * (catalogs only, through their indexes: well under a millisecond): a
 * table of idgen's names whose schema's idgen_nodes lacks OWN. */
#define EARLIER_TABLE                                                                           \
  "c.relname IN ('idgen_nodes', 'idgen_pools', 'idgen_leases') AND c.relkind IN ('r', 'p')"       \
  " AND c.relpersistence <> 't' AND c.relnamespace IS DISTINCT FROM to_regnamespace('@')::oid"    \
  " AND NOT EXISTS"                                                                               \
  " (SELECT 1 FROM pg_class x JOIN pg_description d ON d.objoid = x.oid"                          \
  " AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0 WHERE x.relnamespace = c.relnamespace" \
  " AND x.relname = 'idgen_nodes' AND d.description = " OWN ")"
/* How many schemas have such tables: a column of SQL_RENEW. */
#define EARLIER_COUNT "(SELECT count(DISTINCT c.relnamespace) FROM pg_class c WHERE " EARLIER_TABLE ")"
/* Those schemas, by name, and which of the tables each has. */
static const char SQL_EARLIER[] =
    "SELECT n.nspname, bool_or(c.relname = 'idgen_nodes'), bool_or(c.relname = 'idgen_pools'),"
    " bool_or(c.relname = 'idgen_leases') FROM pg_class c JOIN pg_namespace n"
    " ON n.oid = c.relnamespace WHERE " EARLIER_TABLE " GROUP BY n.nspname ORDER BY n.nspname"
    " LIMIT 8";
/* What one such schema holds: pg_earlier joins a part for each table it
 * has (the schema quoted into each) with UNION ALL, and reads its leases
 * live (held, or expired and in quarantine: free_at ahead), the first two
 * by name, and the highest mark or floor it keeps.  Formats for snprintf,
 * sent by pg_run like any statement (no `@` is left in them). */
#define SQL_EARLIER_READ                                                                       \
  "SELECT count(*) FILTER (WHERE l), array_to_string((array_agg(w ORDER BY w) FILTER"          \
  " (WHERE l))[1:2], ', '), coalesce(max(m), 0) FROM (%s) r(l, w, m)"
#define SQL_EARLIER_LEASES /* the schema, the table */                                        \
  "SELECT free_at > now(), CASE WHEN holder IS NOT NULL AND expires_at > now() THEN holder"      \
  " ELSE 'one expired, in quarantine' END, mark_ms FROM %s.%s"
#define SQL_EARLIER_POOLS "SELECT false, NULL::text, floor_ms FROM %s.idgen_pools"

/* The schema, made once under advisory locks (many processes may start
 * at once), taken with pg_try_: a starter never waits for them inside the
 * server, where lock_timeout (2 s) would fail it while a slow server
 * creates the tables for another (pg_create_schema waits on this side).
 * The other statements run in order in the same transaction.  One key for
 * every schema, KEY_MAKE, exclusive among this version's starters: making
 * a registry is rare.  And KEY_EARLIER shared: it waits for an earlier
 * version making its tables (exclusive), so SQL_ELSEWHERE cannot miss them,
 * yet does not wait for the guards of sessions of this version. */
static const char SQL_SCHEMA_LOCK[] = "SELECT pg_try_advisory_xact_lock(" KEY_MAKE ")"
                                      " AND pg_try_advisory_xact_lock_shared(" KEY_EARLIER ")";
static const char *const SQL_SCHEMA[] = {
    /* DROP TRIGGER holds ACCESS EXCLUSIVE on its table to the end of the
     * transaction: a statement waiting for the other table's lock (a
     * pg_dump) must not keep live holders' renewals out for long. */
    "SET LOCAL lock_timeout = '250ms'",
    /* The schema itself if missing: CREATE SCHEMA IF NOT EXISTS alone needs
     * the database's CREATE privilege even when the schema is there (made
     * by an administrator for roles that only use it). */
    "DO $d$ BEGIN IF to_regnamespace('@') IS NULL THEN CREATE SCHEMA @; END IF; END $d$",
    "CREATE TABLE IF NOT EXISTS @.idgen_pools ("
    " pool text PRIMARY KEY,"
    " layout text NOT NULL,"
    " floor_ms bigint NOT NULL DEFAULT 0)",
    /* The OR of the keys of rows that left: with the floor, what a tuple
     * whose row is gone may have issued (its node bits above the time field
     * too), for an ID space that retires the pool (space.c). */
    "ALTER TABLE @.idgen_pools ADD COLUMN IF NOT EXISTS keys bigint NOT NULL DEFAULT 0",
    /* One row per ID space (space.c): its record, and a version that
     * every claim compares under FOR SHARE, so that a layout joining
     * (FOR UPDATE) and a claim of another layout are never both done. */
    "CREATE TABLE IF NOT EXISTS @.idgen_spaces ("
    " space text PRIMARY KEY,"
    " version bigint NOT NULL DEFAULT 0,"
    " state text NOT NULL DEFAULT '')",
    /* One row per sequence counter (seq.c): its record, opaque here, and
     * a version that every store compares (a conditional write). */
    "CREATE TABLE IF NOT EXISTS @.idgen_seqs ("
    " space text NOT NULL,"
    " key text NOT NULL,"
    " version bigint NOT NULL,"
    " record text NOT NULL,"
    " PRIMARY KEY (space, key))",
    "CREATE TABLE IF NOT EXISTS @.idgen_nodes ("
    " pool text NOT NULL,"
    " node bigint NOT NULL,"
    " holder text,"
    " generation bigint NOT NULL,"
    " expires_at timestamptz NOT NULL,"
    " free_at timestamptz NOT NULL,"
    " mark_ms bigint NOT NULL,"
    " PRIMARY KEY (pool, node))",
    /* A row that leaves (deleted, truncated, or its key changed by hand)
     * raises its pool's floor to its mark: a later row of that tuple starts
     * above every ID issued under it. */
    "CREATE OR REPLACE FUNCTION @.idgen_nodes_removed() RETURNS trigger LANGUAGE plpgsql"
    " SET search_path = pg_catalog, pg_temp AS $f$"
    " BEGIN"
    "  IF TG_OP = 'TRUNCATE' THEN"
    "   INSERT INTO @.idgen_pools AS p (pool, layout, floor_ms, keys)"
    "    SELECT pool, '', max(mark_ms), bit_or(node) FROM @.idgen_nodes GROUP BY pool"
    "    ON CONFLICT (pool) DO UPDATE SET floor_ms = greatest(p.floor_ms, excluded.floor_ms),"
    "    keys = p.keys | excluded.keys;"
    "   RETURN NULL;"
    "  END IF;"
    "  IF TG_OP = 'UPDATE' AND NEW.pool = OLD.pool AND NEW.node = OLD.node THEN"
    "   RETURN NEW;"
    "  END IF;"
    "  INSERT INTO @.idgen_pools AS p (pool, layout, floor_ms, keys)"
    "   VALUES (OLD.pool, '', OLD.mark_ms, OLD.node)"
    "   ON CONFLICT (pool) DO UPDATE SET floor_ms = greatest(p.floor_ms, excluded.floor_ms),"
    "   keys = p.keys | excluded.keys;"
    "  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;"
    "  RETURN NEW;"
    " END $f$",
    "CREATE OR REPLACE FUNCTION @.idgen_pools_kept() RETURNS trigger LANGUAGE plpgsql"
    " SET search_path = pg_catalog, pg_temp AS $f$"
    " BEGIN"
    "  RAISE EXCEPTION 'idgen_pools keeps the floors of deleted tuples: its rows are never"
    " deleted (drop both idgen tables to start a registry afresh)';"
    " END $f$",
    "DROP TRIGGER IF EXISTS idgen_nodes_removed ON @.idgen_nodes",
    "CREATE TRIGGER idgen_nodes_removed BEFORE DELETE OR UPDATE ON @.idgen_nodes"
    " FOR EACH ROW EXECUTE FUNCTION @.idgen_nodes_removed()",
    "DROP TRIGGER IF EXISTS idgen_nodes_truncated ON @.idgen_nodes",
    "CREATE TRIGGER idgen_nodes_truncated BEFORE TRUNCATE ON @.idgen_nodes"
    " FOR EACH STATEMENT EXECUTE FUNCTION @.idgen_nodes_removed()",
    "DROP TRIGGER IF EXISTS idgen_pools_kept ON @.idgen_pools",
    "CREATE TRIGGER idgen_pools_kept BEFORE DELETE OR TRUNCATE ON @.idgen_pools"
    " FOR EACH STATEMENT EXECUTE FUNCTION @.idgen_pools_kept()",
    "COMMENT ON TABLE @.idgen_nodes IS " OWN,
    NULL};

static const char SQL_CHECK[] =
    "SELECT n.pool, n.node, n.holder, n.generation, n.expires_at, n.free_at, n.mark_ms,"
    " p.layout, p.floor_ms, p.keys, s.space, s.version, s.state"
    " FROM @.idgen_nodes n, @.idgen_pools p, @.idgen_spaces s LIMIT 0";

/* ID spaces (space.c).  $1 the space's name. */
static const char SQL_SPACE_MAKE[] =
    "INSERT INTO @.idgen_spaces (space) VALUES ($1) ON CONFLICT (space) DO NOTHING";
static const char SQL_SPACE_GET[] = "SELECT version, state FROM @.idgen_spaces WHERE space = $1";
static const char SQL_SPACE_LOCK[] =
    "SELECT version, state FROM @.idgen_spaces WHERE space = $1 FOR UPDATE";
static const char SQL_SPACE_SET[] =
    "UPDATE @.idgen_spaces SET version = version + 1, state = $2 WHERE space = $1"
    " RETURNING version";
/* The pools of the space whose pools are named with prefix $1 ('' or
 * 'spaces/NAME/'): a record made up for a space that has none yet. */
static const char SQL_SPACE_POOLS[] =
    "SELECT substr(pool, length($1) + 1) FROM @.idgen_pools"
    " WHERE left(pool, length($1)) = $1 AND substr(pool, length($1) + 1) LIKE 'epoch=%'"
    " ORDER BY pool";
/* $1 a pool (as stored) a joining layout retires: every row a holder might
 * still renew or mark is fenced first, in the same transaction, so that
 * the count that follows cannot miss a late renewal (it waits for these
 * row locks, then fails on the generation). */
static const char SQL_POOL_FENCE[] =
    "UPDATE @.idgen_nodes SET generation = generation + 1, holder = NULL"
    " WHERE pool = $1 AND holder IS NOT NULL";
/* Its tuples held or in quarantine: how many, and the first three. */
static const char SQL_POOL_LIVE[] =
    "SELECT count(*) OVER (), coalesce(holder, '(freed)'), node,"
    " " MS("free_at - now()") " FROM @.idgen_nodes"
    " WHERE pool = $1 AND free_at > now() ORDER BY node LIMIT 3";
/* The highest mark any of its tuples ever had, and the OR of their keys
 * (of rows deleted by hand too: the trigger keeps them in idgen_pools). */
static const char SQL_POOL_MAX[] =
    "SELECT greatest(coalesce((SELECT max(mark_ms) FROM @.idgen_nodes WHERE pool = $1), 0),"
    " coalesce((SELECT floor_ms FROM @.idgen_pools WHERE pool = $1), 0)),"
    " coalesce((SELECT bit_or(node) FROM @.idgen_nodes WHERE pool = $1), 0)"
    " | coalesce((SELECT keys FROM @.idgen_pools WHERE pool = $1), 0)";

/* $1 pool, $2 layout, $3 a floor: the pool's row, made on first use.  DO
 * NOTHING, not DO UPDATE ... WHERE: that locks the existing row even when
 * its condition is false, and so would queue behind every claim's FOR SHARE
 * (32 processes starting at once timed out on it). */
static const char SQL_POOL[] =
    "INSERT INTO @.idgen_pools (pool, layout, floor_ms) VALUES ($1, $2, $3::bigint)"
    " ON CONFLICT (pool) DO NOTHING";

/* The floor raised to $3 if it is lower (an earlier version's marks): the
 * row is locked only if its floor, as this statement's snapshot sees it, is
 * lower, so once one process has raised it the others pass without a wait. */
static const char SQL_POOL_RAISE[] =
    "UPDATE @.idgen_pools SET floor_ms = $3::bigint WHERE pool = $1 AND floor_ms < $3::bigint"
    " AND $2::text IS NOT NULL";

/* The first version's table (pools named by field and values, which this
 * version cannot match to its tuples): its highest mark, and how many of
 * its leases are held. */
static const char SQL_LEGACY_EXISTS[] = "SELECT to_regclass('@.idgen_leases') IS NOT NULL";
static const char SQL_LEGACY[] =
    "SELECT coalesce(max(mark_ms), 0), count(*) FILTER (WHERE holder IS NOT NULL"
    " AND expires_at > now()) FROM @.idgen_leases";

static const char SQL_FLOOR[] = "SELECT floor_ms FROM @.idgen_pools WHERE pool = $1";

/* The value v of the leased field in a row's key, and the key of value x;
 * $5 the other fields' bits, $6 the mask that clears the leased field, $7
 * its shift, $8 its largest value. */
#define V(k) "((" k " >> $7::int) & $8::bigint)"
#define KEY(x) "($5::bigint | ((" x ") << $7::int))"
#define SAME "& $6::bigint = $5::bigint"

/* Up to 16 candidates from value $2 on, lowest first, among $3 values of
 * pool $1: free rows whose mark is behind the wall clock $4, and, if $9,
 * the first value of each run of never-leased ones, found from the rows (no
 * series over the pool). */
static const char SQL_CANDIDATES[] =
    "SELECT v FROM ("
    " (SELECT " V("node") " AS v FROM @.idgen_nodes WHERE pool = $1 AND node " SAME
    "  AND " V("node") " >= $2::bigint AND free_at <= now() AND mark_ms < $4::bigint"
    "  ORDER BY 1 LIMIT 16)"
    " UNION ALL"
    " (SELECT $2::bigint WHERE $9::boolean AND $2::bigint < $3::bigint AND NOT EXISTS"
    "  (SELECT 1 FROM @.idgen_nodes WHERE pool = $1 AND node = " KEY("$2::bigint") "))"
    " UNION ALL"
    " (SELECT " V("a.node") " + 1 FROM @.idgen_nodes a WHERE $9::boolean AND a.pool = $1"
    "  AND a.node " SAME " AND " V("a.node") " >= $2::bigint AND " V("a.node") " + 1 < $3::bigint"
    "  AND NOT EXISTS (SELECT 1 FROM @.idgen_nodes b WHERE b.pool = $1"
    "  AND b.node = " KEY(V("a.node") " + 1") ") ORDER BY 1 LIMIT 16)"
    ") c ORDER BY v LIMIT 16";

/* When no candidate is left: how many values have rows, the free one with
 * the lowest mark, and how many are in quarantine, the first back in how
 * many ms.  (Same parameters; $2, $4 and $9 unused but typed.) */
static const char SQL_BEST[] =
    "SELECT q.used, b.v, b.mark_ms, q.quarantined, q.next_ms FROM"
    " (SELECT count(*) AS used,"
    "  count(*) FILTER (WHERE free_at > now() AND NOT " HELD ") AS quarantined,"
    "  " MS("min(free_at) FILTER (WHERE free_at > now() AND NOT " HELD ") - now()") " AS next_ms"
    "  FROM @.idgen_nodes WHERE pool = $1 AND node " SAME ") q"
    " LEFT JOIN LATERAL (SELECT " V("node") " AS v, mark_ms FROM @.idgen_nodes WHERE pool = $1"
    "  AND node " SAME " AND free_at <= now() ORDER BY mark_ms, node LIMIT 1) b ON true"
    " WHERE $2::bigint IS NOT NULL AND $3::bigint IS NOT NULL AND $4::bigint IS NOT NULL"
    " AND $9::boolean IS NOT NULL";

/* $1 pool, $2 node, $3 holder, $4 ttl ms, $5 quarantine ms, $6 wall clock,
 * $7 the space, $8 its version as the acquirer read it.
 * A new row starts at the pool's floor, read FOR SHARE: a delete's trigger
 * that raised it commits first.  The space's row is read FOR SHARE too,
 * and nothing is claimed if its version moved: a layout that joined
 * meanwhile (FOR UPDATE) may have retired this one's pool. */
static const char SQL_CLAIM[] =
    "WITH p AS (SELECT floor_ms FROM @.idgen_pools WHERE pool = $1 FOR SHARE),"
    " s AS (SELECT version FROM @.idgen_spaces WHERE space = $7 FOR SHARE)"
    " INSERT INTO @.idgen_nodes AS t (pool, node, holder, generation, expires_at, free_at,"
    " mark_ms) SELECT $1, $2::bigint, $3, 1, now() + " MSEC("$4") ","
    " now() + " MSEC("$4") " + " MSEC("$5") ", coalesce((SELECT floor_ms FROM p), 0)"
    " WHERE (SELECT version FROM s) = $8::bigint"
    " ON CONFLICT (pool, node) DO UPDATE SET holder = excluded.holder,"
    " generation = t.generation + 1, expires_at = excluded.expires_at, free_at = excluded.free_at"
    " WHERE t.free_at <= now() AND t.mark_ms < $6::bigint"
    " RETURNING generation, mark_ms, " MS("expires_at") ", " MS("expires_at - now()");

/* $1 pool, $2 node, $3 generation, $4 holder, then: */
/* Expiry and the mark only move forward: a late statement cannot undo a
 * later one (the final mark, which may go lower, is SQL_FINAL_MARK). */
/* With, last, how many other schemas hold an earlier version's registry
 * (EARLIER_COUNT; 0 but for the rare database that has one, read then). */
static const char SQL_RENEW[] = /* $5 ttl ms, $6 quarantine ms */
    "UPDATE @.idgen_nodes SET expires_at = greatest(expires_at, now() + " MSEC("$5") "),"
    " free_at = greatest(free_at, now() + " MSEC("$5") " + " MSEC("$6") ")"
    " WHERE pool = $1 AND node = $2::bigint AND generation = $3::bigint AND holder = $4"
    " RETURNING " MS("expires_at") ", " MS("expires_at - now()") ", " EARLIER_COUNT;

/* Takes grant ($3, $4) over for holder $5 (idgen_registry_adopt): only while
 * it is held (its holder $4, its expiry ahead: not released, freed by hand
 * or expired) and not granted again, renewed as SQL_RENEW does.  Not to be
 * sent again (a second one finds holder $5). */
static const char SQL_ADOPT[] = /* $5 the new holder, $6 ttl ms, $7 quarantine ms */
    "UPDATE @.idgen_nodes SET holder = $5,"
    " expires_at = greatest(expires_at, now() + " MSEC("$6") "),"
    " free_at = greatest(free_at, now() + " MSEC("$6") " + " MSEC("$7") ")"
    " WHERE pool = $1 AND node = $2::bigint AND generation = $3::bigint"
    " AND holder = $4 AND expires_at > now()"
    " RETURNING mark_ms, " MS("expires_at") ", " MS("expires_at - now()");

static const char SQL_MARK[] = /* $5 mark ms */
    "UPDATE @.idgen_nodes SET mark_ms = greatest(mark_ms, $5::bigint) WHERE pool = $1"
    " AND node = $2::bigint AND generation = $3::bigint AND holder = $4 RETURNING 1";

static const char SQL_FINAL_MARK[] = /* $5 mark ms: the generator has stopped */
    "UPDATE @.idgen_nodes SET mark_ms = $5::bigint WHERE pool = $1 AND node = $2::bigint"
    " AND generation = $3::bigint AND holder = $4 RETURNING 1";

static const char SQL_RELEASE[] =
    "UPDATE @.idgen_nodes SET holder = NULL, expires_at = now(), free_at = now()"
    " WHERE pool = $1 AND node = $2::bigint AND generation = $3::bigint AND holder = $4";

/* One row as list and free see it: generation, holder ('' if none), state
 * (0 free, 1 held, 2 quarantine), ms until it expires (held) or is free
 * again (quarantine; 0 when free), and the mark. */
#define ROW_COLS                                                                  \
  "generation, coalesce(holder, ''),"                                             \
  " CASE WHEN " HELD " THEN 1 WHEN free_at > now() THEN 2 ELSE 0 END,"            \
  " greatest(0, " MS("CASE WHEN " HELD " THEN expires_at ELSE free_at END - now()") "),"  \
  " mark_ms"

static const char SQL_ROW[] =
    "SELECT " ROW_COLS " FROM @.idgen_nodes WHERE pool = $1 AND node = $2::bigint";

static const char SQL_POOL_LAYOUT[] = "SELECT layout FROM @.idgen_pools WHERE pool = $1";

/* A page of rows after ($1, $2), with their pool's layout and floor. */
static const char SQL_LIST[] =
    "SELECT n.pool, n.node, coalesce(p.layout, ''), coalesce(p.floor_ms, 0), " ROW_COLS
    " FROM @.idgen_nodes n LEFT JOIN @.idgen_pools p ON p.pool = n.pool"
    " WHERE (n.pool, n.node) > ($1, $2::bigint) ORDER BY n.pool, n.node LIMIT " LIST_PAGE;

/* $3 generation as seen, $4 force: fences the tuple and starts its quarantine. */
static const char SQL_FREE[] =
    "UPDATE @.idgen_nodes SET generation = generation + 1, holder = NULL,"
    " free_at = greatest(free_at, now() + (free_at - expires_at)),"
    " expires_at = least(expires_at, now())"
    " WHERE pool = $1 AND node = $2::bigint AND generation = $3::bigint"
    " AND ($4::boolean OR NOT " HELD ")"
    " RETURNING generation, " MS("free_at - now()");

/* Every space: those with a row, and those with pools but none yet. */
static const char SQL_SPACES[] =
    "SELECT space FROM @.idgen_spaces UNION SELECT CASE WHEN pool LIKE 'spaces/%' THEN"
    " split_part(pool, '/', 2) ELSE 'default' END FROM @.idgen_pools"
    " ORDER BY 1";

/* Sequence counters (seq.c): $1 the space, $2 the key.  Each store is one
 * conditional write: the record is replaced only at the version its
 * writer read ($4), or made only if there is none; no row back means the
 * version moved (or the row appeared) meanwhile. */
static const char SQL_SEQ_LOAD[] =
    "SELECT version, record FROM @.idgen_seqs WHERE space = $1 AND key = $2";
static const char SQL_SEQ_MAKE[] = /* $3 the record */
    "INSERT INTO @.idgen_seqs (space, key, version, record) VALUES ($1, $2, 1, $3)"
    " ON CONFLICT (space, key) DO NOTHING RETURNING version";
static const char SQL_SEQ_STORE[] = /* $3 the record, $4 the version read */
    "UPDATE @.idgen_seqs SET record = $3, version = version + 1"
    " WHERE space = $1 AND key = $2 AND version = $4::bigint RETURNING version";
/* A page of counters after ($2, $3), of space $1 (NULL: every space), in
 * byte order (as file: and etcd:// list them). */
static const char SQL_SEQ_KEYS[] =
    "SELECT space, key FROM @.idgen_seqs WHERE ($1::text IS NULL OR space = $1)"
    " AND (space COLLATE \"C\", key COLLATE \"C\") > ($2, $3)"
    " ORDER BY space COLLATE \"C\", key COLLATE \"C\" LIMIT " LIST_PAGE;

/* clang-format on */

#endif
