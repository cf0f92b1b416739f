-- idgen--0.1.sql: the extension's SQL functions (pg/idgen_pg.c).
\echo Use "CREATE EXTENSION idgen" to load this file. \quit

-- A UUIDv7 (RFC 9562 §6.2 method 1): strictly increasing within one backend.
CREATE FUNCTION idgen_uuid7() RETURNS uuid
  AS 'MODULE_PATHNAME', 'idgen_pg_uuid7' LANGUAGE C VOLATILE PARALLEL SAFE;

-- A monotonic ULID, as its 26-character text.
CREATE FUNCTION idgen_ulid() RETURNS text
  AS 'MODULE_PATHNAME', 'idgen_pg_ulid' LANGUAGE C VOLATILE PARALLEL SAFE;

-- The same 128 bits, in the other notation.
CREATE FUNCTION idgen_ulid_to_uuid(text) RETURNS uuid
  AS 'MODULE_PATHNAME', 'idgen_pg_ulid_to_uuid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_uuid_to_ulid(uuid) RETURNS text
  AS 'MODULE_PATHNAME', 'idgen_pg_uuid_to_ulid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- A Snowflake ID read in the layout of the setting idgen.layout: the fields
-- of `idgen decode --json`; its time; the smallest ID of a time (for range
-- scans).  STABLE: they depend on the setting.
CREATE FUNCTION idgen_decode(bigint) RETURNS jsonb
  AS 'MODULE_PATHNAME', 'idgen_pg_decode' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_time(bigint) RETURNS timestamptz
  AS 'MODULE_PATHNAME', 'idgen_pg_time' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_first_id(timestamptz) RETURNS bigint
  AS 'MODULE_PATHNAME', 'idgen_pg_first_id' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- A Snowflake ID from the server's one generator (shared memory; needs
-- shared_preload_libraries = 'idgen'), in the layout idgen.layout had when
-- the server started, its node values from idgen.registry and idgen.node.
-- Strictly increasing across all sessions in real-time order.
CREATE FUNCTION idgen_snowflake() RETURNS bigint
  AS 'MODULE_PATHNAME', 'idgen_pg_snowflake' LANGUAGE C VOLATILE PARALLEL SAFE;

-- n of them, increasing (made 4096 at a time).
CREATE FUNCTION idgen_snowflake_n(integer) RETURNS SETOF bigint
  AS 'MODULE_PATHNAME', 'idgen_pg_snowflake_n' LANGUAGE C VOLATILE STRICT PARALLEL SAFE
  ROWS 1000;
