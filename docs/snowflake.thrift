// Twitter's Snowflake service, as idgen serves it on `idgen serve --thrift
// ADDR` (framed transport, binary protocol; conventional port 7609).  The
// interface of the original server (seeds 001 and 003): a client generated
// from this file works against idgen unchanged.
//
// The service declares no `throws`: as with the original server, a refused
// clock or an invalid user agent reaches the client as a
// TApplicationException whose message begins with the exception's name.

namespace py snowflake

exception InvalidSystemClock {
  1: string message
}

exception InvalidUserAgentError {
  1: string message
}

service Snowflake {
  // The value of the layout's `worker` node field (the leased one when a
  // registry assigns it).
  i64 get_worker_id()
  // The server's wall clock, Unix milliseconds.
  i64 get_timestamp()
  // One Snowflake ID; `useragent` must match [a-zA-Z][a-zA-Z0-9-]* and
  // names the caller in metrics.
  i64 get_id(1: string useragent)
  // The value of the layout's `datacenter` node field.
  i64 get_datacenter_id()
}
