-- idgen--0.1--0.2.sql: public IDs (pg/idgen_public.c).  CREATE EXTENSION
-- idgen runs idgen--0.1.sql and then this; ALTER EXTENSION idgen UPDATE
-- runs this alone.
\echo Use "ALTER EXTENSION idgen UPDATE" to load this file. \quit

-- A keyed, reversible form of an ID, with the key named `key` in the
-- setting idgen.public_keys (key files; a superuser sets it).  IMMUTABLE, so
-- that they can compute a generated column or an index: that holds as long
-- as a key version, once used, is never changed or removed from its file
-- (add versions; never edit one).  So the integer forms take the key
-- version they use: adding a version changes nothing they compute.

-- A Snowflake ID of a layout of `bits` bits (63: twitter) to a public one of
-- as many bits, and back.
CREATE FUNCTION idgen_public(id bigint, key text, version integer, bits integer DEFAULT 63)
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'idgen_pg_public' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_unpublic(pub bigint, key text, version integer, bits integer DEFAULT 63)
  RETURNS bigint
  AS 'MODULE_PATHNAME', 'idgen_pg_unpublic' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- A UUIDv7 to a UUIDv4 (its 122 other bits permuted), and back.
CREATE FUNCTION idgen_public(id uuid, key text, version integer) RETURNS uuid
  AS 'MODULE_PATHNAME', 'idgen_pg_public_uuid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_unpublic(pub uuid, key text, version integer) RETURNS uuid
  AS 'MODULE_PATHNAME', 'idgen_pg_unpublic_uuid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Text forms, [prefix_]V BODY: made with the key file's newest version
-- (named by V), read back with whichever version V names; a text altered,
-- of another prefix or key, or of another kind is an error, not a wrong ID.
-- STABLE, not IMMUTABLE: adding a key version changes the text they make.
-- Store the integer (or the ID itself) and make the text when showing it.
CREATE FUNCTION idgen_public_text(id bigint, key text, prefix text DEFAULT '',
                                  bits integer DEFAULT 63) RETURNS text
  AS 'MODULE_PATHNAME', 'idgen_pg_public_text' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_unpublic_text(pub text, key text, prefix text DEFAULT '',
                                    bits integer DEFAULT 63) RETURNS bigint
  AS 'MODULE_PATHNAME', 'idgen_pg_unpublic_text' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_public_text(id uuid, key text, prefix text DEFAULT '') RETURNS text
  AS 'MODULE_PATHNAME', 'idgen_pg_public_text_uuid' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_unpublic_text_uuid(pub text, key text, prefix text DEFAULT '')
  RETURNS uuid
  AS 'MODULE_PATHNAME', 'idgen_pg_unpublic_text_uuid' LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- A ULID (text, as idgen_ulid() makes it) to 26 characters of permuted bits
-- (ULID-shaped, its "time" noise), and back; and its text forms (29
-- characters after V).  Own names: a ULID is text, which an overload would
-- confuse with an unknown literal of the others.
CREATE FUNCTION idgen_public_ulid(id text, key text, version integer) RETURNS text
  AS 'MODULE_PATHNAME', 'idgen_pg_public_ulid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_unpublic_ulid(pub text, key text, version integer) RETURNS text
  AS 'MODULE_PATHNAME', 'idgen_pg_unpublic_ulid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_public_ulid_text(id text, key text, prefix text DEFAULT '') RETURNS text
  AS 'MODULE_PATHNAME', 'idgen_pg_public_ulid_text' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION idgen_unpublic_ulid_text(pub text, key text, prefix text DEFAULT '')
  RETURNS text
  AS 'MODULE_PATHNAME', 'idgen_pg_unpublic_ulid_text' LANGUAGE C STABLE STRICT PARALLEL SAFE;
