-- pg/sql/idgen.sql: the extension's functions against known answers
-- (../shared vectors: the ULID spec, RFC 9562, the Snowflake design document).
CREATE EXTENSION idgen;

-- ULID <-> UUID: the same 128 bits (ULID spec, oklog/ulid's vector)
SELECT idgen_ulid_to_uuid('01ARYZ6S410000000000000000');
SELECT idgen_uuid_to_ulid('01563df3-6481-0000-0000-000000000000');
SELECT idgen_uuid_to_ulid('017f22e2-79b0-7cc3-98c4-dc0c0c07398f');  -- RFC 9562 A.6
SELECT idgen_ulid_to_uuid(idgen_uuid_to_ulid('017f22e2-79b0-7cc3-98c4-dc0c0c07398f'));
SELECT idgen_ulid_to_uuid('7ZZZZZZZZZZZZZZZZZZZZZZZZZ');
-- malformed: an ERROR naming the problem, never a crash
SELECT idgen_ulid_to_uuid('01ARYZ6S41000000000000000');
SELECT idgen_ulid_to_uuid('01ARYZ6S41000000000000000U');
SELECT idgen_ulid_to_uuid('80000000000000000000000000');
SELECT idgen_ulid_to_uuid('');
SELECT idgen_ulid_to_uuid(NULL) IS NULL AS strict;

-- Generators: the right version and time; strictly increasing in a backend
SELECT substr(idgen_uuid7()::text, 15, 1) AS version,
       substr(idgen_uuid7()::text, 20, 1) IN ('8', '9', 'a', 'b') AS rfc_variant;
SELECT length(idgen_ulid()) AS ulid_length;
SELECT abs(('x' || substr(replace(idgen_uuid7()::text, '-', ''), 1, 12))::bit(48)::bigint
           - (extract(epoch FROM clock_timestamp()) * 1000)::bigint) < 5000 AS uuid7_time_is_now;
WITH s AS (SELECT n, idgen_uuid7() AS u, idgen_ulid() AS l FROM generate_series(1, 20000) n),
     d AS (SELECT u > lag(u) OVER (ORDER BY n) AS uu, l > lag(l) OVER (ORDER BY n) AS ll FROM s)
SELECT count(*) AS n, bool_and(uu) AS uuid7_increasing, bool_and(ll) AS ulid_increasing
  FROM d WHERE uu IS NOT NULL;
SELECT idgen_uuid_to_ulid(u) = l AS same_bits
  FROM (SELECT idgen_ulid_to_uuid(l) AS u, l FROM (SELECT idgen_ulid() AS l) x) y;

-- Snowflake IDs in idgen.layout (twitter by default): the design document's
-- worked example, datacenter 17, worker 25, 2017-09-20T13:43:08.849Z
SHOW idgen.layout;
SELECT idgen_decode(910499571847892992);
SELECT idgen_time(910499571847892992);
SELECT idgen_first_id('2017-09-20 13:43:08.849+00');
SELECT idgen_first_id('2017-09-20 13:43:08.849999+00') = idgen_first_id('2017-09-20 13:43:08.849+00')
  AS same_millisecond;
SELECT idgen_first_id('2017-09-20 13:43:08.849+00') <= 910499571847892992
   AND idgen_first_id('2017-09-20 13:43:08.850+00') > 910499571847892992 AS brackets_the_id;
SELECT idgen_time(idgen_first_id('2024-02-29 12:00:00.123+00'));
-- before the epoch, infinite, bits above the layout
SELECT idgen_first_id('2000-01-01 00:00:00+00');
SELECT idgen_first_id('infinity');
SELECT idgen_time(-1);
SELECT idgen_decode(-1);

-- Another layout: a preset, then a spec; a bad one refused, naming the problem
SET idgen.layout = 'sonyflake';
SELECT idgen_decode(idgen_first_id('2024-01-01 00:00:00+00'));
SET idgen.layout = 'time:41@1ms,node:10,sequence:12,epoch=0';
SELECT idgen_decode(7173916012573569024);  -- design document 000: node 755
SET idgen.layout = 'time:45@1s,sequence:18,epoch=0';  -- ticks of a second: 1.1 million years
SELECT idgen_time(262144);
SELECT idgen_time(9223372036854775807);
SET idgen.layout = 'time:41,worker:10,worker:12';
SET idgen.layout = 'nonesuch';
SHOW idgen.layout;
RESET idgen.layout;
SHOW idgen.layout;

-- idgen_snowflake() without shared_preload_libraries = 'idgen' (as here):
-- a clear error, with what to change
SELECT idgen_snowflake();
SELECT * FROM idgen_snowflake_n(3);
-- a negative count is refused before anything else
SELECT * FROM idgen_snowflake_n(-1);
\set VERBOSITY sqlstate
SELECT idgen_snowflake();  -- object_not_in_prerequisite_state
SELECT * FROM idgen_snowflake_n(-1);  -- invalid_parameter_value
\set VERBOSITY default
