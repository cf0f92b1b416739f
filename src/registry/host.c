/*
 * host.c -- node values from the host's addresses (idgen.h,
 * idgen_host_node_value): "@ip" (Sonyflake's default machine ID) and "@mac",
 * both taken from the interface of the host's default route.
 *
 * DESIGN.  The links, addresses and routes come from the kernel through
 * rtnetlink dumps (RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE): nothing is sent
 * on the network, and the answer is the calling process's own network
 * namespace (/sys/class/net shows the namespace sysfs was mounted in, which
 * is not always ours).  The default route is the IPv4 one with the lowest
 * metric in the main table (ties: the lowest interface index; each next hop
 * of a multipath route counts as a route), or, on a host with no IPv4
 * default route, the IPv6 one chosen the same way.  Only the main table is
 * read: with policy routing the rules may send some traffic elsewhere, but
 * the main table's default route is what `ip route` shows and what the
 * host's plain traffic uses; a host whose default routes live only in other
 * tables is refused and says so.  Next hops the kernel marks dead (their
 * interface is down) are left out; one without carrier ("linkdown") counts,
 * since carrier comes and goes (docker0 has none until a container starts)
 * and the choice must not depend on the moment of the start.
 *
 * The first address that many hosts could share would be the one a naive
 * pick takes: docker0's 172.17.0.1 is the only private address of a host
 * whose own address is public.  So the default route's interface must not
 * be a bridge (by the kernel's link kind) nor, by name, one of the virtual
 * interfaces container and VM tools make (docker*, br-*, virbr*, veth*,
 * cni*; a container's own eth0 is a veth too, and is its host's interface,
 * so the kind veth alone does not refuse), and its address must not be one
 * many hosts hold by convention (shared_v4, shared_mac).  The first
 * candidate decides: when the default route does not fit, the start is
 * refused rather than quietly falling back to another interface, with a
 * message that names the routes and interfaces found.
 *
 * The address on that interface is, for IPv4, the route's preferred source
 * if it has one, else the kernel's own choice of source for a route via a
 * gateway: the first primary address whose subnet holds the gateway, else
 * the first primary one, of global scope.  For IPv6: the route's preferred
 * source, else a global address that is neither temporary (privacy
 * addresses change) nor deprecated nor tentative, static ones first, then
 * the numerically lowest.  The value is the address's low `bits` bits, as
 * Sonyflake takes the low 16 bits of an IPv4 address: hosts of one subnet
 * differ there; the MAC's low bits are its device part, not the vendor's.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core_int.h"

#ifndef IFA_F_DADFAILED
#define IFA_F_DADFAILED 0x08
#endif

typedef struct host_link {
  int index;
  unsigned flags;
  char name[IF_NAMESIZE];
  char kind[16];
  unsigned char mac[8];
  unsigned maclen;
} host_link_t;

typedef struct host_addr {
  int index;
  unsigned char family, prefix, scope;
  uint32_t flags;
  unsigned char a[16];
} host_addr_t;

typedef struct host_route {
  unsigned char family;
  int index, has_gw, has_src;
  uint32_t metric;
  unsigned char gw[16], src[16];
} host_route_t;

typedef struct host_net {
  host_link_t *links;
  host_addr_t *addrs;
  host_route_t *routes;
  size_t nlinks, naddrs, nroutes, caplinks, capaddrs, caproutes;
  size_t other_tables; /* default routes seen in tables other than main */
} host_net_t;

/* Addresses many hosts hold by convention: taking their bits gives every
 * such host the same value. */
static const struct {
  uint32_t net;
  unsigned prefix;
  const char *what;
} shared_v4[] = {
    {0xAC110000u, 16,
     "an address of Docker's default bridge network (docker0 is 172.17.0.1 "
     "and containers are given 172.17.0.2, .3, ... in the same order on every "
     "Docker host)"},
    {0xC0A87A00u, 24,
     "an address of libvirt's default network (virbr0 is 192.168.122.1 and "
     "guests are leased addresses from the same range on every libvirt host)"},
    {0x0A580000u, 16,
     "an address of Podman's default network (the same order of addresses on "
     "every Podman host)"},
    {0x0A00020Fu, 32,
     "the guest address of QEMU's and VirtualBox's user-mode NAT, the same "
     "in every such VM"},
    {0x0A000264u, 32, "the address slirp4netns gives every rootless container"},
};

/* Docker makes a container's MAC on its bridge networks from its IPv4
 * address: 02:42 and the address's four bytes.  Such an address is Docker's
 * choice, made in the same order on every host (172.18.0.2 is the first
 * container of the first compose network everywhere), and so is the MAC. */
static const char docker_made[] = "an address Docker assigned on one of its bridge networks (the "
                                  "interface's MAC is made from it), the same on every Docker "
                                  "host that starts the same containers";

static int docker_mac(const unsigned char *mac, unsigned maclen, const unsigned char *a) {
  return maclen == 6 && mac[0] == 0x02 && mac[1] == 0x42 && memcmp(mac + 2, a, 4) == 0;
}

static const struct {
  unsigned char mac[6];
  unsigned len;
  const char *what;
} shared_mac[] = {
    {{0x02, 0x42, 0xac, 0x11},
     4,
     "a MAC Docker derives from an address of its default "
     "bridge network, the same on every Docker host"},
    {{0x52, 0x54, 0x00, 0x12, 0x34, 0x56},
     6,
     "QEMU's default MAC, the same in every VM "
     "started without one"},
};

/* Name prefixes of the virtual interfaces container and VM tools create. */
static const char *const virtual_prefixes[] = {"docker", "br-", "virbr", "veth", "cni"};

#define HOST_REMEDY                                                                                \
  "; give the value by hand (NAME=N, different on every host) or lease it from a registry "        \
  "(--registry file:DIR, postgres://..., etcd://..., idgen://...)"

static uint64_t low_bits(uint64_t v, unsigned bits) {
  return bits >= 64 ? v : v & ((UINT64_C(1) << bits) - 1);
}

static uint32_t v4(const unsigned char *a) {
  return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
}

/* A zeroed new element at the end of *arr, or NULL when out of memory. */
static void *push(void *arrp, size_t *n, size_t *cap, size_t size) {
  void **arr = arrp;
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, c * size);
    if (p == NULL)
      return NULL;
    *arr = p;
    *cap = c;
  }
  void *e = (char *)*arr + (*n)++ * size;
  memset(e, 0, size);
  return e;
}

static void copy_attr(void *dst, size_t cap, const struct rtattr *a) {
  size_t n = RTA_PAYLOAD(a);
  memcpy(dst, RTA_DATA(a), n < cap ? n : cap);
}

static int take_link(const struct nlmsghdr *h, host_net_t *net) {
  const struct ifinfomsg *ifi = NLMSG_DATA(h);
  if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof *ifi))
    return 0;
  host_link_t *l = push(&net->links, &net->nlinks, &net->caplinks, sizeof *l);
  if (l == NULL)
    return -1;
  l->index = ifi->ifi_index;
  l->flags = ifi->ifi_flags;
  int len = (int)IFLA_PAYLOAD(h);
  for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    if (a->rta_type == IFLA_IFNAME) {
      copy_attr(l->name, sizeof l->name - 1, a);
    } else if (a->rta_type == IFLA_ADDRESS) {
      l->maclen = RTA_PAYLOAD(a) < sizeof l->mac ? (unsigned)RTA_PAYLOAD(a) : 0;
      copy_attr(l->mac, sizeof l->mac, a);
    } else if (a->rta_type == IFLA_LINKINFO) {
      int in = (int)RTA_PAYLOAD(a);
      for (const struct rtattr *b = RTA_DATA(a); RTA_OK(b, in); b = RTA_NEXT(b, in))
        if (b->rta_type == IFLA_INFO_KIND)
          copy_attr(l->kind, sizeof l->kind - 1, b);
    }
  }
  return 0;
}

static int take_addr(const struct nlmsghdr *h, host_net_t *net) {
  const struct ifaddrmsg *ifa = NLMSG_DATA(h);
  if (h->nlmsg_type != RTM_NEWADDR || h->nlmsg_len < NLMSG_LENGTH(sizeof *ifa) ||
      (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6))
    return 0;
  host_addr_t *x = push(&net->addrs, &net->naddrs, &net->capaddrs, sizeof *x);
  if (x == NULL)
    return -1;
  x->index = (int)ifa->ifa_index;
  x->family = ifa->ifa_family;
  x->prefix = ifa->ifa_prefixlen;
  x->scope = ifa->ifa_scope;
  x->flags = ifa->ifa_flags;
  int len = (int)IFA_PAYLOAD(h), local = 0;
  for (const struct rtattr *a = IFA_RTA(ifa); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    /* IFA_LOCAL is this end's address; IFA_ADDRESS the peer's on a
     * point-to-point link, and the only one given for IPv6. */
    if (a->rta_type == IFA_LOCAL || (a->rta_type == IFA_ADDRESS && !local)) {
      copy_attr(x->a, sizeof x->a, a);
      local |= a->rta_type == IFA_LOCAL;
    } else if (a->rta_type == IFA_FLAGS && RTA_PAYLOAD(a) >= 4) {
      memcpy(&x->flags, RTA_DATA(a), 4);
    }
  }
  return 0;
}

static int add_route(host_net_t *net, unsigned char family, int index, uint32_t metric,
                     const struct rtattr *gw, const struct rtattr *src) {
  host_route_t *r = push(&net->routes, &net->nroutes, &net->caproutes, sizeof *r);
  if (r == NULL)
    return -1;
  r->family = family;
  r->index = index;
  r->metric = metric;
  if ((r->has_gw = gw != NULL))
    copy_attr(r->gw, sizeof r->gw, gw);
  if ((r->has_src = src != NULL))
    copy_attr(r->src, sizeof r->src, src);
  return 0;
}

static int take_route(const struct nlmsghdr *h, host_net_t *net) {
  const struct rtmsg *rt = NLMSG_DATA(h);
  if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof *rt) ||
      rt->rtm_dst_len != 0 || rt->rtm_type != RTN_UNICAST ||
      (rt->rtm_family != AF_INET && rt->rtm_family != AF_INET6))
    return 0;
  uint32_t table = rt->rtm_table, metric = 0;
  int oif = 0;
  const struct rtattr *gw = NULL, *src = NULL, *multipath = NULL;
  int len = (int)RTM_PAYLOAD(h);
  for (const struct rtattr *a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    size_t n = RTA_PAYLOAD(a);
    switch (a->rta_type) {
    case RTA_TABLE:
      if (n >= 4)
        memcpy(&table, RTA_DATA(a), 4);
      break;
    case RTA_PRIORITY:
      if (n >= 4)
        memcpy(&metric, RTA_DATA(a), 4);
      break;
    case RTA_OIF:
      if (n >= 4)
        memcpy(&oif, RTA_DATA(a), 4);
      break;
    case RTA_GATEWAY:
      gw = a;
      break;
    case RTA_PREFSRC:
      src = a;
      break;
    case RTA_MULTIPATH:
      multipath = a;
      break;
    default:
      break;
    }
  }
  if (table != RT_TABLE_MAIN) {
    net->other_tables++;
    return 0;
  }
  if (multipath == NULL)
    return oif > 0 && !(rt->rtm_flags & RTNH_F_DEAD)
               ? add_route(net, rt->rtm_family, oif, metric, gw, src)
               : 0;
  int left = (int)RTA_PAYLOAD(multipath);
  for (const struct rtnexthop *nh = RTA_DATA(multipath);
       left >= (int)sizeof *nh && nh->rtnh_len >= sizeof *nh && nh->rtnh_len <= left;
       left -= RTNH_ALIGN(nh->rtnh_len), nh = RTNH_NEXT(nh)) {
    const struct rtattr *nhgw = NULL;
    int in = nh->rtnh_len - (int)sizeof *nh;
    for (const struct rtattr *a = RTNH_DATA(nh); RTA_OK(a, in); a = RTA_NEXT(a, in))
      if (a->rta_type == RTA_GATEWAY)
        nhgw = a;
    if (!(nh->rtnh_flags & RTNH_F_DEAD) &&
        add_route(net, rt->rtm_family, nh->rtnh_ifindex, metric, nhgw, src) < 0)
      return -1;
  }
  return 0;
}

/* One rtnetlink dump of `type`, each answer handed to take(); -1 with errno
 * on failure (EAGAIN: the tables changed while being dumped). */
static int dump(int fd, uint32_t seq, uint16_t type,
                int (*take)(const struct nlmsghdr *, host_net_t *), host_net_t *net, char *buf,
                size_t bufsize) {
  struct {
    struct nlmsghdr h;
    union {
      struct rtmsg rt;
      struct ifinfomsg ifi;
      struct ifaddrmsg ifa;
    } u;
  } req;
  memset(&req, 0, sizeof req);
  size_t body = type == RTM_GETROUTE  ? sizeof req.u.rt
                : type == RTM_GETLINK ? sizeof req.u.ifi
                                      : sizeof req.u.ifa;
  req.h.nlmsg_len = NLMSG_LENGTH(body);
  req.h.nlmsg_type = type;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = seq;
  req.u.rt.rtm_family = AF_UNSPEC; /* the first byte of each of the three */
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0)
    return -1;
  for (;;) {
    struct sockaddr_nl from;
    struct iovec iov = {buf, bufsize};
    struct msghdr m = {
        .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1};
    ssize_t got = recvmsg(fd, &m, 0);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return -1;
    if (m.msg_flags & MSG_TRUNC) {
      errno = EMSGSIZE;
      return -1;
    }
    if (from.nl_pid != 0) /* only the kernel's answers */
      continue;
    /* NLMSG_OK and NLMSG_NEXT, without their signed/unsigned comparison */
    for (size_t off = 0, n = (size_t)got; off + sizeof(struct nlmsghdr) <= n;) {
      const struct nlmsghdr *h = (const void *)(buf + off);
      if (h->nlmsg_len < sizeof *h || h->nlmsg_len > n - off)
        break;
      off += NLMSG_ALIGN(h->nlmsg_len);
      if (h->nlmsg_seq != seq)
        continue;
      if (h->nlmsg_flags & NLM_F_DUMP_INTR) {
        errno = EAGAIN;
        return -1;
      }
      if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
        int e = 0;
        if (h->nlmsg_len >= NLMSG_LENGTH(sizeof e))
          memcpy(&e, NLMSG_DATA(h), sizeof e);
        if (e < 0)
          errno = -e;
        return e < 0 ? -1 : 0;
      }
      if (take(h, net) < 0) {
        errno = ENOMEM;
        return -1;
      }
    }
  }
}

static void net_free(host_net_t *net) {
  free(net->links);
  free(net->addrs);
  free(net->routes);
  memset(net, 0, sizeof *net);
}

static int net_read(host_net_t *net, const char *source, char *err, size_t errlen) {
  memset(net, 0, sizeof *net);
  size_t bufsize = 65536;
  char *buf = malloc(bufsize);
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  int rc = 0, e = 0;
  if (buf == NULL || fd < 0) {
    e = buf == NULL ? ENOMEM : errno;
  } else {
    /* A dump that the kernel marks interrupted (a table changed under it) is
     * read again, a few times at most. */
    for (int attempt = 0; attempt < 5; attempt++) {
      net_free(net);
      uint32_t seq = (uint32_t)attempt * 3 + 1;
      if (dump(fd, seq, RTM_GETLINK, take_link, net, buf, bufsize) == 0 &&
          dump(fd, seq + 1, RTM_GETADDR, take_addr, net, buf, bufsize) == 0 &&
          dump(fd, seq + 2, RTM_GETROUTE, take_route, net, buf, bufsize) == 0) {
        e = 0;
        break;
      }
      e = errno;
      if (e != EAGAIN)
        break;
    }
  }
  if (e != 0) {
    net_free(net);
    rc = idgen__err(err, errlen, e == ENOMEM ? IDGEN_ENOMEM : IDGEN_ERANGE,
                    "%s: cannot read the interfaces and routes from the kernel (rtnetlink): %s",
                    source, strerror(e));
  }
  if (fd >= 0)
    close(fd);
  free(buf);
  return rc;
}

static const host_link_t *link_of(const host_net_t *net, int index) {
  for (size_t i = 0; i < net->nlinks; i++)
    if (net->links[i].index == index)
      return &net->links[i];
  return NULL;
}

/* Why this interface is not the host's own, or NULL. */
static const char *virtual_why(const host_link_t *l) {
  if (strcmp(l->kind, "bridge") == 0)
    return "a bridge";
  for (size_t i = 0; i < sizeof virtual_prefixes / sizeof *virtual_prefixes; i++)
    if (strncmp(l->name, virtual_prefixes[i], strlen(virtual_prefixes[i])) == 0)
      return "by its name a virtual interface of containers or VMs (docker*, br-*, virbr*, "
             "veth*, cni*)";
  return NULL;
}

static const char *shared_v4_why(const unsigned char *a) {
  uint32_t x = v4(a);
  for (size_t i = 0; i < sizeof shared_v4 / sizeof *shared_v4; i++)
    if ((x ^ shared_v4[i].net) >> (32 - shared_v4[i].prefix) == 0)
      return shared_v4[i].what;
  return NULL;
}

static const char *shared_mac_why(const unsigned char *m) {
  for (size_t i = 0; i < sizeof shared_mac / sizeof *shared_mac; i++)
    if (memcmp(m, shared_mac[i].mac, shared_mac[i].len) == 0)
      return shared_mac[i].what;
  return NULL;
}

/* Appends to buf[n] (which holds a string), keeping it NUL-terminated. */
IDGEN_PRINTF(3, 4) static void add(char *buf, size_t n, const char *fmt, ...) {
  size_t used = strlen(buf);
  if (used + 1 >= n)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, n - used, fmt, ap);
  va_end(ap);
}

static void addr_text(const host_addr_t *x, char *buf, size_t n) {
  inet_ntop(x->family, x->a, buf, (socklen_t)n);
}

/* "found: default IPv4 route via eth0 (metric 100); interfaces: docker0
 * (bridge) 172.17.0.1, eth0 (veth) 192.0.2.7": what was found, for a refusal. */
static void found(const host_net_t *net, char *buf, size_t n) {
  char a[INET6_ADDRSTRLEN];
  buf[0] = '\0';
  add(buf, n, "found: ");
  if (net->nroutes == 0)
    add(buf, n, "no default route in the main table");
  for (size_t i = 0; i < net->nroutes; i++) {
    const host_route_t *r = &net->routes[i];
    const host_link_t *l = link_of(net, r->index);
    add(buf, n, "%sdefault %s route via %s (metric %u)", i ? ", " : "",
        r->family == AF_INET ? "IPv4" : "IPv6",
        l ? IDGEN_QUOTE(l->name, strlen(l->name), 0, 40) : "an unknown interface", r->metric);
  }
  if (net->other_tables)
    add(buf, n, " (and %zu in other tables, which are not read: policy routing)",
        net->other_tables);
  add(buf, n, "; interfaces:");
  int any = 0;
  for (size_t i = 0; i < net->nlinks; i++) {
    const host_link_t *l = &net->links[i];
    if (l->flags & IFF_LOOPBACK)
      continue;
    add(buf, n, "%s %s", any++ ? "," : "", IDGEN_QUOTE(l->name, strlen(l->name), 0, 40));
    if (l->kind[0] != '\0')
      add(buf, n, " (%s)", IDGEN_QUOTE(l->kind, strlen(l->kind), 0, 20));
    if (!(l->flags & IFF_UP))
      add(buf, n, " down");
    for (size_t k = 0; k < net->naddrs; k++)
      if (net->addrs[k].index == l->index && net->addrs[k].scope == RT_SCOPE_UNIVERSE) {
        addr_text(&net->addrs[k], a, sizeof a);
        add(buf, n, " %s", a);
      }
  }
  if (!any)
    add(buf, n, " none but loopback");
  if (strlen(buf) + 1 >= n && n > 4)
    memcpy(buf + n - 4, "...", 4);
}

/* The default route: the lowest metric of one family, IPv4 first. */
static const host_route_t *default_route(const host_net_t *net) {
  for (int pass = 0; pass < 2; pass++) {
    const host_route_t *best = NULL;
    for (size_t i = 0; i < net->nroutes; i++) {
      const host_route_t *r = &net->routes[i];
      if (r->family != (pass == 0 ? AF_INET : AF_INET6))
        continue;
      if (best == NULL || r->metric < best->metric ||
          (r->metric == best->metric && r->index < best->index))
        best = r;
    }
    if (best != NULL)
      return best;
  }
  return NULL;
}

static int in_subnet(const host_addr_t *x, const unsigned char *gw) {
  if (x->family != AF_INET || x->prefix > 32)
    return 0;
  return x->prefix == 0 || (v4(x->a) ^ v4(gw)) >> (32 - x->prefix) == 0;
}

/* The address of route r's interface that the kernel would send from. */
static const host_addr_t *route_addr(const host_net_t *net, const host_route_t *r) {
  const host_addr_t *best = NULL;
  for (size_t i = 0; i < net->naddrs; i++) {
    const host_addr_t *x = &net->addrs[i];
    if (x->index != r->index || x->family != r->family || x->scope != RT_SCOPE_UNIVERSE)
      continue;
    size_t alen = x->family == AF_INET ? 4 : 16;
    if (r->has_src) {
      if (memcmp(x->a, r->src, alen) == 0)
        return x;
      continue;
    }
    if (x->family == AF_INET) {
      if (x->flags & IFA_F_SECONDARY)
        continue;
      if (r->has_gw && in_subnet(x, r->gw))
        return x;
      if (best == NULL)
        best = x;
    } else {
      if (x->flags & (IFA_F_TEMPORARY | IFA_F_DEPRECATED | IFA_F_TENTATIVE | IFA_F_DADFAILED))
        continue;
      int perm = !!(x->flags & IFA_F_PERMANENT), bperm = best && (best->flags & IFA_F_PERMANENT);
      if (best == NULL || perm > bperm || (perm == bperm && memcmp(x->a, best->a, 16) < 0))
        best = x;
    }
  }
  return best;
}

int idgen_host_node_value(const char *source, unsigned bits, idgen_host_value_t *out, char *err,
                          size_t errlen) {
  memset(out, 0, sizeof *out);
  int ip = strcmp(source, "@ip") == 0, mac = strcmp(source, "@mac") == 0;
  if (!ip && !mac)
    return idgen__err(err, errlen, IDGEN_EINVAL, "\"%s\" is not @ip or @mac",
                      IDGEN_QUOTE(source, strlen(source), 0, 60));
  host_net_t net;
  int rc = net_read(&net, source, err, errlen);
  if (rc < 0)
    return rc;
  char seen[600], a[INET6_ADDRSTRLEN];
  found(&net, seen, sizeof seen);
  const host_route_t *r = default_route(&net);
  const host_link_t *l = r ? link_of(&net, r->index) : NULL;
  const char *why;
  if (r == NULL || l == NULL || !(l->flags & IFF_UP)) {
    rc = idgen__err(err, errlen, IDGEN_ERANGE,
                    "%s: no default route to take the interface from (%s)" HOST_REMEDY, source,
                    seen);
    goto done;
  }
  const char *name = IDGEN_QUOTE(l->name, strlen(l->name), 0, 40);
  if ((why = virtual_why(l)) != NULL) {
    rc = idgen__err(err, errlen, IDGEN_ERANGE,
                    "%s: the default route is via %s, %s, whose addresses are not this host's "
                    "own (%s)" HOST_REMEDY,
                    source, name, why, seen);
    goto done;
  }
  snprintf(out->iface, sizeof out->iface, "%s", l->name);
  if (ip) {
    const host_addr_t *x = route_addr(&net, r);
    const char *fam = r->family == AF_INET ? "IPv4" : "IPv6";
    if (x == NULL) {
      rc = idgen__err(err, errlen, IDGEN_ERANGE,
                      "%s: the default route's interface %s has no global %s address%s "
                      "(%s)" HOST_REMEDY,
                      source, name, fam, r->has_src ? " equal to the route's preferred source" : "",
                      seen);
      goto done;
    }
    addr_text(x, a, sizeof a);
    if (x->family == AF_INET && (why = shared_v4_why(x->a)) == NULL &&
        docker_mac(l->mac, l->maclen, x->a))
      why = docker_made;
    if (x->family == AF_INET && why != NULL) {
      rc = idgen__err(err, errlen, IDGEN_ERANGE,
                      "%s: the default route's interface %s has %s, %s (%s)" HOST_REMEDY, source,
                      name, a, why, seen);
      goto done;
    }
    uint64_t v = 0;
    for (size_t k = x->family == AF_INET ? 0 : 8; k < (x->family == AF_INET ? 4u : 16u); k++)
      v = v << 8 | x->a[k];
    out->value = low_bits(v, bits);
    snprintf(out->addr, sizeof out->addr, "%s", a);
  } else {
    int nonzero = 0;
    for (unsigned k = 0; k < l->maclen; k++)
      nonzero |= l->mac[k];
    if (l->maclen != 6 || !nonzero) {
      rc = idgen__err(err, errlen, IDGEN_ERANGE,
                      "%s: the default route's interface %s has no MAC address (%s)" HOST_REMEDY,
                      source, name, seen);
      goto done;
    }
    const unsigned char *m = l->mac;
    snprintf(out->addr, sizeof out->addr, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3],
             m[4], m[5]);
    why = shared_mac_why(m);
    for (size_t k = 0; why == NULL && k < net.naddrs; k++)
      if (net.addrs[k].index == l->index && net.addrs[k].family == AF_INET &&
          docker_mac(m, l->maclen, net.addrs[k].a))
        why = "a MAC Docker made from the interface's address on one of its bridge networks, "
              "the same on every Docker host that starts the same containers";
    if (why != NULL) {
      rc = idgen__err(err, errlen, IDGEN_ERANGE,
                      "%s: the default route's interface %s has MAC %s, %s (%s)" HOST_REMEDY,
                      source, name, out->addr, why, seen);
      goto done;
    }
    uint64_t v = 0;
    for (int k = 0; k < 6; k++)
      v = v << 8 | m[k];
    out->value = low_bits(v, bits);
  }
done:
  if (rc < 0)
    memset(out, 0, sizeof *out);
  net_free(&net);
  return rc;
}

int idgen_host_node_resolve(void *ctx, const char *field, unsigned bits, const char *source,
                            uint64_t *value, char *err, size_t errlen) {
  idgen_host_value_t hv;
  int rc = idgen_host_node_value(source, bits, &hv, err, errlen);
  if (rc < 0)
    return rc;
  *value = hv.value;
  if (ctx != NULL) { /* "worker=@ip eth0 10.1.2.3 -> 3" after those before */
    char *text = ctx;
    size_t used = strnlen(text, IDGEN_HOST_NODES_MAX - 1);
    snprintf(text + used, IDGEN_HOST_NODES_MAX - used, "%s%s=%s %s %s -> %" PRIu64, used ? "," : "",
             field, source, hv.iface, hv.addr, hv.value);
  }
  return 0;
}
