#!/usr/bin/env python3
"""TLS (tls_cert, tls_key, tls_client_ca): the refusals at start; HTTPS and
RESP over TLS through curl, redis-cli --tls, redis-benchmark --tls, redis-py
and raw Python ssl sockets (TLS 1.2 and 1.3; TLS 1.1 refused); a plain-text
client on a TLS port told so in plain text and closed; handshakes that stall
cut off at slow_timeout_ms while 100 other clients are served; SIGHUP
loading a new certificate (and keeping the old one when the new is bad);
mutual TLS (the certificate's CN as the agent, and as the authentication
beside auth_file); the idgen_tls_handshakes_total counters and /info's
"tls".  Thrift stays plain text.

The certificates are made here, with the openssl command, in the suite's
directory: a CA, two server certificates for 127.0.0.1 and localhost (the
second for SIGHUP), an intermediate CA and a server certificate under it,
client certificates of the CA (CN app-one, and a CN that is no agent name),
an expired one (signed under faketime), one under the intermediate (CN
app-two) and one of another CA.  suite_js_clients.py uses them too (ioredis and
node-redis over TLS: group_js_tls).

Usage: python3 tests/serve/suite_tls.py PATH/TO/idgen  (or: ctest -R serve.tls)
"""

import ssl

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()

HERE = os.path.dirname(os.path.abspath(__file__))
PKI = {}  # name -> path; made once by pki()
TOKEN = "0123456789abcdef0123456789abcdef"


# ------------------------------------------------------------ certificates


FAKETIME_SO = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def openssl(*args, past=False):
    """Runs openssl; `past`: with its clock 10 days back, libfaketime preloaded
    directly (the `faketime` wrapper keeps a semaphore named by its PID in
    /dev/shm, and one left by a killed run makes the next with that PID fail)."""
    env = dict(os.environ, LD_PRELOAD=FAKETIME_SO, FAKETIME="-10d") if past else None
    p = subprocess.run(["openssl"] + list(args), capture_output=True, timeout=60, stdin=subprocess.DEVNULL, env=env)
    if p.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (" ".join(args), p.stderr.decode(errors="replace")[-500:]))
    return p.stdout


def make_key(path):
    """An ECDSA P-256 key, mode 600 (the daemon refuses a key others may read)."""
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path)
    os.chmod(path, 0o600)


def make_ca(d, name, cn, issuer=None):
    """A CA: self-signed, or an intermediate signed by `issuer` (a name)."""
    key, pem = os.path.join(d, name + ".key"), os.path.join(d, name + ".pem")
    make_key(key)
    if issuer is None:
        openssl("req", "-x509", "-new", "-key", key, "-out", pem, "-days", "2", "-subj", "/CN=" + cn,
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    else:
        sign(d, name, key, pem, cn, issuer, "basicConstraints=critical,CA:TRUE\n"
             "keyUsage=critical,keyCertSign,cRLSign\n")
    PKI[name], PKI[name + "_key"] = pem, key


def sign(d, name, key, pem, cn, issuer, ext, past=False):
    """Signs with `issuer`; `past`: 10 days ago, for 2 days (expired now)."""
    csr, extf = os.path.join(d, name + ".csr"), os.path.join(d, name + ".ext")
    with open(extf, "w") as f:
        f.write(ext + "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    openssl("req", "-new", "-key", key, "-out", csr, "-subj", "/CN=" + cn)
    openssl("x509", "-req", "-in", csr, "-CA", PKI[issuer], "-CAkey", PKI[issuer + "_key"],
            "-set_serial", "0x%x" % random.getrandbits(63), "-days", "2", "-extfile", extf, "-out", pem, past=past)


def make_leaf(d, name, cn, issuer, server, past=False):
    key, pem = os.path.join(d, name + ".key"), os.path.join(d, name + ".pem")
    make_key(key)
    ext = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
    ext += ("extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n" if server
            else "extendedKeyUsage=clientAuth\n")
    sign(d, name, key, pem, cn, issuer, ext, past)
    PKI[name], PKI[name + "_key"] = pem, key


def pki():
    """The suite's certificates (made at the first call): PKI[name] is a
    PEM file, PKI[name + "_key"] its key."""
    if PKI:
        return PKI
    d = os.path.join(TMP, "pki")
    os.makedirs(d, exist_ok=True)
    make_ca(d, "ca", "idgen test CA")
    make_ca(d, "other_ca", "another CA")
    make_ca(d, "inter", "idgen test intermediate", issuer="ca")
    make_leaf(d, "server", "localhost", "ca", True)
    make_leaf(d, "server2", "localhost", "ca", True)
    make_leaf(d, "leaf_inter", "localhost", "inter", True)
    make_leaf(d, "client", "app-one", "ca", False)
    make_leaf(d, "client_badcn", "9 no agent", "ca", False)
    make_leaf(d, "client_other", "app-one", "other_ca", False)
    make_leaf(d, "client_expired", "app-one", "ca", False, past=True)
    if subprocess.run(["openssl", "x509", "-checkend", "0", "-noout", "-in", PKI["client_expired"]],
                      capture_output=True).returncode == 0:
        raise RuntimeError("client_expired.pem has not expired: libfaketime did not move openssl's clock")
    make_leaf(d, "client_inter", "app-two", "inter", False)
    for name, leaf in (("chain", "leaf_inter"), ("client_chain", "client_inter")):
        path = os.path.join(d, name + ".pem")  # leaf first, then the intermediate
        with open(path, "w") as f, open(PKI[leaf]) as a, open(PKI["inter"]) as b:
            f.write(a.read() + b.read())
        PKI[name], PKI[name + "_key"] = path, PKI[leaf + "_key"]
    return PKI


def tls_args(cert="server", key=None, ca=None):
    args = ["--tls-cert", PKI[cert], "--tls-key", PKI[key or cert + "_key"]]
    return args + (["--tls-client-ca", PKI[ca]] if ca else [])


def der(pem_path):
    with open(pem_path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def key_lines(path):
    """The base64 lines of a key file: none may appear in a message."""
    with open(path) as f:
        return [ln.strip() for ln in f if len(ln.strip()) >= 16 and not ln.startswith("-----")]


def ctx(cert=None, maxv=None, minv=None, ca="ca"):
    """A client context trusting PKI[ca], showing PKI[cert] if given."""
    c = ssl.create_default_context(cafile=PKI[ca])
    if cert:
        c.load_cert_chain(PKI[cert], PKI[cert + "_key"])
    if maxv:
        c.maximum_version = maxv
    if minv:
        c.minimum_version = minv
    return c


# ------------------------------------------------------------ TLS clients


class TLSConn(Conn):
    """harness.Conn over TLS: the handshake is done when it returns."""

    def __init__(self, port, context, timeout=5.0):
        raw = socket.create_connection((HOST, port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.s = context.wrap_socket(raw, server_hostname=HOST)
        except BaseException:
            raw.close()
            raise
        self.buf = b""
        self.closed = False


def tls_http(port, context, path, headers=()):
    """One request on a new TLS connection: the response, or the exception met."""
    try:
        c = TLSConn(port, context)
    except Exception as e:  # noqa: BLE001
        return e
    try:
        c.send(http_req(path, headers=headers))
        return c.http()
    except Exception as e:  # noqa: BLE001
        return e
    finally:
        c.close()


def tls_resp(port, context, *cmd):
    """One RESP command on a new TLS connection: the reply, or the exception met."""
    try:
        c = TLSConn(port, context)
    except Exception as e:  # noqa: BLE001
        return e
    try:
        c.send(resp_cmd(*cmd))
        return c.resp()
    except Exception as e:  # noqa: BLE001
        return e
    finally:
        c.close()


def parse_metrics(text):
    samples = {}
    for ln in text.splitlines():
        m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?", ln)
        if m and not ln.startswith("#"):
            labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def tls_metrics(port, context):
    """/metrics over TLS (one new connection, one handshake): the samples."""
    SCRAPES[0] += 1
    r = tls_http(port, context, "/metrics")
    if not isinstance(r, HttpResp) or r.status != 200:
        raise AssertionError("GET /metrics over TLS: %r" % (r,))
    return parse_metrics(r.text())


def hs(samples, result):
    return mget(samples, "idgen_tls_handshakes_total", result=result) or 0


def curls(port, path, *args, timeout=10):
    """curl -v over HTTPS trusting the CA: (HttpResp or None, detail, curl's stderr)."""
    cmd = ["curl", "-sS", "-i", "-v", "--max-time", str(timeout), "--cacert", PKI["ca"]] + list(args) + \
        ["https://%s:%d%s" % (HOST, port, path)]
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout + 5)
    except subprocess.TimeoutExpired:
        return None, "curl hung", ""
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0:
        return None, "curl exit %d: %s" % (p.returncode, err.strip()[-400:]), err
    try:
        r = parse_http(p.stdout)
    except ProtoError as e:
        return None, "curl output: %s" % e, err
    if r is None:
        return None, "incomplete response: %s" % short(p.stdout), err
    return r[0], "", err


def rcli_tls(port, *args, cert=None):
    extra = ["--tls", "--cacert", PKI["ca"]] + (["--cert", PKI[cert], "--key", PKI[cert + "_key"]] if cert else [])
    return rcli(port, *(extra + list(args)))


def handshake_done(s_client_out):
    """Whether `openssl s_client`'s output shows a finished handshake."""
    return re.search(r"^New, (TLS|SSL)v[\d.]+, Cipher is (?!\(NONE\))", s_client_out, re.M) is not None


def s_client_tls11(port):
    """openssl s_client -tls1_1 (security level 0, so that this client can
    speak TLS 1.1 at all): (handshake finished, output)."""
    p = subprocess.run(["openssl", "s_client", "-connect", "%s:%d" % (HOST, port), "-tls1_1",
                        "-cipher", "DEFAULT@SECLEVEL=0", "-CAfile", PKI["ca"]],
                       input=b"", capture_output=True, timeout=20)
    out = (p.stdout + p.stderr).decode("utf-8", "replace")
    return handshake_done(out), out


def refused(port, context, payload, proto):
    """A TLS client that must be turned away: (turned away, detail).  In TLS
    1.3 a client's handshake may finish before the server has judged its
    certificate: then the refusal comes as an alert or EOF at the first read."""
    try:
        c = TLSConn(port, context)
    except (ssl.SSLError, OSError) as e:
        return True, "handshake: %r" % e
    try:
        c.send(payload)
        r = c.http() if proto == "http" else c.resp()
        return False, "answered: %r" % (r,)
    except (ssl.SSLError, OSError, EOFError) as e:
        return True, "at the first read: %r" % e
    except TimeoutError as e:
        return False, "neither answered nor closed: %s" % e
    finally:
        c.close()


SCRAPES = [0]  # connections tls_metrics made (each one handshake)


def wait_metric(port, context, cond, timeout=20):
    """A close or a handshake is counted on its connection's own loop, which
    may be after another loop answers /metrics: scrape until cond(samples)
    (a moment; up to `timeout` on a busy machine).  The last samples."""
    deadline = time.monotonic() + timeout
    while True:
        m = tls_metrics(port, context)
        if cond(m) or time.monotonic() > deadline:
            return m
        time.sleep(0.05)


def serve_refusal(*args, env=None, user=None):
    """idgen serve ARGS that must not start: (exit status, stderr)."""
    pre = ["setpriv", "--reuid=" + user, "--regid=nogroup", "--clear-groups"] if user else []
    p = subprocess.run(pre + [IDGEN, "serve", "--http", HOST + ":0", "--resp", HOST + ":0"] + NODE_ARGS
                       + list(args), capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
                       env=components.clean_env(env))
    return p.returncode, p.stderr.decode("utf-8", "replace")


def write(path, text, mode=0o600):
    with open(path + ".new", "w") as f:
        f.write(text)
    os.chmod(path + ".new", mode)
    os.replace(path + ".new", path)


def copy_to(src, dst, mode=0o600):
    with open(src) as f:
        write(dst, f.read(), mode)


# ------------------------------------------------------------ groups


def group_pki():
    try:
        pki()
        ok, detail = True, sorted(k for k in PKI if not k.endswith("_key"))
    except Exception as e:  # noqa: BLE001
        ok, detail = False, str(e)
    check("openssl made the CA, server, intermediate and client certificates", ok, detail)
    # The main daemon (run_suite's, MAIN_ARGS) speaks TLS: MAIN_ARGS is
    # harness's own list, extended in place.
    if ok:
        MAIN_ARGS.extend(tls_args())


def group_refusals():
    p = pki()
    loose = os.path.join(TMP, "loose.key")
    copy_to(p["server_key"], loose, 0o644)
    garbage = os.path.join(TMP, "garbage.pem")
    write(garbage, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    enc = os.path.join(TMP, "encrypted.key")
    openssl("pkey", "-in", p["server_key"], "-aes256", "-passout", "pass:secret", "-out", enc)
    os.chmod(enc, 0o600)
    missing = os.path.join(TMP, "no-such-file.pem")
    secret = key_lines(p["server_key"]) + key_lines(p["client_key"])
    cases = [
        ("only tls_cert given", ["--tls-cert", p["server"]], ["tls_key"]),
        ("only tls_key given", ["--tls-key", p["server_key"]], ["tls_cert"]),
        ("a missing cert file", ["--tls-cert", missing, "--tls-key", p["server_key"]], ["tls_cert"]),
        ("a missing key file", ["--tls-cert", p["server"], "--tls-key", missing], ["tls_key"]),
        ("a directory as the cert", ["--tls-cert", TMP, "--tls-key", p["server_key"]], ["tls_cert"]),
        ("a garbage cert", ["--tls-cert", garbage, "--tls-key", p["server_key"]], ["tls_cert"]),
        ("a garbage key", ["--tls-cert", p["server"], "--tls-key", garbage], ["tls_key"]),
        ("a certificate given as the key", ["--tls-cert", p["server"], "--tls-key", p["server2"]], ["tls_key"]),
        ("a key of another certificate", ["--tls-cert", p["server"], "--tls-key", p["client_key"]], ["tls_key"]),
        ("a key with a passphrase (never asked on a terminal)", ["--tls-cert", p["server"], "--tls-key", enc],
         ["tls_key"]),
        ("a key others may read (mode 644)", ["--tls-cert", p["server"], "--tls-key", loose],
         ["tls_key", "chmod o-rwx"]),
        ("a missing tls_client_ca", tls_args() + ["--tls-client-ca", missing], ["tls_client_ca"]),
        ("a garbage tls_client_ca", tls_args() + ["--tls-client-ca", garbage], ["tls_client_ca"]),
    ]
    for what, args, want in cases:
        rc, err = serve_refusal(*args)
        check("refused at start, exit 2, naming %s: %s" % (" and ".join(want), what),
              rc == 2 and all(w in err for w in want), "exit %d: %s" % (rc, err.strip()[-400:]))
        leaked = [s for s in secret if s in err] or (["PRIVATE KEY"] if "PRIVATE KEY" in err else [])
        check("... no key material in the message (%s)" % what, not leaked, short(leaked))
    for what, args, want in (cases[0], cases[8], cases[10], cases[5]):
        rc, err = serve_refusal(*(args + ["--check-config"]))
        check("--check-config refuses it too (exit 2, naming %s): %s" % (want[0], what),
              rc == 2 and all(w in err for w in want), "exit %d: %s" % (rc, err.strip()[-300:]))
    rc, err = serve_refusal("--check-config", *tls_args(ca="ca"))
    check("--check-config with good TLS settings: exit 0, no key material", rc == 0 and not
          any(s in err for s in secret) and "PRIVATE KEY" not in err, "exit %d: %s" % (rc, err[-300:]))
    rc, err = serve_refusal(env={"IDGEN_TLS_CERT": p["server"]})
    check("IDGEN_TLS_CERT alone in the environment: refused, exit 2, naming tls_key",
          rc == 2 and "tls_key" in err, "exit %d: %s" % (rc, err.strip()[-300:]))
    # Unreadable for the user the daemon runs as (root reads anything: nobody).
    if shutil.which("setpriv"):
        d = os.path.join(TMP, "nobody")
        os.makedirs(d, exist_ok=True)
        os.chmod(d, 0o755)
        cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.key")
        copy_to(p["server"], cert, 0o600)  # root's, mode 600: nobody may not read it
        copy_to(p["server_key"], key, 0o600)
        os.chown(key, 65534, -1)
        rc, err = serve_refusal("--tls-cert", cert, "--tls-key", key, user="nobody")
        check("a cert file the daemon's user may not read: refused, exit 2, naming tls_cert",
              rc == 2 and "tls_cert" in err, "exit %d: %s" % (rc, err.strip()[-300:]))
    group = os.path.join(TMP, "group.key")
    copy_to(p["server_key"], group, 0o640)
    try:
        d = Daemon("group-key", ["--tls-cert", p["server"], "--tls-key", group])
        ok = isinstance(tls_http(d.http, ctx(), "/health"), HttpResp)
        d.stop()
    except StartError as e:
        ok = e
    check("a key only its group may read (mode 640) is taken, as auth_file", ok is True, ok)


def group_https(d):
    r, det, err = curls(d.http, "/id")
    ids = digits_lines(r.body) if r else None
    check("curl --cacert https:// GET /id: 200, one ID", r is not None and r.status == 200 and ids and len(ids) == 1,
          det or r)
    add_snow("curl /id", ids or [])
    r, det, err = curls(d.http, "/id?count=5", "--tlsv1.3")
    ids = digits_lines(r.body) if r else None
    check("curl --tlsv1.3: /id?count=5 gives 5 IDs, over TLS 1.3",
          r is not None and r.status == 200 and ids and len(ids) == 5 and "SSL connection using TLSv1.3" in err,
          det or re.findall(r"SSL connection using \S+", err))
    add_snow("curl /id?count=5", ids or [])
    r, det, err = curls(d.http, "/id?count=3", "--tlsv1.2", "--tls-max", "1.2")
    ids = digits_lines(r.body) if r else None
    check("curl --tls-max 1.2: /id?count=3 gives 3 IDs, over TLS 1.2",
          r is not None and r.status == 200 and ids and len(ids) == 3 and "SSL connection using TLSv1.2" in err,
          det or re.findall(r"SSL connection using \S+", err))
    add_snow("curl tls1.2", ids or [])
    c = TLSConn(d.http, ctx(maxv=ssl.TLSVersion.TLSv1_2))
    try:
        ver = c.s.version()
        c.send(http_req("/id?count=2"))
        r = c.http()
        ids = digits_lines(r.body)
        check("Python ssl at most TLS 1.2: version TLSv1.2, /id?count=2 answered", ver == "TLSv1.2" and ids and
              len(ids) == 2, (ver, r))
        add_snow("python-ssl tls1.2", ids or [])
    finally:
        c.close()
    # TLS 1.1: a control first (the same client command against openssl
    # s_server allowing 1.1 must finish), so that the refusal is the daemon's.
    port = components.free_port()
    srv = subprocess.Popen(["openssl", "s_server", "-accept", "%s:%d" % (HOST, port), "-cert", PKI["server"],
                            "-key", PKI["server_key"], "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0", "-naccept", "1"],
                           stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    CHILDREN.append(srv)
    try:
        deadline = time.monotonic() + 10
        while components.port_free(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        ctrl, out = s_client_tls11(port)
        check("control: openssl s_client -tls1_1 finishes a handshake with openssl s_server -tls1_1", ctrl,
              out[-400:])
    finally:
        srv.kill()
        srv.wait()
    done, out = s_client_tls11(d.http)
    check("openssl s_client -tls1_1 against the daemon: the handshake fails (TLS 1.2 and 1.3 only)",
          not done, out[-400:])
    c = TLSConn(d.http, ctx())
    try:
        ver = c.s.version()
        got = c.s.getpeercert(binary_form=True)
        # three requests in one write: three responses, in order
        c.send(http_req("/id") + http_req("/id?count=1000") + http_req("/info"))
        rs = [c.http(10) for _ in range(3)]
        a, b = digits_lines(rs[0].body), digits_lines(rs[1].body)
        check("Python ssl (default): TLS 1.3, the server certificate is tls_cert's",
              ver == "TLSv1.3" and got == der(PKI["server"]), ver)
        check("3 requests pipelined over TLS: /id, /id?count=1000 (several TLS records), /info, in order",
              a and len(a) == 1 and b and len(b) == 1000 and json_body(rs[2]) is not None,
              [short(x.body, 80) for x in rs])
        add_snow("python-ssl /id", (a or []) + (b or []))
        info = json_body(rs[2]) or {}
        check('/info over TLS: "tls": true', info.get("tls") is True, short(rs[2].body, 300))
        c.send(http_req("/id", headers=["Connection: close"]))
        r = c.http()
        closed = c.read_to_eof(5)
        ids = digits_lines(r.body)
        check("Connection: close over TLS: answered, then the connection ends", r.status == 200 and closed and ids,
              (r, short(c.buf)))
        add_snow("python-ssl close", ids or [])
    finally:
        c.close()


def group_resp(d):
    rc, out, err = rcli_tls(d.resp, "ID")
    m = re.fullmatch(r"\(integer\) (\d+)\n", out)
    check("redis-cli --tls --cacert ID: an integer", m, (rc, out, err))
    add_snow("redis-cli ID", [int(m.group(1))] if m else [])
    rc, out, err = rcli_tls(d.resp, "PING")
    check("redis-cli --tls PING: PONG", out == "PONG\n", (rc, out, err))
    rc, out, err = rcli(d.resp, "ID")
    check("redis-cli without --tls on the TLS port: no ID", not re.fullmatch(r"\(integer\) \d+\n", out), (out, err))
    if redis is None:
        check("redis-py is installed (python3-redis)", False)
    else:
        try:
            r = redis.Redis(host=HOST, port=d.resp, ssl=True, ssl_ca_certs=PKI["ca"], socket_timeout=10)
            v = r.execute_command("ID")
            vs = r.execute_command("ID", "3")
            r.close()
        except redis.exceptions.RedisError as e:
            v = vs = e
        check("redis-py ssl=True ssl_ca_certs: ID, ID 3", isinstance(v, int) and isinstance(vs, list) and len(vs) == 3,
              (v, vs))
        add_snow("redis-py ID", ([v] if isinstance(v, int) else []) + (list(vs) if isinstance(vs, list) else []))
    c = TLSConn(d.resp, ctx())
    try:
        c.send(resp_cmd("ID") * 1000)  # ~14 KB of commands, replies in several records
        rs = c.resp_n(1000)
        check("raw TLS RESP: 1000 ID pipelined in one write, 1000 integers",
              all(isinstance(x, int) for x in rs), short(rs[:3]))
        add_snow("python-ssl RESP", [x for x in rs if isinstance(x, int)])
    finally:
        c.close()
    p = subprocess.run(["redis-benchmark", "--tls", "--cacert", PKI["ca"], "-h", HOST, "-p", str(d.resp),
                        "-c", "20", "-n", "5000", "-q", "ID"], capture_output=True, timeout=60)
    out = (p.stdout + p.stderr).decode(errors="replace")
    check("redis-benchmark --tls -c 20 -n 5000 ID: completes, no error replies",
          p.returncode == 0 and "requests per second" in out and "rror" not in out,
          out[-400:])


def group_plaintext(d):
    m0 = tls_metrics(d.http, ctx())
    r, closed, rest = http_then_eof(d.http, http_req("/id"))
    check("plain-text HTTP on the TLS port: HTTP/1.1 400 Bad Request naming https",
          isinstance(r, HttpResp) and r.raw_head.startswith("HTTP/1.1 400 Bad Request\r\n")
          and b"https" in r.body.lower(),
          repr(r))
    check("... then the connection is closed (EOF, nothing more)", closed and rest == b"", short(rest))
    for data, what in ((resp_cmd("PING"), "RESP"), (b"ID\r\n", "inline RESP (ID\\r\\n, as telnet sends it)")):
        rep, closed, rest = reply_then_eof(d.resp, data, Conn.resp, 3)
        check("plain-text %s on the TLS port: -ERR naming TLS, then EOF (nothing more)" % what,
              isinstance(rep, RErr) and rep.startswith("ERR") and "tls" in rep.lower() and closed
              and rest == b"", (rep, short(rest)))
    r, closed, rest = http_then_eof(d.http, b"G")  # the first byte decides
    check("plain text, one byte (G) and no more: the 400 at once, then EOF",
          isinstance(r, HttpResp) and r.status == 400 and closed and rest == b"", (r, short(rest)))
    c = Conn(d.http)  # a TLS record type, then no ClientHello: a failed handshake, closed at once
    try:
        t0 = time.monotonic()
        c.send(b"\x16\x03\x01\x00\x05hello" + b"x" * 50)
        closed = c.read_to_eof(5)
        dt = time.monotonic() - t0
        check("0x16 then garbage: closed at once (%.2fs), no plain-text answer" % dt,
              closed and dt < 1.0 and not c.buf.startswith(b"HTTP") and not c.buf.startswith(b"-"), short(c.buf))
    finally:
        c.close()
    r = tls_http(d.http, ctx(), "/id")
    check("a TLS client after the plain-text ones: served", isinstance(r, HttpResp) and r.status == 200, r)
    add_snow("python-ssl after plain", digits_lines(r.body) or [] if isinstance(r, HttpResp) else [])
    want = {"plaintext": 4, "failed": 1}
    m1 = wait_metric(d.http, ctx(), lambda m: all(hs(m, k) - hs(m0, k) >= v for k, v in want.items()), 10)
    got = {k: hs(m1, k) - hs(m0, k) for k in want}
    check('metrics: idgen_tls_handshakes_total plaintext +4, failed +1 (the garbage)', got == want, got)


def group_metrics(d):
    """The handshake counters, exactly: 3 good handshakes, 2 failed, 1 plain."""
    m0 = tls_metrics(d.http, ctx())
    ok = [isinstance(tls_http(d.http, ctx(), "/health"), HttpResp),
          isinstance(tls_resp(d.resp, ctx(), "PING"), RSimple),
          isinstance(tls_http(d.http, ctx(maxv=ssl.TLSVersion.TLSv1_2), "/health"), HttpResp)]
    tls11 = ctx(maxv=ssl.TLSVersion.TLSv1_1, minv=ssl.TLSVersion.TLSv1_1)
    tls11.set_ciphers("DEFAULT@SECLEVEL=0")
    log_bad = len(d.log())
    bad = [refused(d.http, tls11, http_req("/health"), "http")[0],
           refused(d.resp, ctx(ca="other_ca"), resp_cmd("PING"), "resp")[0]]  # the client refuses the server
    r, closed, _ = http_then_eof(d.http, http_req("/health"))
    check("3 TLS clients served, 2 refused handshakes (TLS 1.1; a client not trusting the CA), 1 plain one",
          all(ok) and all(bad) and closed, (ok, bad, r))
    # The daemon logs a refused handshake when it reads the client's alert, which may come after
    # the client has returned: wait for both lines before marking where the aborted ones begin.
    deadline = time.monotonic() + 10
    while d.log()[log_bad:].count("event=tls_failed") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    check("the 2 refused handshakes are logged as tls_failed",
          d.log()[log_bad:].count("event=tls_failed") == 2, d.log()[log_bad:][-600:])
    log0 = len(d.log())
    for _ in range(2):  # half a ClientHello, then gone: aborted, not failed (nor logged)
        s = socket.create_connection((HOST, d.http), timeout=5)
        s.sendall(client_hello()[:40])
        time.sleep(0.05)
        s.close()
    s0 = SCRAPES[0]
    want = {"ok": 4, "failed": 2, "plaintext": 1, "aborted": 2}
    m1 = wait_metric(d.http, ctx(), lambda m: all(hs(m, k) - hs(m0, k) >= v for k, v in want.items()), 10)
    want["ok"] = 3 + SCRAPES[0] - s0  # and one for each connection that fetched /metrics since
    got = {k: hs(m1, k) - hs(m0, k) for k in want}
    check('metrics: idgen_tls_handshakes_total ok +3 (and +1 a scrape), failed +2, plaintext +1, aborted +2',
          got == want, "got %r, want %r" % (got, want))
    check("the aborted handshakes are not logged as tls_failed", "tls_failed" not in d.log()[log0:],
          d.log()[log0:][-400:])
    try:
        plain = Daemon("plain")
        r, det = curl(plain.http, "/info")
        info = json_body(r) if r else None
        check('a daemon without tls_cert: /info has "tls": false', info is not None and info.get("tls") is False,
              det or short(r.body, 300))
        plain.stop()
    except StartError as e:
        check('a daemon without tls_cert: /info has "tls": false', False, str(e))


def tls_nonreader(d, out):
    """A TLS client that sends `ID 1000` until it is blocked and never reads:
    out["closed"] = seconds until the daemon closed it (metrics: reason
    output or slow), None if not within 12 s."""
    def base(m):
        return sum((mget(m, "idgen_connections_closed_total", reason=r) or 0) for r in ("output", "slow"))
    m0 = tls_metrics(d.http, ctx())
    c = TLSConn(d.resp, ctx())
    c.s.settimeout(0.3)
    t0, sent = time.monotonic(), 0
    try:
        while time.monotonic() - t0 < 5:
            c.s.sendall(b"ID 1000\r\n" * 50)
            sent += 50
    except (OSError, ssl.SSLError):
        pass  # blocked (or closed already)
    out["sent"], out["closed"], out["probes"] = sent, None, []
    while time.monotonic() - t0 < 12:
        t1 = time.monotonic()
        r = tls_http(d.http, ctx(), "/health")
        out["probes"].append((isinstance(r, HttpResp) and r.status == 200, round(time.monotonic() - t1, 3)))
        if base(tls_metrics(d.http, ctx())) > base(m0):
            out["closed"] = time.monotonic() - t0
            break
        time.sleep(0.2)
    c.close()


def tls_stall_after_handshake(port, payload, out, key):
    """A TLS connection that sends `payload` (maybe nothing) after its
    handshake, then nothing: out[key] = (seconds to EOF or None, bytes)."""
    c = TLSConn(port, ctx())
    try:
        if payload:
            c.send(payload)
        t0 = time.monotonic()
        try:
            closed = c.read_to_eof(SLOW_MS / 1000 + IDLE_MS / 1000 + 3)
        except (ssl.SSLError, OSError):
            closed = True
        out[key] = (time.monotonic() - t0 if closed else None, c.buf)
    finally:
        c.close()


def group_after_handshake(d):
    """Past the handshake, slow_timeout_ms, idle_timeout_ms and
    max_output_bytes hold as on plain connections (the main daemon's
    SLOW_MS, IDLE_MS and MAX_OUT); the three at once."""
    out = {}
    jobs = [threading.Thread(target=tls_nonreader, args=(d, out)),
            threading.Thread(target=tls_stall_after_handshake,
                             args=(d.http, b"GET /id HTTP/1.1\r\nHo", out, "partial")),
            threading.Thread(target=tls_stall_after_handshake, args=(d.resp, b"", out, "idle"))]
    for t in jobs:
        t.start()
    for t in jobs:
        t.join()
    closed, got = out.get("partial", (None, b""))
    lo, hi = SLOW_MS / 1000 - 0.3, SLOW_MS / 1000 + 1.2
    check("TLS, a request stalled mid-head: closed %.1f..%.1fs after it (got %s)"
          % (lo, hi, "never" if closed is None else "%.2fs" % closed),
          closed is not None and lo <= closed <= hi, short(got))
    closed, got = out.get("idle", (None, b""))
    lo, hi = IDLE_MS / 1000 - 0.3, IDLE_MS / 1000 + 1.5
    check("TLS, idle after the handshake: closed %.1f..%.1fs after it (got %s)"
          % (lo, hi, "never" if closed is None else "%.2fs" % closed),
          closed is not None and lo <= closed <= hi, short(got))
    check("TLS, a client that never reads (%d x ID 1000 sent): closed (reason output or slow) within 12s"
          % out.get("sent", 0), out.get("closed") is not None, out)
    probes = out.get("probes", [])
    check("... others served meanwhile (%d probes, all 200 within 2s)" % len(probes),
          probes and all(ok and dt < 2 for ok, dt in probes), probes)


def stall(port, payload, result, key):
    """Connects, sends `payload` (maybe nothing) and nothing more:
    result[key] = (seconds from connect to the daemon's close or None, bytes got)."""
    slow_client(port, payload, False, result, key)


def client_hello():
    """The bytes of a real TLS ClientHello, made by Python's ssl."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ctx().wrap_bio(inc, out, server_hostname=HOST)
    try:
        o.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def group_slow():
    d = Daemon("slow", tls_args() + ["--slow-timeout-ms", "1000", "--idle-timeout-ms", "30000"])
    try:
        m0 = tls_metrics(d.http, ctx())
        hello = client_hello()
        res = {}
        jobs = [("sends nothing", d.http, b""), ("sends 20 bytes of a ClientHello", d.http, hello[:20]),
                ("sends a whole ClientHello, never its Finished", d.resp, hello)]
        stallers = [threading.Thread(target=stall, args=(port, data, res, name)) for name, port, data in jobs]
        for t in stallers:
            t.start()
        time.sleep(0.1)
        lat, bad = [], []

        def one_client(k):
            for i in range(20):
                t0 = time.monotonic()
                try:
                    if i % 2:
                        r = tls_resp(d.resp, ctx(), "ID")
                        good = isinstance(r, int)
                    else:
                        r = tls_http(d.http, ctx(), "/id")
                        good = isinstance(r, HttpResp) and r.status == 200 and digits_lines(r.body)
                except Exception as e:  # noqa: BLE001
                    r, good = e, False
                lat.append(time.monotonic() - t0)
                if not good:
                    bad.append(r)
        t_start = time.monotonic()
        clients = [threading.Thread(target=one_client, args=(k,)) for k in range(5)]
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        took = time.monotonic() - t_start
        for t in stallers:
            t.join()
        check("100 TLS clients (5 threads, a new connection each) got IDs while 3 handshakes stalled",
              len(lat) == 100 and not bad, "%d bad: %s" % (len(bad), short(bad[:3])))
        check("... none waited for the stalled ones (slowest %.3fs < 0.9s; all in %.2fs)" % (max(lat or [9]), took),
              lat and max(lat) < 0.9, "machine stood still %.1fs" % stalled_since(t_start))
        for name, _, _ in jobs:
            closed, got = res.get(name, (None, b""))
            check("slow_timeout_ms 1000: a handshake that %s is closed 0.8..3s after connect (got %s)"
                  % (name, "never" if closed is None else "%.2fs" % closed),
                  closed is not None and 0.8 <= closed <= 3.0, "sent back %s" % short(got, 120))
        m1 = wait_metric(d.http, ctx(), lambda m: (mget(m, "idgen_connections_closed_total", reason="slow") or 0) -
                         (mget(m0, "idgen_connections_closed_total", reason="slow") or 0) >= 3)
        dslow = (mget(m1, "idgen_connections_closed_total", reason="slow") or 0) - \
            (mget(m0, "idgen_connections_closed_total", reason="slow") or 0)
        check('metrics: idgen_connections_closed_total{reason="slow"} +3', dslow == 3, "+%r" % dslow)
        r = tls_http(d.http, ctx(), "/health")
        check("still served after the stalled handshakes", isinstance(r, HttpResp) and r.status == 200, r)
    finally:
        rc = d.stop()
        check("the slow-timeout daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def fingerprint(port):
    """The DER certificate a new TLS connection is shown, or the exception."""
    try:
        c = TLSConn(port, ctx())
    except Exception as e:  # noqa: BLE001
        return e
    try:
        return c.s.getpeercert(binary_form=True)
    finally:
        c.close()


def wait_for_log(d, start, pattern, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if re.search(pattern, d.log()[start:]):
            return True
        time.sleep(0.05)
    return False


def group_sighup():
    live = os.path.join(TMP, "live")
    os.makedirs(live, exist_ok=True)
    cert, key = os.path.join(live, "server.pem"), os.path.join(live, "server.key")
    copy_to(PKI["server"], cert, 0o644)
    copy_to(PKI["server_key"], key)
    d = Daemon("sighup", ["--tls-cert", cert, "--tls-key", key])
    fp1, fp2 = der(PKI["server"]), der(PKI["server2"])
    try:
        check("before SIGHUP: a new connection is shown the first certificate", fingerprint(d.http) == fp1)
        k = TLSConn(d.http, ctx())  # opened before the reload, kept alive
        k.send(http_req("/id"))
        first = k.http()
        rconn = TLSConn(d.resp, ctx())
        rconn.send(resp_cmd("ID"))
        rfirst = rconn.resp()
        copy_to(PKI["server2"], cert, 0o644)
        copy_to(PKI["server2_key"], key)
        d.p.send_signal(signal.SIGHUP)
        deadline, fp = time.monotonic() + 10, None
        while time.monotonic() < deadline:
            fp = fingerprint(d.http)
            if fp == fp2:
                break
            time.sleep(0.05)
        check("SIGHUP with the files replaced: a new HTTP connection is shown the second certificate", fp == fp2,
              fp if not isinstance(fp, bytes) else "still the first" if fp == fp1 else "another")
        c = TLSConn(d.resp, ctx())
        check("... and a new RESP connection too", c.s.getpeercert(binary_form=True) == fp2)
        c.close()
        k.send(http_req("/id"))
        after = k.http()
        check("an HTTPS connection opened before the SIGHUP still gets IDs",
              first.status == 200 and after.status == 200 and digits_lines(after.body), (first, after))
        rconn.send(resp_cmd("ID"))
        rafter = rconn.resp()
        check("a RESP connection opened before the SIGHUP still gets IDs",
              isinstance(rfirst, int) and isinstance(rafter, int) and rafter > rfirst, (rfirst, rafter))
        # A key that does not match: the reload fails, the second certificate stays.
        at = len(d.log())
        copy_to(PKI["server_key"], key)
        d.p.send_signal(signal.SIGHUP)
        logged = wait_for_log(d, at, r"(?i)tls")
        check("SIGHUP with a key that does not match the certificate: logged (a line naming tls)", logged,
              d.log()[at:][-400:])
        fp = fingerprint(d.http)
        r = tls_http(d.http, ctx(), "/id")
        check("... the daemon runs on, new connections shown the second certificate, served",
              d.alive() and fp == fp2 and isinstance(r, HttpResp) and r.status == 200, (d.alive(), r))
        # A key others may read: refused at reload too.
        copy_to(PKI["server"], cert, 0o644)
        copy_to(PKI["server_key"], key, 0o644)
        at = len(d.log())
        d.p.send_signal(signal.SIGHUP)
        logged = wait_for_log(d, at, r"chmod o-rwx")
        fp = fingerprint(d.http)
        check("SIGHUP with a key others may read: refused (chmod o-rwx logged), the second certificate kept",
              logged and d.alive() and fp == fp2, d.log()[at:][-400:])
        os.chmod(key, 0o600)
        d.p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and fingerprint(d.http) != fp1:
            time.sleep(0.05)
        check("after the failed reloads, a good one still works (back to the first certificate)",
              fingerprint(d.http) == fp1)
        k.send(http_req("/id"))
        r = k.http()
        check("the connection opened before all the reloads still gets IDs", r.status == 200, r)
        k.close()
        rconn.close()
        # Reloads while handshakes are in flight: a new connection per request, the
        # certificate flipped and SIGHUP sent 20 times meanwhile.
        p = subprocess.Popen(["redis-benchmark", "--tls", "--cacert", PKI["ca"], "-h", HOST, "-p", str(d.resp),
                              "-c", "10", "-n", "1500", "-k", "0", "-q", "ID"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        CHILDREN.append(p)
        for i in range(20):
            src = "server2" if i % 2 == 0 else "server"
            copy_to(PKI[src], cert, 0o644)
            copy_to(PKI[src + "_key"], key)
            d.p.send_signal(signal.SIGHUP)
            time.sleep(0.05)
        try:
            out = p.communicate(timeout=60)[0].decode(errors="replace")
        except subprocess.TimeoutExpired:
            p.kill()
            out = "redis-benchmark hung: " + p.communicate()[0].decode(errors="replace")
        r = tls_http(d.http, ctx(), "/health")
        check("20 SIGHUPs (the certificate flipped) while redis-benchmark --tls -k 0 makes 1500 connections: "
              "all answered, the daemon serves on", p.returncode == 0 and "requests per second" in out
              and "rror" not in out and d.alive() and isinstance(r, HttpResp) and r.status == 200,
              (p.returncode, out[-300:], r))
    finally:
        rc = d.stop()
        check("the SIGHUP daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_chain():
    try:
        d = Daemon("chain", ["--tls-cert", PKI["chain"], "--tls-key", PKI["leaf_inter_key"]])
    except StartError as e:
        check("a tls_cert file holding a chain (leaf, intermediate): starts", False, str(e))
        return
    try:
        r, det, err = curls(d.http, "/id")
        check("a tls_cert file holding a chain (leaf, intermediate): curl trusting only the root gets an ID",
              r is not None and r.status == 200, det)
    finally:
        d.stop()


def issued(m, agent):
    return mget(m, "idgen_ids_issued_total", kind="snowflake", agent=agent) or 0


def group_mtls():
    ca_live = os.path.join(TMP, "client-ca.pem")
    copy_to(PKI["ca"], ca_live, 0o644)
    d = Daemon("mtls", tls_args() + ["--tls-client-ca", ca_live])
    good = ctx("client")
    try:
        m0 = tls_metrics(d.http, good)
        refusals = [
            ("Python ssl, no certificate, HTTP", refused(d.http, ctx(), http_req("/id"), "http")),
            ("Python ssl, no certificate, RESP", refused(d.resp, ctx(), resp_cmd("ID"), "resp")),
            ("Python ssl, another CA's certificate (CN app-one)",
             refused(d.http, ctx("client_other"), http_req("/id"), "http")),
            ("Python ssl, an expired certificate of the CA (CN app-one)",
             refused(d.http, ctx("client_expired"), http_req("/id"), "http")),
        ]
        r, det, err = curls(d.http, "/id")
        refusals.append(("curl, no certificate", (r is None, det)))
        r, det, err = curls(d.http, "/id", "--cert", PKI["client_other"], "--key", PKI["client_other_key"])
        refusals.append(("curl, another CA's certificate", (r is None, det)))
        rc, out, err = rcli_tls(d.resp, "ID")
        refusals.append(("redis-cli --tls, no certificate", (not re.search(r"\(integer\)", out), out + err)))
        for what, (ok, detail) in refusals:
            check("tls_client_ca: %s: turned away, no ID" % what, ok, detail)
        n = 0
        r, det, err = curls(d.http, "/id?count=3", "--cert", PKI["client"], "--key", PKI["client_key"])
        ids = digits_lines(r.body) if r else None
        check("tls_client_ca: curl --cert (CN app-one): /id?count=3, 3 IDs", ids and len(ids) == 3, det or r)
        n += len(ids or [])
        rc, out, err = rcli_tls(d.resp, "ID", cert="client")
        check("tls_client_ca: redis-cli --tls --cert --key: ID", re.fullmatch(r"\(integer\) \d+\n", out), out + err)
        n += 1 if re.fullmatch(r"\(integer\) \d+\n", out) else 0
        if redis is not None:
            try:
                v = redis.Redis(host=HOST, port=d.resp, ssl=True, ssl_ca_certs=PKI["ca"], ssl_certfile=PKI["client"],
                                ssl_keyfile=PKI["client_key"], socket_timeout=10).execute_command("ID")
            except redis.exceptions.RedisError as e:
                v = e
            check("tls_client_ca: redis-py with ssl_certfile: ID", isinstance(v, int), repr(v))
            n += 1 if isinstance(v, int) else 0
        r = tls_http(d.http, good, "/id?count=5")
        ids = digits_lines(r.body) if isinstance(r, HttpResp) else None
        check("tls_client_ca: Python ssl with the certificate: /id?count=5", ids and len(ids) == 5, r)
        n += len(ids or [])
        r = tls_http(d.http, ctx("client_badcn"), "/id?count=4")
        ids_bad = digits_lines(r.body) if isinstance(r, HttpResp) else None
        check("tls_client_ca: a certificate whose CN is no agent name ('9 no agent'): served",
              ids_bad and len(ids_bad) == 4, r)
        want_fail = len(refusals)
        m1 = wait_metric(d.http, good, lambda m: issued(m, "app-one") - issued(m0, "app-one") >= n and
                         hs(m, "failed") - hs(m0, "failed") >= want_fail, 10)
        check("metrics: the %d IDs asked with the certificate counted under agent app-one (its CN)" % n,
              n == 10 and issued(m1, "app-one") - issued(m0, "app-one") == n,
              "+%r" % (issued(m1, "app-one") - issued(m0, "app-one")))
        labels = {dict(ls).get("agent") for (nm, ls) in m1 if nm == "idgen_ids_issued_total"}
        total = msum(m1, "idgen_ids_issued_total", kind="snowflake") - msum(m0, "idgen_ids_issued_total",
                                                                            kind="snowflake")
        check("metrics: the CN that is no agent name is no agent label; its 4 IDs counted (all agents +%d)" % (n + 4),
              not any(a and "no agent" in a for a in labels) and total == n + 4, (sorted(labels), total))
        check("metrics: idgen_tls_handshakes_total{result=\"failed\"} +%d (each refused client)" % want_fail,
              hs(m1, "failed") - hs(m0, "failed") == want_fail, "+%r" % (hs(m1, "failed") - hs(m0, "failed")))
        r = tls_http(d.http, ctx("client_chain"), "/id?count=2")
        m2 = tls_metrics(d.http, good)
        check("tls_client_ca: a client certificate under an intermediate, sent with its chain: served, agent app-two",
              isinstance(r, HttpResp) and r.status == 200 and issued(m2, "app-two") == 2, (r, issued(m2, "app-two")))
        # SIGHUP reads tls_client_ca again: now only the other CA's clients.
        copy_to(PKI["other_ca"], ca_live, 0o644)
        d.p.send_signal(signal.SIGHUP)
        deadline, r = time.monotonic() + 10, None
        while time.monotonic() < deadline:
            r = tls_http(d.http, ctx("client_other"), "/id")
            if isinstance(r, HttpResp):
                break
            time.sleep(0.05)
        check("SIGHUP with tls_client_ca replaced: the other CA's client is served", isinstance(r, HttpResp) and
              r.status == 200, r)
        ok, detail = refused(d.http, good, http_req("/id"), "http")
        check("... and the first CA's client is turned away", ok, detail)
    finally:
        rc = d.stop()
        check("the mutual-TLS daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_mtls_auth():
    path = os.path.join(TMP, "tokens")
    write(path, "app %s\n" % TOKEN)
    d = Daemon("mtls-auth", tls_args(ca="ca") + ["--auth-file", path])
    good = ctx("client")
    try:
        rc, out, err = rcli_tls(d.resp, "ID", cert="client")
        check("auth_file and tls_client_ca: redis-cli with the certificate, no AUTH: ID",
              re.fullmatch(r"\(integer\) \d+\n", out), out + err)
        r = tls_resp(d.resp, good, "ID", "2")
        check("auth_file and tls_client_ca: raw RESP ID 2 without AUTH: two IDs (no NOAUTH)",
              isinstance(r, list) and len(r) == 2, r)
        r = tls_http(d.http, good, "/id?count=3")
        ids = digits_lines(r.body) if isinstance(r, HttpResp) and r.status == 200 else None
        check("auth_file and tls_client_ca: HTTP /id?count=3 without Authorization: 200", ids and len(ids) == 3, r)
        r, det, err = curls(d.http, "/id", "--cert", PKI["client"], "--key", PKI["client_key"])
        check("auth_file and tls_client_ca: curl --cert, no token: 200", r is not None and r.status == 200, det or r)
        m = tls_metrics(d.http, good)  # /metrics needs authentication too: the certificate is it
        check("auth_file and tls_client_ca: /metrics with the certificate; app-one's 7 IDs under agent app-one",
              issued(m, "app-one") == 7, issued(m, "app-one"))
        r = tls_resp(d.resp, ctx("client_badcn"), "ID")
        check("auth_file and tls_client_ca: a verified certificate whose CN is no agent name: ID without AUTH",
              isinstance(r, int), r)
        r = tls_resp(d.resp, good, "AUTH", "app", TOKEN)
        check("auth_file and tls_client_ca: AUTH with a good token is still taken", r == "OK", r)
    finally:
        rc = d.stop()
        check("the mutual-TLS daemon with auth_file: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_env_config_thrift():
    """The settings as environment variables and config-file keys; Thrift
    beside them stays plain text."""
    conf = os.path.join(TMP, "tls.conf")
    write(conf, "tls_cert = %s\ntls_key = %s\n" % (PKI["server"], PKI["server_key"]), 0o644)
    try:
        d = Daemon("config", ["--config", conf, "--thrift", HOST + ":0"])
    except StartError as e:
        check("tls_cert and tls_key in a config file: the daemon starts", False, str(e))
        return
    try:
        r = tls_http(d.http, ctx(), "/id")
        check("tls_cert and tls_key in a config file: HTTPS served", isinstance(r, HttpResp) and r.status == 200, r)
        m = re.search(r"event=listen proto=thrift addr=127\.0\.0\.1:(\d+)", d.log())
        got = b""
        if m:
            s = socket.create_connection((HOST, int(m.group(1))), timeout=5)
            name = b"get_worker_id"
            payload = struct.pack(">II", 0x80010001, len(name)) + name + struct.pack(">i", 7) + b"\x00"
            s.sendall(struct.pack(">I", len(payload)) + payload)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    part = s.recv(4096)
                except OSError:
                    break
                if not part:
                    break
                got += part
                if len(got) >= 4 and len(got) >= 4 + struct.unpack(">I", got[:4])[0]:
                    break
            s.close()
        check("Thrift beside TLS stays plain text: get_worker_id answered (REPLY, worker 17)",
              got[4:8] == struct.pack(">I", 0x80010002) and struct.pack(">q", WORKER) in got, short(got))
    finally:
        d.stop()
    try:
        d = Daemon("env", env_extra={"IDGEN_TLS_CERT": PKI["server"], "IDGEN_TLS_KEY": PKI["server_key"],
                                     "IDGEN_TLS_CLIENT_CA": PKI["ca"]})
    except StartError as e:
        check("IDGEN_TLS_CERT, IDGEN_TLS_KEY and IDGEN_TLS_CLIENT_CA: the daemon starts", False, str(e))
        return
    try:
        r = tls_http(d.http, ctx("client"), "/id")
        ok, detail = refused(d.http, ctx(), http_req("/id"), "http")
        check("IDGEN_TLS_CERT, IDGEN_TLS_KEY and IDGEN_TLS_CLIENT_CA: HTTPS with a client certificate, none refused",
              isinstance(r, HttpResp) and r.status == 200 and ok, (r, detail))
    finally:
        d.stop()


def group_js_tls(node_modules):
    """ioredis 5 and node-redis 4 over TLS (js_clients_tls.mjs), trusting the
    CA; run by suite_js_clients.py, which installs them."""
    pki()
    d = Daemon("js-tls", tls_args())
    try:
        p = subprocess.run(["node", os.path.join(HERE, "js_clients_tls.mjs"), node_modules, str(d.resp), PKI["ca"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        try:
            out = json.loads(p.stdout.decode())
        except ValueError:
            check("node js_clients_tls.mjs prints its results as JSON", False,
                  (p.stdout[:500], p.stderr.decode(errors="replace")[-1000:]))
            return
        for key, what, n in (("ioredis", "ioredis 5 with tls: { ca }: IDSTR, IDSTR 3, a pipeline of 100 IDSTR", 104),
                             ("noderedis", "node-redis 4 with socket: { tls: true, ca }: IDSTR, IDSTR 3", 4)):
            got = out.get(key, [])
            ok = isinstance(got, list) and len(got) == n and all(re.fullmatch(r"[1-9][0-9]*", x) for x in got)
            check("%s: %d IDs" % (what, n), ok and increasing([int(x) for x in got]), short(got))
    finally:
        d.stop()


if __name__ == "__main__":
    run_suite("tls",
              before=[("certificates", group_pki), ("refused at start", group_refusals)],
              with_daemon=[("HTTPS", group_https), ("RESP over TLS", group_resp),
                           ("plain text on the TLS ports", group_plaintext), ("handshake counters", group_metrics),
                           ("slow, idle and non-reading TLS clients", group_after_handshake)],
              after=[("stalled handshakes", group_slow), ("SIGHUP", group_sighup), ("a chain file", group_chain),
                     ("mutual TLS", group_mtls), ("mutual TLS with auth_file", group_mtls_auth),
                     ("environment, config file, Thrift", group_env_config_thrift)],
              snow_kinds=["curl", "python-ssl", "redis-cli", "redis-py"])
