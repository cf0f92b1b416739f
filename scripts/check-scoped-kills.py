#!/usr/bin/env python3
"""check-scoped-kills.py -- tests, scripts and benchmarks signal only the
processes they started.

  scripts/check-scoped-kills.py [--list-scoped] [FILE...]

With no FILE: every shell and Python file (by name or by its #! line) under
tests/, scripts/, bench/ and .ci/ of this repository.  Prints one line per
finding, FILE:LINE: what, and exits 1 if there is any; 0 if none; 2 on bad
usage.  ctest runs it (test `scoped_kills`) and so does .ci/run.

Why: tests/pg_ext_test.sh found the extension's worker with
`pgrep -f "idgen lease keeper" | head -1` and SIGTERMed it: on a machine where
another PostgreSQL ran the extension, that was the other server's worker
(a review found it).  A test may signal a process it recorded (its PID, a PID file it
wrote, a job of its shell, a Popen it made) or a child of one
(`pgrep -P PID`), nothing found by name or by looking at every process.

The rules:
 1. Finding processes by name, or among all of them, is flagged wherever it
    is written in the code (commands, strings, here-documents; not comments):
    pkill and pgrep without -P/--parent, killall, killall5, pidof, fuser
    (it names whoever uses a file or port), lsof -t, ps over all processes
    (-e, -A, ax, aux), a listing or glob of /proc (/proc/*, /proc/[0-9]*,
    os.listdir("/proc")), psutil, xargs kill, and stopping a system service
    (systemctl stop/kill/restart, service NAME stop).
 2. Shell `kill` (also inside trap '...', eval, sh -c and $(...)): each
    target must be recorded: a parameter ($pid, "${pids[@]}", or -"$pgid" as
    a process group), $!, a job (%1, $(jobs -p)), a PID file the script
    reads ($(cat F), $(< F), $(head -n 1 F)) or $(pgrep -P ...).  A number
    (kill 1234, kill 0, kill -- -1) or any other substitution is flagged.
    A variable's origin is not traced: rule 1 flags the unscoped ways of
    filling it, wherever they are.
 3. Python: os.kill, os.killpg and signal.pthread_kill whose target is not
    X.pid (a Popen the script made) or os.getpid(); subprocess, os.system
    and os.popen calls that run `kill` (their target cannot be judged).
    Popen.send_signal/.kill()/.terminate() are not flagged: a Popen is a
    process the script started.

The escape hatch, for a line the rules cannot judge: a comment
`# scoped: REASON` on that line (for a command that spans lines, any of its
lines), REASON saying why the target is the script's own, at least three
words.  Every such line is printed on each run, so a reviewer sees them all;
a `# scoped:` with no reason, or on a line where nothing needed it, is
itself a finding (stale excuses do not pile up).

Not checked: C (tests/*.c signal the children they forked), Makefiles,
systemd units.  This file and tests/scoped_kills_test.py, which hold the
flagged words as examples, are exempt (EXEMPT).
"""
import ast
import io
import os
import re
import sys
import tokenize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ("tests", "scripts", "bench", ".ci")
EXEMPT = {"scripts/check-scoped-kills.py", "tests/scoped_kills_test.py"}

SCOPED = re.compile(r"#\s*scoped:(.*)$")

# Rule 1: (regex, what) over code text with comments removed.
NAME_RULES = [
    (re.compile(r"(?<![\w.-])(pkill|pgrep)\b(?![\w-])"
                r"(?![^|;&)\n]*([\s\"',]-P|--parent)(?=[\"',=\s]*[^\"',=\s\d]))"),
     "{0} without -P PID (a PID the script recorded, not a number) finds processes by name, "
     "also other users' and servers'"),
    (re.compile(r"(?<![\w.-])(killall5?|pidof)\b(?![\w-])"),
     "{0} finds processes by name, also other users' and servers'"),
    (re.compile(r"(?<![\w.-])(fuser)\b(?![\w-])"),
     "fuser names whoever uses a file or port, not only this script's processes"),
    (re.compile(r"(?<![\w.-])(lsof)\b(?=[^|;&)\n]*\s-\w*t)"),
     "lsof -t names whoever holds a file or port, not only this script's processes"),
    (re.compile(r"(?<![\w./-])(ps)\b(?=\s+[a-z]*x[a-z]*\b|[^|;&)\n]*\s(-[a-zA-Z]*[eACuUG]"
                r"[a-zA-Z]*|--(user|User|group|Group|command|everyone|all)\b))"),
     "ps over every process, or by name or user: find this script's own by PID or parent "
     "instead"),
    (re.compile(r"(/proc/(\*|\[))|(\b(?:listdir|scandir)\s*\(\s*[fbr]?['\"]/proc/?['\"])|"
                r"((?<![\w./-])ls\s+(-\w+\s+)*/proc/?(?=\s|$|[;|&)]))"),
     "a scan of every process in /proc: find this script's own by PID or parent instead"),
    (re.compile(r"\b(psutil)\b"), "psutil scans every process on the machine"),
    (re.compile(r"(?<![\w.-])(systemctl[\s\"',]+(?:-[^\s\"',]+[\s\"',]+)*(?:stop|kill|restart|"
                r"try-restart|reload-or-restart|isolate)|service[\s\"',]+[^\s\"',]+[\s\"',]+"
                r"(?:stop|restart))\b"),
     "{0}: a system service, not a process this script started"),
    (re.compile(r"\b(xargs)\b[^|;&\n]*(?<![\w.-])kill\b"),
     "xargs kill: the targets come from a pipe and cannot be judged"),
]

# ------------------------------------------------------------------ findings


class Report:
    def __init__(self, path):
        self.path = path
        self.findings = []  # (line, what)
        self.scoped = {}  # line -> reason
        self.used = set()

    def flag(self, lines, what):
        """A finding on `lines` (the lines of one command or statement),
        excused by a `# scoped:` comment on any of them."""
        lines = sorted(set(lines))
        for ln in lines:
            if ln in self.scoped and len(self.scoped[ln].split()) >= 3:
                self.used.add(ln)
                return
        if (lines[0], what) not in self.findings:
            self.findings.append((lines[0], what))

    def finish(self):
        for ln, reason in sorted(self.scoped.items()):
            if len(reason.split()) < 3:
                self.findings.append((ln, "`# scoped:` needs a reason of three words or more "
                                          "(why the target is this script's own)"))
            elif ln not in self.used:
                self.findings.append((ln, "`# scoped:` on a line where nothing needs it: "
                                          "remove it"))
        self.findings.sort()


def name_rules(rep, text, lines):
    for rx, what in NAME_RULES:
        for m in rx.finditer(text):
            word = re.sub(r"[\s\"',]+", " ", next(g for g in m.groups() if g)).strip()
            rep.flag(lines, what.format(word))


# ------------------------------------------------------------------- shell
#
# A small lexer of the shell's own rules, enough to know which words are
# commands: quotes, $(...), `...`, ${...}, $((...)), here-documents, comments,
# redirections, and the operators that separate commands.


class Tok:
    __slots__ = ("kind", "text", "line", "subs")

    def __init__(self, kind, text, line, subs=None):
        self.kind = kind  # "word", "op", "redir", "heredoc"
        self.text = text
        self.line = line
        self.subs = subs or []  # command substitutions inside a word: (text, line)


class ShellLexer:
    def __init__(self, text, line=1):
        self.s = text
        self.i = 0
        self.line = line
        self.toks = []
        self.comments = []  # (line, text)
        self.pending = []  # here-document delimiters (word, strip_tabs)

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def adv(self):
        c = self.s[self.i]
        self.i += 1
        if c == "\n":
            self.line += 1
        return c

    def lex(self):
        while self.i < len(self.s):
            c = self.peek()
            if c == "\\" and self.peek(1) == "\n":
                self.adv()
                self.adv()
            elif c in " \t":
                self.adv()
            elif c == "\n":
                self.toks.append(Tok("op", "\n", self.line))
                self.adv()
                self.heredocs()
            elif c == "#":
                start = self.line
                j = self.s.find("\n", self.i)
                j = len(self.s) if j < 0 else j
                self.comments.append((start, self.s[self.i:j]))
                self.i = j
            elif c in ";&|()":
                two = self.s[self.i:self.i + 2]
                if two in (";;", "&&", "||", "|&") or two == "&>":
                    if two == "&>":
                        self.redir()
                        continue
                    self.toks.append(Tok("op", two, self.line))
                    self.adv()
                    self.adv()
                else:
                    self.toks.append(Tok("op", c, self.line))
                    self.adv()
            elif c in "<>" or re.match(r"\d+[<>]", self.s[self.i:self.i + 12]):
                self.redir()
            else:
                self.word()
        return self

    def redir(self):
        line = self.line
        start = self.i
        if self.s.startswith("<<<", self.i):
            self.i += 3
            self.toks.append(Tok("redir", "<<<", line))
            return
        if self.s.startswith("<<", self.i):
            self.i += 2
            strip = self.peek() == "-"
            if strip:
                self.i += 1
            while self.peek() in " \t":
                self.adv()
            w = self.word(keep=False)
            delim = re.sub(r"[\"'\\]", "", w.text)
            self.pending.append((delim, strip))
            return
        while self.peek().isdigit():
            self.adv()
        while self.peek() and self.peek() in "<>&|":
            self.adv()
        self.toks.append(Tok("redir", self.s[start:self.i], line))

    def heredocs(self):
        for delim, strip in self.pending:
            start = self.line
            body = []
            while self.i < len(self.s):
                j = self.s.find("\n", self.i)
                j = len(self.s) if j < 0 else j
                raw = self.s[self.i:j]
                self.i = min(j + 1, len(self.s))
                self.line += 1
                if (raw.lstrip("\t") if strip else raw) == delim:
                    break
                body.append(raw)
            self.toks.append(Tok("heredoc", "\n".join(body), start))
        self.pending = []

    def until_close(self, open_, close):
        """Skips a balanced $(...) or ${...} (quotes and nesting respected);
        returns its inner text."""
        depth = 1
        start = self.i
        while self.i < len(self.s):
            c = self.peek()
            if c == "\\":
                self.adv()
                if self.i < len(self.s):
                    self.adv()
            elif c == "'" and open_ == "(":
                self.adv()
                while self.i < len(self.s) and self.peek() != "'":
                    self.adv()
                if self.i < len(self.s):
                    self.adv()
            elif c == '"':
                self.adv()
                self.dquote(None)
            elif c == "#" and open_ == "(" and (self.i == start or self.s[self.i - 1] in " \t\n"):
                j = self.s.find("\n", self.i)
                self.i = len(self.s) if j < 0 else j
            elif c == open_:
                depth += 1
                self.adv()
            elif c == close:
                depth -= 1
                self.adv()
                if depth == 0:
                    return self.s[start:self.i - 1]
            else:
                self.adv()
        return self.s[start:]

    def dollar(self, subs):
        """At '$': a substitution; a command one is recorded in subs."""
        line = self.line
        self.adv()
        if self.s.startswith("((", self.i):
            self.adv()
            self.adv()
            self.until_close("(", ")")
            if self.peek() == ")":
                self.adv()
        elif self.peek() == "(":
            self.adv()
            inner = self.until_close("(", ")")
            if subs is not None:
                subs.append((inner, line))
        elif self.peek() == "{":
            self.adv()
            self.until_close("{", "}")

    def backquote(self, subs):
        line = self.line
        self.adv()
        start = self.i
        while self.i < len(self.s) and self.peek() != "`":
            if self.peek() == "\\":
                self.adv()
            self.adv()
        inner = self.s[start:self.i]
        if self.i < len(self.s):
            self.adv()
        if subs is not None:
            subs.append((inner, line))

    def dquote(self, subs):
        while self.i < len(self.s):
            c = self.peek()
            if c == '"':
                self.adv()
                return
            if c == "\\":
                self.adv()
                if self.i < len(self.s):
                    self.adv()
            elif c == "$":
                self.dollar(subs)
            elif c == "`":
                self.backquote(subs)
            else:
                self.adv()

    def word(self, keep=True):
        line = self.line
        start = self.i
        subs = []
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t\n;&|()<>":
                break
            if c == "\\":
                self.adv()
                if self.i < len(self.s):
                    self.adv()
            elif c == "'":
                self.adv()
                while self.i < len(self.s) and self.peek() != "'":
                    self.adv()
                if self.i < len(self.s):
                    self.adv()
            elif c == '"':
                self.adv()
                self.dquote(subs)
            elif c == "$":
                self.dollar(subs)
            elif c == "`":
                self.backquote(subs)
            else:
                self.adv()
        if self.i == start:  # a lone character the loop cannot take
            self.adv()
        t = Tok("word", self.s[start:self.i], line, subs)
        if keep:
            self.toks.append(t)
        return t


def unquote(w):
    """The word's text without its quoting (a plain-text view, for rules)."""
    if len(w) >= 2 and w[0] == w[-1] and w[0] in "'\"":
        return w[1:-1]
    return w


SEPARATORS = {"\n", ";", ";;", "&", "&&", "||", "|", "|&", "(", ")"}
KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in",
            "case", "esac", "{", "}", "!", "time", "function", "select"}
# Commands that run the command after them (and the options they take a value for).
WRAPPERS = {"sudo": {"-u", "-g", "-C"}, "runuser": {"-u", "-g", "-G", "-s", "-w"},
            "command": set(), "builtin": set(), "exec": {"-a"}, "nohup": set(),
            "setsid": set(), "env": {"-u", "-C", "-S"}, "nice": {"-n"}, "ionice": {"-c", "-n"},
            "stdbuf": {"-i", "-o", "-e"}, "timeout": {"-s", "-k"}, "chronic": set()}
# A kill target that is recorded: a parameter, $!, a job, with `-` for a group.
RECORDED = re.compile(r"^-?(\$\w+|\$\{[^}]+\}|\$!|\$\$)$|^%\S*$")
# $(...) whose output is a recorded PID.
# $(...) whose output is a recorded PID; a PID file under a directory the
# script names ("$dir/pid", not /run/x.pid, another program's).
PIDFILE = r"""(?!["']?/)[^|;&<>]+"""
RECORDED_SUB = re.compile(r"^\s*(jobs\s+-\w*p\w*|cat\s+" + PIDFILE + r"|<\s*" + PIDFILE + "|"
                          r"head\s+(-n\s*)?-?\d*\s+" + PIDFILE + "|"
                          r"pgrep\s+(.*\s)?(-P\s*|--parent[= ])[\"']?[^\s\d\"'].*)\s*$")


def simple_commands(toks):
    """Yields the word tokens of each simple command (here-documents apart)."""
    cmd = []
    skip_next = False
    for t in toks:
        if t.kind == "heredoc":
            continue
        if t.kind == "op" and t.text in SEPARATORS:
            if cmd:
                yield cmd
            cmd = []
            continue
        if t.kind == "redir":  # its target word is no argument
            skip_next = True
            continue
        if skip_next:
            skip_next = False
            continue
        cmd.append(t)
    if cmd:
        yield cmd


def command_start(words):
    """The index of the command word past assignments, keywords and wrappers."""
    i = 0
    while i < len(words):
        w = words[i].text
        if w in KEYWORDS or re.match(r"^[A-Za-z_]\w*(\[[^]]*\])?\+?=", w):
            i += 1
            continue
        base = os.path.basename(unquote(w))
        if base in WRAPPERS:
            takes = WRAPPERS[base]
            i += 1
            while i < len(words):
                a = unquote(words[i].text)
                if a == "--":
                    i += 1
                    break
                if a in takes:
                    i += 2
                elif a.startswith("-") or (base == "env" and "=" in a):
                    i += 1
                elif base == "timeout" and re.match(r"^[\d.]+[smhd]?$", a):
                    i += 1
                    break
                else:
                    break
            continue
        return i
    return None


def kill_targets(args):
    """The targets of `kill ARGS` by bash's rules, or None for kill -l."""
    a = [unquote(w.text) for w in args]
    if not a or a[0] in ("-l", "-L"):
        return []
    i = 0
    if a[0] in ("-s", "-n"):
        i = 2
    elif a[0].startswith("-") and a[0] != "--":
        i = 1
    if i < len(a) and a[i] == "--":
        i += 1
    return args[i:]


def check_target(w):
    text = w.text
    inner = unquote(text)
    if text.startswith('-"') and text.endswith('"'):  # -"$pgid"
        inner = "-" + text[2:-1]
    if RECORDED.match(inner):
        return "PPID" not in inner  # its parent (ctest, make) is not its own
    m = re.match(r'^-?"?(\$\(|`)(.*)(\)|`)"?$', text, re.S)
    if m and len(w.subs) == 1 and RECORDED_SUB.match(w.subs[0][0].replace("\n", " ")):
        return True
    return False


def check_shell_code(rep, text, line):
    lx = ShellLexer(text, line).lex()
    # Rule 1 over each command's words (comments are not words) and each
    # line of the here-documents.
    for t in lx.toks:
        if t.kind == "heredoc":
            for k, ln in enumerate(t.text.split("\n")):
                name_rules(rep, ln, [t.line + k])
    for cmd in simple_commands(lx.toks):
        lines = sorted({t.line + k for t in cmd for k in range(t.text.count("\n") + 1)})
        name_rules(rep, " ".join(t.text for t in cmd), lines)
        start = command_start(cmd)
        if start is None:
            continue
        name = os.path.basename(unquote(cmd[start].text))
        args = cmd[start + 1:]
        if name == "kill":
            for t in kill_targets(args):
                if not check_target(t):
                    rep.flag(lines, "kill %s: not a recorded PID ($pid, $!, %%1, $(jobs -p), "
                                    "$(cat PIDFILE), $(pgrep -P PID))" % t.text.strip())
        # Shell code inside strings: trap '...', eval ..., sh -c '...'.
        nested = []
        if name == "trap" and args:
            nested = [args[0]]
        elif name == "eval":
            nested = args
        elif name in ("sh", "bash", "dash", "su", "runuser") or name.endswith("sh"):
            for k, t in enumerate(args[:-1]):
                if unquote(t.text) == "-c":
                    nested = [args[k + 1]]
        for t in nested:
            inner = t.text
            if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                inner = inner[1:-1]
            check_shell_code(rep, inner, t.line)
        # $(...) and `...` inside the words.
        for t in cmd:
            for sub, sline in t.subs:
                check_shell_code(rep, sub, sline)


def check_shell(rep, text):
    for ln, c in ShellLexer(text).lex().comments:
        m = SCOPED.search(c)
        if m:
            rep.scoped[ln] = m.group(1).strip()
    check_shell_code(rep, text, 1)


# ------------------------------------------------------------------ Python

SUBPROCESS = {"run", "call", "check_call", "check_output", "Popen", "system", "popen",
              "create_subprocess_exec", "create_subprocess_shell", "getoutput",
              "getstatusoutput"}


def dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def check_python(rep, text):
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    logical, lines = [], set()
    for t in toks:
        if t.type == tokenize.COMMENT:
            m = SCOPED.search(t.string)
            if m:
                rep.scoped[t.start[0]] = m.group(1).strip()
            continue
        if t.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if logical:
                name_rules(rep, " ".join(logical), lines)
            logical, lines = [], set()
            continue
        if t.type in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
            continue
        logical.append(t.string)
        lines.update(range(t.start[0], t.end[0] + 1))
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func)
        span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        last = name.rsplit(".", 1)[-1]
        if name in ("os.kill", "os.killpg", "kill", "killpg"):
            target = node.args[0] if node.args else None
            ok = (isinstance(target, ast.Attribute) and target.attr == "pid") or (
                isinstance(target, ast.Call) and dotted(target.func) in ("os.getpid",))
            if not ok:
                rep.flag(span, "%s(%s): not the pid of a Popen this script made; say why it "
                               "is its own with `# scoped: ...`"
                         % (name, ast.unparse(target) if target is not None else ""))
        elif last in SUBPROCESS and node.args:
            a = node.args[0]
            argv, shell = [], None
            if isinstance(a, (ast.List, ast.Tuple)):
                argv = [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str)
                        else None for e in a.elts]
                for k, e in enumerate(argv[:-1]):
                    if e == "-c" and argv[k + 1] is not None:  # sh -c '...'
                        shell = argv[k + 1]
            elif isinstance(a, ast.Constant) and isinstance(a.value, str):
                shell = a.value  # a command line (shell=True, os.system)
            if any(e is not None and os.path.basename(e) == "kill" for e in argv):
                rep.flag(span, "%s runs kill: its target cannot be judged; signal a Popen "
                               "(p.send_signal) or os.kill(p.pid, ...)" % name)
            if shell is not None:
                sub = Report(rep.path)
                sub.scoped, sub.used = rep.scoped, rep.used
                check_shell_code(sub, shell, node.lineno)
                for _, what in sub.findings:
                    rep.flag(span, "in %s's command line: %s" % (name, what))


# ------------------------------------------------------------------- files


def kind_of(path):
    if path.endswith(".py"):
        return "python"
    if path.endswith((".sh", ".bash")):
        return "shell"
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return None
    if first.startswith(b"#!"):
        if b"python" in first:
            return "python"
        if re.search(rb"\b(ba|da|k|z)?sh\b", first):
            return "shell"
    return None


def default_files():
    out = []
    for d in DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, d)):
            dirnames[:] = sorted(x for x in dirnames if x not in ("__pycache__", ".git"))
            for f in sorted(filenames):
                p = os.path.join(dirpath, f)
                rel = os.path.relpath(p, ROOT)
                if rel not in EXEMPT and kind_of(p):
                    out.append(p)
    return out


def check_file(path):
    rep = Report(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        if kind_of(path) == "python":
            check_python(rep, text)
        else:
            check_shell(rep, text)
    except (SyntaxError, tokenize.TokenError) as e:
        rep.findings.append((getattr(e, "lineno", 0) or 0, "cannot parse: %s" % e))
    rep.finish()
    return rep


def main(argv):
    list_scoped = "--list-scoped" in argv
    files = [a for a in argv if a != "--list-scoped"]
    if any(a.startswith("-") for a in files):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    files = files or default_files()
    bad = 0
    excused = []
    for path in files:
        rep = check_file(path)
        shown = os.path.relpath(path, ROOT) if path.startswith(ROOT) else path
        for ln, what in rep.findings:
            print("%s:%d: %s" % (shown, ln, what))
            bad += 1
        for ln in sorted(rep.used):
            excused.append("%s:%d: scoped: %s" % (shown, ln, rep.scoped[ln]))
    if excused and (list_scoped or bad == 0):
        print("check-scoped-kills: %d line(s) pass by their `# scoped:` reason:" % len(excused))
        for e in excused:
            print("  " + e)
    print("check-scoped-kills: %d file(s), %d finding(s)" % (len(files), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
