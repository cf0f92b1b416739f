// idgen for Node.js as an ES module: index.js's exports, each named (Node's
// detection of CommonJS exports cannot see them: they are the addon's
// values).  test/exports.test.mjs and tests/npm_package_test.py check that
// this list is index.js's whole list.
import idgen from './index.js';

export const {
  Snowflake,
  Sequence,
  Public,
  UlidGenerator,
  Uuid7Generator,
  ulid,
  ulidToUuid,
  uuidToUlid,
  decode,
  plan,
  version,
  init,
  _decodeJson,
  _decodeInterpreted,
  _addonPath,
} = idgen;
export default idgen;
