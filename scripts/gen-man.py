#!/usr/bin/python3
"""gen-man.py -- the man pages, made at build time from what they describe.

  gen-man.py cli IDGEN OUT          idgen(1): `idgen --help`, and `idgen CMD --help`
                                    for every command that help lists
  gen-man.py serve IDGEN SERVE_MD OUT [SYSCONFDIR]
                                    idgen-serve(1): `idgen serve --help`, the
                                    settings from `idgen serve --settings-man`
                                    (src/common/settings.c's table), the HTTP,
                                    RESP and Thrift tables of docs/SERVE.md
  gen-man.py lib IDGEN_H OUT        libidgen(3): include/idgen.h, its comments
                                    and declarations as they are

Nothing a command or a function says is written here a second time: the
help texts, the settings table, the header and docs/SERVE.md are each the
one place, and tests/man_test.sh checks that every command, setting, route
and function is in the pages.  What is written here is what only a man page
has: the sections around them (signals, systemd, files).

SOURCE_DATE_EPOCH, when set, dates the pages (reproducible builds).
"""
import datetime
import os
import re
import subprocess
import sys

# ---- roff ---------------------------------------------------------------------


def esc(text, code=False):
    """Text for roff: backslashes as \\e, non-ASCII as \\[uXXXX], and hyphens
    as \\- in code and in words that are options (so that they copy as
    hyphen-minus); a line never starts with a control character."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\e")
        elif ord(ch) > 127:
            out.append("\\[u%04X]" % ord(ch))
        else:
            out.append(ch)
    s = "".join(out)
    if code:
        s = s.replace("-", "\\-")
    else:
        # -n, --layout, [--json], (--max-batch ...: an option where a word starts
        s = re.sub(r"(^|[\s\[(|'\"=,])(-{1,2})(?=[A-Za-z0-9])",
                   lambda m: m.group(1) + "\\-" * len(m.group(2)), s)
        s = re.sub(r"(?<=\\-)([a-z0-9]+)-(?=[a-z])", r"\1\\-", s)  # --max-batch
        while True:
            t = re.sub(r"(\\-[a-z0-9]+(?:\\-[a-z0-9]+)*)-(?=[a-z0-9])", r"\1\\-", s)
            if t == s:
                break
            s = t
    return s


def line(text):
    """A text line: one that would start with a control character gets \\&."""
    return "\\&" + text if text[:1] in (".", "'") else text


def md_inline(text):
    """A Markdown table cell as roff: `code` bold, **bold**, [text](link) as
    text, \\| as |."""
    text = text.replace("\\|", "|")
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    parts = re.split(r"(`[^`]*`|\*\*[^*]+\*\*)", text)
    out = []
    for p in parts:
        if p.startswith("`") and p.endswith("`") and len(p) >= 2:
            out.append("\\fB" + esc(p[1:-1], code=True) + "\\fR")
        elif p.startswith("**") and p.endswith("**"):
            out.append("\\fB" + esc(p[2:-2]) + "\\fR")
        else:
            out.append(esc(p))
    return "".join(out)


def th(name, section, version, manual):
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
            else datetime.datetime.now(datetime.timezone.utc))
    return ['.TH %s %s "%s" "idgen %s" "%s"' % (name.upper(), section, when.strftime("%Y-%m-%d"),
                                                  version, manual)]


def run(*argv):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("gen-man: %s exited with %d: %s" % (" ".join(argv), r.returncode, r.stderr))
    return r.stdout


# ---- help texts -----------------------------------------------------------------
#
# A --help is: "Usage:" lines, paragraphs, lists of terms (options,
# commands) whose descriptions start in one column, headings ("Settings:",
# "Examples:") and an "Exit status:" paragraph.  Whatever does not parse as
# one of them is kept as it is, without filling (.nf), so that nothing is
# lost.


def indent_of(s):
    return len(s) - len(s.lstrip(" "))


def parse_help(text):
    """Splits a help text into (usage lines, items); an item is
    ("para", text), ("heading", text), ("list", [(term, desc)]),
    ("pre", [lines]) or ("exit", text)."""
    lines = text.rstrip("\n").split("\n")
    usage, items = [], []
    blocks, cur = [], []
    for ln in lines:
        if ln.strip():
            cur.append(ln.rstrip())
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    for b in blocks:
        if b[0].startswith("Usage:"):
            usage.append(b[0][len("Usage:"):].strip())
            for ln in b[1:]:
                if ln.strip().startswith("idgen "):
                    usage.append(ln.strip())
                else:  # a usage line's continuation
                    usage[-1] += " " + ln.strip()
            continue
        if b[0].startswith("Exit status:"):
            items.append(("exit", " ".join(x.strip() for x in b)[len("Exit status:"):].strip()))
            continue
        # Runs of unindented lines (text) and indented ones (lists, examples).
        runs = []
        for ln in b:
            kind = "text" if indent_of(ln) == 0 else "ind"
            if runs and runs[-1][0] == kind:
                runs[-1][1].append(ln)
            else:
                runs.append((kind, [ln]))
        heading = None
        for i, (kind, rl) in enumerate(runs):
            if kind == "text":
                if (len(rl) == 1 and rl[0].endswith(":") and len(rl[0]) < 30
                        and i + 1 < len(runs)):
                    heading = rl[0][:-1]
                    items.append(("heading", heading))
                else:
                    items.append(("para", " ".join(x.strip() for x in rl)))
                    heading = None
                continue
            if heading == "Examples":
                items.append(("pre", rl))
                continue
            parsed = parse_terms(rl)
            items.append(("list", parsed) if parsed is not None else ("pre", rl))
    return usage, items


TERM_RE = re.compile(r"^( +)(\S(?:.*?\S)?)(?: {2,}(\S.*))?$")


def parse_terms(rl):
    """Indented lines as a term list, or None.  A term starts at the run's
    least indentation or with an option (indented at most 8); description
    lines are indented further than its term."""
    base = min(indent_of(x) for x in rl)
    entries = []
    for ln in rl:
        ind = indent_of(ln)
        is_term = ind == base or (ind <= 8 and ln.lstrip().startswith("-"))
        if is_term:
            m = TERM_RE.match(ln)
            if not m:
                return None
            entries.append([m.group(2), [m.group(3)] if m.group(3) else [], len(m.group(1))])
        elif entries and ind > entries[-1][2]:
            entries[-1][1].append(ln.strip())
        else:
            return None
    # A term whose description starts one space after it ("--max-borrow-ms N
    # the generator's ..."): split it at the column the others' start in.
    cols = [len(ln) - len(TERM_RE.match(ln).group(3)) for ln in rl
            if TERM_RE.match(ln) and TERM_RE.match(ln).group(3)]
    if cols:
        col = max(set(cols), key=cols.count)
        for e in entries:
            raw = " " * e[2] + e[0]
            if not e[1] and len(raw) > col and raw[col - 1] == " " and raw[col] != " ":
                e[0], e[1] = raw[:col].strip(), [raw[col:]]
    return [(t, " ".join(d)) for t, d, _ in entries]


def term_roff(term):
    """-n, --count N  ->  \\fB\\-n\\fR, \\fB\\-\\-count\\fR \\fIN\\fR; a word
    that is not an option is a command name (bold) or an argument (italic)."""
    if not term.startswith("-"):
        if re.fullmatch(r"[a-z][a-z0-9]*", term):
            return "\\fB" + term + "\\fR"
        return esc(term)
    out = []
    for word in term.split(" "):
        m = re.fullmatch(r"(-[^\[,]*)(\[=?[^\]]*\])?(,?)", word)
        if m:
            opt = "\\fB" + esc(m.group(1), code=True) + "\\fR"
            if m.group(2):
                inner = m.group(2)
                opt += "[" + ("=" if inner.startswith("[=") else "") + "\\fI" + \
                    esc(inner.strip("[]=")) + "\\fR]"
            out.append(opt + m.group(3))
        elif word:
            out.append("\\fI" + esc(word, code=True) + "\\fR")
    return " ".join(out)


def usage_roff(u):
    """idgen snowflake [-n N] ... -> the command bold, the rest escaped."""
    m = re.match(r"(idgen(?: [a-z][a-z0-9]*)?)(?= |$)(.*)", u)
    if not m:
        return line(esc(u))
    rest = m.group(2)
    # "idgen registry list": a subcommand word is part of the command
    m2 = re.match(r"( [a-z]+)(?= |$)(.*)", rest)
    cmd = m.group(1)
    if m2 and m.group(1) != "idgen":
        cmd += m2.group(1)
        rest = m2.group(2)
    return "\\fB" + cmd + "\\fR" + esc(rest)


def items_roff(items, skip_headings=()):
    out = []
    for kind, val in items:
        if kind == "para":
            out += [".PP", line(esc(val))]
        elif kind == "heading":
            if val not in skip_headings:
                out += [".PP", "\\fB" + esc(val) + "\\fR"]
        elif kind == "list":
            for term, desc in val:
                out += [".TP", term_roff(term)]
                out.append(line(esc(desc)) if desc else ".")
        elif kind == "pre":
            base = min(indent_of(x) for x in val)
            out += [".PP", ".RS 4", ".EX"] + [line(esc(x[base:], code=True)) for x in val] + \
                   [".EE", ".RE"]
        elif kind == "exit":
            out += [".PP", "Exit status: " + line(esc(val))]
    # A .TP with an empty description: drop the "." placeholder line.
    return [x for x in out if x != "."]


# ---- idgen(1) -------------------------------------------------------------------


def gen_cli(idgen, out_path):
    version = run(idgen, "--version").split()[-1]
    top_usage, top = parse_help(run(idgen, "--help"))
    commands = []
    for kind, val in top:
        if kind == "list" and all(re.fullmatch(r"[a-z][a-z0-9]*", t) for t, _ in val):
            commands = val
    if not commands:
        sys.exit("gen-man: `idgen --help` lists no commands")
    paras = [v for k, v in top if k == "para"]
    summary = paras[0].rstrip(".")
    summary = summary[0].lower() + summary[1:]
    r = th("idgen", 1, version, "User Commands")
    r += [".SH NAME", "idgen \\- " + esc(summary)]
    r += [".SH SYNOPSIS", ".nf"] + [usage_roff(u) for u in top_usage]
    helps = {}
    for name, _ in commands:
        helps[name] = parse_help(run(idgen, name, "--help"))
        r += [usage_roff(u) for u in helps[name][0]]
    r += [".fi", ".SH DESCRIPTION"]
    r += [line(esc(p)) if i == 0 else ".PP\n" + line(esc(p)) for i, p in enumerate(paras[:1])]
    r += [".PP",
          "\\fBidgen\\fR makes 64-bit Snowflake IDs in any bit layout, ULIDs and UUIDv7s, "
          "reads them back, and runs the daemon that hands them out "
          "(\\fBidgen serve\\fR, described in \\fBidgen\\-serve\\fR(1)).  "
          "The library it is built on is \\fBlibidgen\\fR(3).",
          ".PP", "The commands:"]
    r += items_roff([("list", commands)])
    r += [".SH OPTIONS"]
    r += items_roff([(k, v) for k, v in top if k == "list" and v is not commands])
    r += [".SH COMMANDS"]
    for name, _ in commands:
        usage, items = helps[name]
        r += [".SS " + '"idgen ' + name + '"', ".nf"] + [usage_roff(u) for u in usage] + [".fi"]
        if name == "serve":
            # The daemon has a page of its own: its summary here, the rest there.
            r += items_roff([i for i in items if i[0] == "para"][:1])
            r += [".PP", "Its options, settings, routes, signals and service integration: "
                  "\\fBidgen\\-serve\\fR(1)."]
            continue
        r += items_roff(items)
    exits = [v for k, v in top if k == "exit"] + \
        [p for p in paras if p.startswith("Exit status:")]
    r += [".SH EXIT STATUS"]
    for e in exits:
        e = e[len("Exit status:"):].strip() if e.startswith("Exit status:") else e
        r += [line(esc(e))]
    r += ["Each command's exit statuses are listed with it above."]
    rest = [p for p in paras[1:] if not p.startswith("Exit status:")]
    if rest:
        r += [".SH DIAGNOSTICS"] + [line(esc(p)) for p in rest]
    r += [".SH SEE ALSO", "\\fBidgen\\-serve\\fR(1), \\fBlibidgen\\fR(3)"]
    write(out_path, r)


# ---- idgen-serve(1) -----------------------------------------------------------


def md_table(md, header_re):
    """The rows of the first Markdown table whose header matches."""
    lines = md.split("\n")
    for i, ln in enumerate(lines):
        if ln.startswith("|") and re.search(header_re, ln):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip())[1:-1]]
                rows.append(cells)
            return rows
    sys.exit("gen-man: no table /%s/ in docs/SERVE.md" % header_re)


def table_roff(rows):
    out = []
    for cells in rows:
        # "(below)" points into docs/SERVE.md, not into this page.
        cells = [re.sub(r"\s*\(below\)|;[^;]*\bbelow$", "", c) for c in cells]
        out += [".TP", line(md_inline(cells[0])), line(md_inline(cells[1]))]
    return out


def gen_serve(idgen, serve_md, out_path, sysconfdir):
    version = run(idgen, "--version").split()[-1]
    usage, items = parse_help(run(idgen, "serve", "--help"))
    settings = run(idgen, "serve", "--settings-man")
    md = open(serve_md, encoding="utf-8").read()
    paras = [v for k, v in items if k == "para"]
    r = th("idgen-serve", 1, version, "User Commands")
    r += [".SH NAME", "idgen\\-serve \\- the idgen daemon: unique, time-ordered IDs over "
          "HTTP/1.1, the Redis protocol and Thrift"]
    r += [".SH SYNOPSIS", ".nf"] + [usage_roff(u) for u in usage] + [".fi"]
    r += [".SH DESCRIPTION"]
    for i, p in enumerate(paras):
        r += ([] if i == 0 else [".PP"]) + [line(esc(p))]
    r += [
        ".PP",
        "The HTTP listener answers \\fBGET\\fR (and \\fBHEAD\\fR) on:",
        ".TP", "\\fB/id\\fR, \\fB/ulid\\fR, \\fB/uuid7\\fR",
        "one ID of the kind, or \\fB?count=\\fR\\fIN\\fR of them, one a line "
        "(\\fB?format=json\\fR for JSON; \\fB?agent=\\fR\\fINAME\\fR to be counted apart);",
        ".TP", "\\fB/decode/\\fR\\fIID\\fR",
        "what the ID holds, as \\fBidgen decode \\-\\-json\\fR prints it;",
        ".TP", "\\fB/info\\fR",
        "the daemon's settings, lease and clock as JSON;",
        ".TP", "\\fB/health\\fR",
        "\\fBok\\fR while the daemon is alive (every event loop turns), or 503 naming the "
        "stalled loop: for a liveness probe;",
        ".TP", "\\fB/ready\\fR",
        "\\fBok\\fR, or 503 and the reason while no ID can be issued now (lease, clock, a "
        "graceful stop): for a readiness probe;",
        ".TP", "\\fB/metrics\\fR",
        "Prometheus metrics;",
        ".TP", "\\fB/\\fR, \\fB/status\\fR",
        "a live status page (one self-contained HTML page, updated every second from "
        "\\fB/status.json\\fR, its data): IDs per second, the clock, the lease, "
        "connections, latency, the layout's days left; what is wrong is red and says why.",
        ".PP",
        "The details of each, from the project's manual (docs/SERVE.md), are in "
        "\\fBHTTP\\fR, \\fBRESP\\fR and \\fBTHRIFT\\fR below.",
    ]
    opts = [(k, v) for k, v in items if k == "list" and any(t.startswith("--config") for t, _ in v)]
    r += [".SH OPTIONS"] + items_roff(opts)
    r += [".SH SETTINGS",
          "Each setting is a flag, an environment variable and a key of the configuration "
          "file (\\fB\\-\\-config\\fR \\fIFILE\\fR or \\fBIDGEN_CONFIG\\fR, lines of "
          "\\fIkey\\fR = \\fIvalue\\fR, \\fB#\\fR comments); flags win over the environment, "
          "which wins over the file.  \\fB\\-\\-check\\-config\\fR prints the values in effect "
          "and where each came from."]
    r += settings.rstrip("\n").split("\n")
    r += [".SH HTTP"] + table_roff(md_table(md, r"^\| request \| answer \|"))
    r += [".PP", "Errors are one line of text/plain: 400, 404, 405, 413, 431, 501, 505, and 503 "
          "while no ID can be issued, with the reason."]
    r += [".SH RESP", "The Redis protocol (RESP2): arrays of bulk strings and inline commands, "
          "pipelined; command names in any case, so \\fBredis\\-cli\\fR and every Redis client "
          "library are clients."]
    r += table_roff(md_table(md, r"^\| command \| reply \|"))
    r += [".SH THRIFT", "With \\fB\\-\\-thrift\\fR, the interface of Twitter's Snowflake server "
          "(framed transport, binary protocol):"]
    r += table_roff(md_table(md, r"^\| method \| answer \|"))
    r += [
        ".SH SIGNALS",
        ".TP", "\\fBSIGTERM\\fR, \\fBSIGINT\\fR",
        "Drain and stop: accept no more connections, answer every whole request that has "
        "arrived, send the replies, within \\fBshutdown_timeout_ms\\fR; then write the "
        "audit lines that wait (within \\fBshutdown_timeout_ms\\fR more; those left are "
        "logged as \\fBevent=audit_lost\\fR), record the "
        "high-water mark, release the lease, remove the pid file and exit 0.",
        ".TP", "\\fBSIGHUP\\fR",
        "Reopen \\fBlog_file\\fR and \\fBaudit_log\\fR (after logrotate has moved them); "
        "\\fBsystemctl reload idgen\\fR sends it.",
        ".SH SYSTEMD",
        "The unit \\fBidgen.service\\fR (installed into the prefix's lib/systemd/system) runs "
        "\\fBidgen serve\\fR with \\fBType=notify\\fR: the daemon sends \\fBREADY=1\\fR once "
        "every listener is bound and the worker ID is leased, \\fBWATCHDOG=1\\fR while its "
        "event loops turn (\\fBWatchdogSec=\\fR), and \\fBSTOPPING=1\\fR when it drains.  "
        "It runs as the system user \\fBidgen\\fR with \\fBStateDirectory=idgen\\fR "
        "(mode 2770, group \\fBidgen\\fR), so the default registry, "
        "\\fIfile:/var/lib/idgen\\fR, is shared by every idgen on the host whose user is in "
        "group \\fBidgen\\fR, and with the usual hardening (\\fBProtectSystem=strict\\fR, \\fBNoNewPrivileges=\\fR, "
        "\\fBPrivateTmp=\\fR, a system-call filter).",
        ".PP",
        "Settings are \\fBIDGEN_*\\fR variables in \\fI%s/idgen/idgen.env\\fR, or "
        "\\fBEnvironment=\\fR lines from \\fBsystemctl edit idgen\\fR; "
        "\\fBIDGEN_CONFIG=\\fR\\fIFILE\\fR names a configuration file:" % esc(sysconfdir),
        ".PP", ".RS 4", ".EX",
        "systemctl enable \\-\\-now idgen",
        "systemctl edit idgen        # [Service] Environment=IDGEN_NODE=datacenter=1",
        "journalctl \\-u idgen",
        ".EE", ".RE",
    ]
    for k, v in items:
        if k == "exit":
            r += [".SH EXIT STATUS", line(esc(v))]
    r += [".SH ENVIRONMENT",
          ".TP", "\\fBIDGEN_\\fR\\fIKEY\\fR",
          "Each setting (\\fBSETTINGS\\fR above), below the flags and above the file.",
          ".TP", "\\fBIDGEN_CONFIG\\fR",
          "The configuration file, as \\fB\\-\\-config\\fR.",
          ".TP", "\\fBNOTIFY_SOCKET\\fR",
          "Set by systemd for \\fBType=notify\\fR (\\fBSYSTEMD\\fR above).",
          ".SH FILES",
          ".TP", "\\fI/var/lib/idgen\\fR",
          "The default registry (\\fBfile:/var/lib/idgen\\fR), one per host for every user: "
          "one lock file per node tuple, so that every idgen on the host gets its own.  A user "
          "who may not write it is refused, with what to do (join its group, or give "
          "\\fB\\-\\-registry\\fR); nobody gets a directory of their own unless they name "
          "it.  The idgen package makes it for group \\fBidgen\\fR (mode 2770); files "
          "made in a set-group-ID directory are made group-writable.",
          ".TP", "\\fI%s/idgen/idgen.env\\fR" % esc(sysconfdir),
          "The unit's settings (\\fBEnvironmentFile=\\fR), if present.",
          ".TP", "\\fIidgen.service\\fR",
          "The systemd unit."]
    examples = [i for i in items if i[0] == "pre"]
    if examples:
        r += [".SH EXAMPLES"] + items_roff(examples)
    r += [".SH SEE ALSO",
          "\\fBidgen\\fR(1), \\fBlibidgen\\fR(3), \\fBsystemd.service\\fR(5), "
          "\\fBsystemd.exec\\fR(5), \\fBredis\\-cli\\fR(1), \\fBcurl\\fR(1)"]
    write(out_path, r)


# ---- libidgen(3) --------------------------------------------------------------


def comment_roff(text_lines):
    """A comment's lines (without /* * */) as roff: paragraphs filled,
    indented lines (lists, tables) kept as they are."""
    out, para, pre = [], [], []

    def flush():
        if para:
            out.extend([".PP", line(md_inline(" ".join(para)))])
            para.clear()
        if pre:
            out.extend([".PP", ".RS 2", ".nf"] + [line(esc(x)) for x in pre] + [".fi", ".RE"])
            pre.clear()
    for ln in text_lines:
        if not ln.strip():
            flush()
        elif ln.startswith(" ") or (pre and ln.startswith("  ")):
            if para:
                flush()
            pre.append(ln)
        else:
            if pre:
                flush()
            para.append(ln.strip())
    flush()
    return out


def strip_comment(block):
    """The text of a /* ... */ comment, one entry a line."""
    text = "\n".join(block).strip()
    text = re.sub(r"^/\*+", "", text)
    text = re.sub(r"\*/$", "", text)
    res = []
    for ln in text.split("\n"):
        ln = re.sub(r"^\s*\* ?", "", ln) if re.match(r"^\s*\*", ln) else ln.strip()
        res.append(ln.rstrip())
    while res and not res[0].strip():
        res.pop(0)
    while res and not res[-1].strip():
        res.pop()
    return res


# Lines that are the header's machinery, not its API.
SKIP_LINE = re.compile(r'^(#include|#ifndef IDGEN_H|#define IDGEN_H\b|#endif|extern "C" \{|\}$)')
SKIP_BLOCK = re.compile(r"^#if(def __cplusplus| defined\(IDGEN_BUILDING\))")


def parse_header(path):
    """The header as (top comment, sections); a section is [title, intro
    lines, items], an item (comment lines, code lines): a comment and the
    declarations right below it (none if a blank line follows it)."""
    src = open(path, encoding="utf-8").read().split("\n")
    i, n = 0, len(src)
    top, sections = None, []
    cur = ["Version", [], []]  # what comes before the first section
    while i < n:
        ln = src[i]
        if SKIP_BLOCK.match(ln):
            while not src[i].startswith("#endif"):
                i += 1
            i += 1
            continue
        if not ln.strip() or SKIP_LINE.match(ln):
            i += 1
            continue
        comment = []
        if ln.startswith("/*"):
            block = [ln]
            while "*/" not in src[i]:
                i += 1
                block.append(src[i])
            i += 1
            comment = strip_comment(block)
            if top is None:
                top = comment
                continue
            if ln.startswith("/* ----"):  # a section: "Title (notes): more.  Intro..."
                if cur[0] or cur[2]:
                    sections.append(cur)
                body = comment[1:]
                k = body.index("") if "" in body else len(body)
                first = " ".join(x.strip() for x in body[:k])
                m = re.match(r"(.*?)\.(?:\s+(.*))?$", first)
                sentence, rest = (m.group(1), m.group(2)) if m else (first, None)
                title = re.sub(r"\s*\([^)]*\)", "", sentence).split(":")[0].strip()
                intro = [first] if title != sentence else ([rest] if rest else [])
                cur = [title, intro + body[k:], []]
                continue
        code = []
        while i < n and src[i].strip() and not src[i].startswith("/*") \
                and not SKIP_LINE.match(src[i]) and not SKIP_BLOCK.match(src[i]):
            code.append(src[i].replace("IDGEN_API ", "").rstrip())
            i += 1
        cur[2].append((comment, code))
    if cur[0] or cur[2]:
        sections.append(cur)
    return top or [], sections


def wrap_proto(p, width=72):
    """A prototype on lines of at most `width` where it can be, continued
    under its first parameter."""
    if len(p) <= width:
        return [p]
    col = p.index("(") + 1
    out, cur = [], ""
    for part in re.split(r"(?<=,) ", p):
        if cur and len(cur) + 1 + len(part) > width:
            out.append(cur)
            cur = " " * col + part
        else:
            cur = cur + " " + part if cur else part
    return out + [cur]


def gen_lib(header, out_path):
    hdr = open(header, encoding="utf-8").read()
    version = re.search(r'#define IDGEN_VERSION_STRING "([^"]+)"', hdr).group(1)
    top, sections = parse_header(header)
    r = th("libidgen", 3, version, "Library Functions Manual")
    r += [".SH NAME",
          "libidgen \\- unique, time-ordered IDs: Snowflake IDs in any bit layout, ULIDs, "
          "UUIDv7s, and leases of node tuples from a registry"]
    r += [".SH LIBRARY",
          "libidgen (\\fIpkg\\-config idgen\\fR, \\fB\\-lidgen\\fR); the registry's functions "
          "in libidgen\\-registry (\\fIpkg\\-config idgen\\-registry\\fR, "
          "\\fB\\-lidgen\\-registry\\fR)"]
    r += [".SH SYNOPSIS", ".nf", "\\fB#include <idgen.h>\\fR", ".fi"]
    for title, _, decls in sections:
        protos = []
        for _, code in decls:
            text = "\n".join(code)
            for m in re.finditer(r"^[A-Za-z].*?\b(idgen_[a-z0-9_]+)\s*\((?:[^;{]|\n)*?\);",
                                 text, re.M):
                if m.group(0).startswith(("typedef", "#define")):
                    continue
                protos.append(re.sub(r"\s+", " ", m.group(0)))
        if protos:
            r += [".PP", "\\fI/* %s */\\fR" % esc(title), ".nf"]
            for p in protos:
                r += ["\\fB" + esc(x, code=True) + "\\fR" for x in wrap_proto(p)]
            r += [".fi"]
    r += [".PP", "Compile and link with \\fIcc app.c $(pkg\\-config \\-\\-cflags \\-\\-libs idgen)\\fR."]
    r += [".SH DESCRIPTION"] + comment_roff(top)[1:]  # no .PP right after .SH
    for title, intro, decls in sections:
        r += [".SS " + '"' + esc(title).replace('"', "") + '"']
        r += comment_roff(intro)
        for comment, code in decls:
            code = [c for c in code]
            while code and not code[-1].strip():
                code.pop()
            if code:
                r += [".PP", ".RS 2", ".EX"] + [line(esc(c, code=True)) for c in code] + \
                     [".EE", ".RE"]
            r += comment_roff(comment)
    codes = re.findall(r'XX\((E[A-Z]+), (-\d+), "([^"]*)"\)', hdr)
    r += [".SH RETURN VALUE",
          "Functions that return \\fBint\\fR return 0 on success and a negative "
          "\\fBIDGEN_E*\\fR code on failure; \\fBidgen_strerror\\fR() names it.  "
          "The codes (\\fBIDGEN_ERRNO_MAP\\fR):"]
    for name, code, msg in codes:
        r += [".TP", "\\fBIDGEN_%s\\fR (%s)" % (name, code.replace("-", "\\-")), line(esc(msg))]
    r += [".SH EXAMPLES", ".EX"]
    r += [line(esc(x, code=True)) for x in [
        "#include <idgen.h>",
        "#include <stdio.h>",
        "",
        "int main(void) {",
        "  idgen_layout_t l;",
        "  idgen_snowflake_gen_t *g;",
        "  uint64_t id;",
        "  char err[256];",
        "  if (idgen_layout_parse(&l, \"twitter\", err, sizeof err) != 0 ||",
        "      idgen_snowflake_gen_new(&g, &l, NULL, err, sizeof err) != 0)",
        "    return fprintf(stderr, \"%s\\n\", err), 1;",
        "  if (idgen_snowflake_gen_next(g, &id) == 0)",
        "    printf(\"%llu\\n\", (unsigned long long)id);",
        "  idgen_snowflake_gen_free(g);",
        "  return 0;",
        "}"]]
    r += [".EE", ".SH SEE ALSO", "\\fBidgen\\fR(1), \\fBidgen\\-serve\\fR(1), "
          "\\fBpkg\\-config\\fR(1)"]
    write(out_path, r)


def write(path, lines):
    # No hyphenation: flags, paths and host names are copied from man pages.
    # (Before the first .SH the man macros set it again; .EE sets it to HY.)
    i = lines.index(".SH NAME")
    lines = lines[:i + 1] + [".nr HY 0", ".nh"] + lines[i + 1:]
    text = "\n".join(lines) + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write('.\\" Made by scripts/gen-man.py at build time: edit its sources, not this file.\n')
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    if len(argv) >= 3 and argv[0] == "cli":
        gen_cli(argv[1], argv[2])
    elif len(argv) >= 4 and argv[0] == "serve":
        gen_serve(argv[1], argv[2], argv[3], argv[4] if len(argv) > 4 else "/etc")
    elif len(argv) >= 3 and argv[0] == "lib":
        gen_lib(argv[1], argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
