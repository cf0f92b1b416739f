/*
 * host.c -- node values from the host's addresses (idgen.h,
 * idgen_host_node_value): "@ip" as Sonyflake's default machine ID, "@mac".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <string.h>

#include "core_int.h"

static uint64_t low_bits(uint64_t v, unsigned bits) {
  return bits >= 64 ? v : v & ((UINT64_C(1) << bits) - 1);
}

/* 10/8, 172.16/12, 192.168/16, and the shared space 100.64/10. */
static int private_v4(uint32_t a) {
  return (a >> 24) == 10 || (a >> 20) == (172u << 4 | 1u) || (a >> 16) == (192u << 8 | 168u) ||
         (a >> 22) == (100u << 2 | 1u);
}

int idgen_host_node_value(const char *source, unsigned bits, idgen_host_value_t *out, char *err,
                          size_t errlen) {
  memset(out, 0, sizeof *out);
  int ip = strcmp(source, "@ip") == 0, mac = strcmp(source, "@mac") == 0;
  if (!ip && !mac)
    return idgen__err(err, errlen, IDGEN_EINVAL, "\"%s\" is not @ip or @mac",
                      IDGEN_QUOTE(source, strlen(source), 0, 60));
  struct ifaddrs *all;
  if (getifaddrs(&all) != 0)
    return idgen__err(err, errlen, IDGEN_ERANGE, "%s: cannot list the interfaces", source);
  const struct ifaddrs *best = NULL;
  unsigned best_index = 0;
  for (const struct ifaddrs *i = all; i != NULL; i = i->ifa_next) {
    if (i->ifa_addr == NULL || (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
      continue;
    if (ip && i->ifa_addr->sa_family == AF_INET) {
      uint32_t a = ntohl(((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr.s_addr);
      if (private_v4(a)) { /* the first, in the kernel's order */
        best = i;
        break;
      }
    } else if (mac && i->ifa_addr->sa_family == AF_PACKET) {
      const struct sockaddr_ll *ll = (const struct sockaddr_ll *)(const void *)i->ifa_addr;
      int nonzero = 0;
      for (int k = 0; k < ll->sll_halen && k < 8; k++)
        nonzero |= ll->sll_addr[k];
      if (ll->sll_halen == 6 && nonzero && (best == NULL || (unsigned)ll->sll_ifindex < best_index)) {
        best = i;
        best_index = (unsigned)ll->sll_ifindex;
      }
    }
  }
  int rc = 0;
  if (best == NULL) {
    rc = idgen__err(err, errlen, IDGEN_ERANGE,
                    ip ? "@ip: no private IPv4 address (10/8, 172.16/12, 192.168/16, 100.64/10) "
                         "on an interface that is up, loopback aside"
                       : "@mac: no interface that is up, loopback aside, has a MAC address");
  } else if (ip) {
    const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)best->ifa_addr;
    out->value = low_bits(ntohl(sin->sin_addr.s_addr), bits);
    inet_ntop(AF_INET, &sin->sin_addr, out->addr, sizeof out->addr);
    snprintf(out->iface, sizeof out->iface, "%s", best->ifa_name);
  } else {
    const struct sockaddr_ll *ll = (const struct sockaddr_ll *)(const void *)best->ifa_addr;
    uint64_t v = 0;
    for (int k = 0; k < 6; k++)
      v = v << 8 | ll->sll_addr[k];
    out->value = low_bits(v, bits);
    snprintf(out->addr, sizeof out->addr, "%02x:%02x:%02x:%02x:%02x:%02x", ll->sll_addr[0],
             ll->sll_addr[1], ll->sll_addr[2], ll->sll_addr[3], ll->sll_addr[4], ll->sll_addr[5]);
    snprintf(out->iface, sizeof out->iface, "%s", best->ifa_name);
  }
  freeifaddrs(all);
  return rc;
}
