-- pg/sql/idgen_public.sql: public IDs with fixed test keys, written into
-- the data directory by adminpack's pg_file_write (the server's umask makes
-- them mode 0600; relative paths in idgen.public_keys are the data
-- directory's).  The values are libidgen's for that key
-- (tests/pg_public_test.sh compares the functions with the library).
SET client_min_messages = error;
CREATE EXTENSION IF NOT EXISTS idgen;
CREATE EXTENSION IF NOT EXISTS adminpack;
SELECT pg_file_unlink(f) IS NOT NULL AS removed
  FROM unnest(ARRAY['idgen_regress.key', 'idgen_regress2.key', 'idgen_loose.key']) f;
RESET client_min_messages;
SELECT pg_file_write('idgen_regress.key',
  E'# a test key\nv1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n', false);

-- No key named yet
SELECT idgen_public(1, 'regress', 1);
SET idgen.public_keys = 'regress=idgen_regress.key';

-- Snowflake IDs: twitter (63 bits, the default), js53, a 64-bit layout
SELECT idgen_public(910499571847892992, 'regress', 1) AS twitter;
SELECT idgen_unpublic(idgen_public(910499571847892992, 'regress', 1), 'regress', 1);
SELECT idgen_public(0, 'regress', 1) AS zero, idgen_public(1, 'regress', 1) AS one;
SELECT idgen_public(4503599627370495, 'regress', 1, 53) AS js53;
SELECT idgen_public(-1, 'regress', 1, 64) AS top_of_64_bits;
SELECT idgen_unpublic(idgen_public(-1, 'regress', 1, 64), 'regress', 1, 64);
SELECT count(DISTINCT p) AS all_of_20_bits, min(p), max(p)
  FROM (SELECT idgen_public(g, 'regress', 1, 20) AS p FROM generate_series(0, 1048575) g) s;
SELECT idgen_public(1, 'regress', 1, 19) AS too_few_bits;

-- A generated column
CREATE TABLE pub_users (id bigint PRIMARY KEY,
  pub bigint GENERATED ALWAYS AS (idgen_public(id, 'regress', 1)) STORED);
INSERT INTO pub_users (id) VALUES (910499571847892992), (910499571847892993);
SELECT id, pub, idgen_unpublic(pub, 'regress', 1) = id AS back FROM pub_users ORDER BY id;

-- UUIDv7 <-> UUIDv4 (RFC 9562 A.6's UUIDv7)
SELECT idgen_public('017f22e2-79b0-7cc3-98c4-dc0c0c07398f'::uuid, 'regress', 1);
SELECT idgen_unpublic(idgen_public('017f22e2-79b0-7cc3-98c4-dc0c0c07398f'::uuid, 'regress', 1),
                      'regress', 1);

-- Text forms: version 1 is '0'; with and without a prefix
SELECT idgen_public_text(910499571847892992, 'regress');
SELECT idgen_public_text(910499571847892992, 'regress', 'user');
SELECT idgen_unpublic_text(idgen_public_text(910499571847892992, 'regress', 'user'), 'regress', 'user');
SELECT idgen_public_text('017f22e2-79b0-7cc3-98c4-dc0c0c07398f'::uuid, 'regress', 'user');
SELECT idgen_unpublic_text_uuid(
  idgen_public_text('017f22e2-79b0-7cc3-98c4-dc0c0c07398f'::uuid, 'regress', 'user'), 'regress', 'user');

-- ULIDs (text): 26 characters of permuted bits, and text forms
SELECT idgen_public_ulid('01ARYZ6S410000000000000000', 'regress', 1);
SELECT idgen_unpublic_ulid(idgen_public_ulid('01ARYZ6S410000000000000000', 'regress', 1), 'regress', 1);
SELECT idgen_public_ulid_text('01ARYZ6S410000000000000000', 'regress', 'user');
SELECT idgen_unpublic_ulid_text(idgen_public_ulid_text('01ARYZ6S410000000000000000', 'regress', 'user'),
                                'regress', 'user');
SELECT idgen_public_ulid('01ARYZ6S41000000000000000U', 'regress', 1);
-- a UUIDv7's text read as a ULID's: the kind is in the tweak
SELECT idgen_unpublic_ulid_text(
  idgen_public_text('017f22e2-79b0-7cc3-98c4-dc0c0c07398f'::uuid, 'regress', 'user'), 'regress', 'user');

-- Errors: each a message, never a wrong ID
SELECT idgen_public(1, 'nonesuch', 1);
SELECT idgen_public(1, 'regress', 0);
SELECT idgen_public(1, 'regress', 2);
SELECT idgen_public(1, 'regress', 1, 65);
SELECT idgen_public(-1, 'regress', 1);
SELECT idgen_public(9007199254740992, 'regress', 1, 53);
SELECT idgen_public('01563df3-6481-4000-8000-000000000000'::uuid, 'regress', 1);  -- a v4
SELECT idgen_unpublic('017f22e2-79b0-7cc3-98c4-dc0c0c07398f'::uuid, 'regress', 1);  -- a v7
SELECT idgen_unpublic_text(idgen_public_text(910499571847892992, 'regress', 'user'), 'regress', 'order');
SELECT idgen_unpublic_text(idgen_public_text(12345, 'regress', 'user', 53), 'regress', 'user');  -- 63 bits
SELECT idgen_unpublic_text('user_0' || repeat('z', 16), 'regress', 'user');
SELECT idgen_unpublic_text('user_0zzz', 'regress', 'user');
SELECT idgen_unpublic_text('user_9' || repeat('0', 16), 'regress', 'user');  -- version 10
SELECT idgen_public_text(1, 'regress', 'User');
SELECT idgen_public(NULL::bigint, 'regress', 1) IS NULL AS strict;
\set VERBOSITY sqlstate
SELECT idgen_unpublic_text('user_0zzz', 'regress', 'user');  -- invalid_text_representation
SELECT idgen_unpublic_text('user_0' || repeat('z', 16), 'regress', 'user');  -- invalid_parameter_value
\set VERBOSITY default

-- A second key version: texts take it, read both; integer forms keep theirs
SELECT pg_file_write('idgen_regress2.key',
  E'v1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n# added\n'
  'v2 1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100\n', false);
SET idgen.public_keys = 'regress=idgen_regress2.key';
SELECT idgen_public_text(910499571847892992, 'regress', 'user');
SELECT idgen_unpublic_text(idgen_public_text(910499571847892992, 'regress', 'user'), 'regress', 'user');
SELECT idgen_unpublic_text(t, 'regress', 'user')
  FROM (SELECT 'user_0' || substr(idgen_public_text(910499571847892992, 'regress', 'user'), 7) t) x;
SELECT idgen_public(910499571847892992, 'regress', 1) AS still_v1,
       idgen_public(910499571847892992, 'regress', 2) AS v2;
INSERT INTO pub_users (id) VALUES (910499571847892994);
SELECT id, pub FROM pub_users ORDER BY id;

-- A key file others may read (COPY writes mode 0644): refused, saying what to do
DO $$ BEGIN
  EXECUTE format('COPY (SELECT %L) TO %L',
    'v1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f',
    current_setting('data_directory') || '/idgen_loose.key');
END $$;
SET idgen.public_keys = 'regress=idgen_regress2.key, loose=idgen_loose.key';
SELECT idgen_public(1, 'loose', 1);

-- The setting: its syntax checked when set
SET idgen.public_keys = 'regress';
SET idgen.public_keys = 'a=x.key, a=y.key';
SET idgen.public_keys = 'a b=x.key';
SET idgen.public_keys = '';
SELECT idgen_public(1, 'regress', 1);
RESET idgen.public_keys;
DROP TABLE pub_users;
SELECT pg_file_unlink(f)
  FROM unnest(ARRAY['idgen_regress.key', 'idgen_regress2.key', 'idgen_loose.key']) f;
