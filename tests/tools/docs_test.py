#!/usr/bin/env python3
"""docs_test - run the command blocks of a document exactly as written.

usage: docs_test.py list FILE
       docs_test.py run FILE TREE

FILE is Markdown (README.md, examples/*/README.md) or a man page
(man/*.[1-8]).  `list` prints every block with its line, role and first
line.  `run` runs the blocks of FILE in order in one fresh bash (env -i,
`set -e -o pipefail`, 300 s at most) in TREE, a scratch copy of the source
tree whose build/ is the build under test, and compares the standard output
of a block with the block shown after it as its output.  It exits 0 when
every block ran and every output matched; otherwise it prints, for each
failure, FILE:LINE, what went wrong, the block's standard error and a diff.

Where the blocks run, and with which PATH:
  Markdown     in the document's own folder of TREE, PATH=/usr/bin:/bin:
               the text itself says how the tools get on PATH
               (`export PATH=$PWD/build/bin:$PATH` after `make`)
  man pages    in TREE/examples, PATH=TREE/build/bin:/usr/bin:/bin, as
               after `make install`; the pages' EXAMPLES name the files of
               examples/

Which blocks are blocks:
  Markdown     every fenced block (``` or ~~~); an indented code block is
               an error (a block the test could miss)
  man pages    every .nf ... .fi block of the EXAMPLES (or EXAMPLE)
               section, and any other .nf block with a marker

A block is a command unless the marker before it (the line before, blank
lines allowed between) says otherwise:
  <!-- docs-test: ROLE -->          in Markdown
  .\\" docs-test: ROLE               in a man page
with ROLE one of
  run                 a command (the default; for man blocks outside EXAMPLES)
  output              the exact standard output of the command block before
  file NAME           the contents of file NAME (written, then used by the
                      blocks after it)
  text (WHAT)         not a command: a figure, a crontab line, a table
  skip (REASON)       a command not run here: it needs root, a network or
                      a running daemon; REASON says which, and where it is
                      tested instead when it is
"""
import difflib
import os
import re
import subprocess
import sys
import tempfile

MARK_RE = re.compile(r'docs-test:\s*(.*?)\s*(?:-->)?\s*$')
ROLE_RE = re.compile(r'^(run|output|file\s+\S+|text\s+\(.+\)|skip\s+\(.+\))$')


class DocError(Exception):
    pass


def parse_mark(text, where):
    m = MARK_RE.search(text)
    role = m.group(1) if m else ''
    if not ROLE_RE.match(role):
        raise DocError('%s: bad docs-test marker %r (run, output, file NAME, '
                       'text (WHAT), skip (REASON))' % (where, role))
    return role


def md_blocks(path):
    """Fenced blocks of a Markdown file: (line, role, text)."""
    lines = open(path, encoding='utf-8').read().split('\n')
    blocks, mark, i, prev_blank, in_list = [], None, 0, True, False
    while i < len(lines):
        ln = lines[i]
        where = '%s:%d' % (path, i + 1)
        s = ln.strip()
        if s.startswith('<!--') and 'docs-test:' in s:
            while not lines[i].rstrip().endswith('-->'):
                i += 1
                s += ' ' + lines[i].strip()
            mark = (where, parse_mark(s, where))
            i += 1
            prev_blank = True
            continue
        f = re.match(r'^ {0,3}(```+|~~~+)', ln)
        if f:
            fence = f.group(1)
            body, j = [], i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence):
                body.append(lines[j])
                j += 1
            if j == len(lines):
                raise DocError('%s: unclosed fenced block' % where)
            role = mark[1] if mark else 'run'
            blocks.append((i + 1, role, '\n'.join(body) + '\n'))
            mark = None
            i = j + 1
            prev_blank = False
            continue
        if re.match(r'^\s*([-*+]|\d+[.)])\s', ln):
            in_list = True
        elif s == '':
            pass
        elif not ln.startswith(' '):
            in_list = False
        if prev_blank and not in_list and re.match(r'^(    |\t)\S', ln):
            raise DocError('%s: an indented code block: fence it (```sh) '
                           'so that docs-test runs it' % where)
        if s and mark is not None:
            raise DocError('%s: docs-test marker of %s is not followed by a '
                           'block' % (where, mark[0]))
        prev_blank = s == ''
        i += 1
    if mark is not None:
        raise DocError('%s: docs-test marker at the end' % mark[0])
    return blocks


def unroff(line):
    """The text of a line of a .nf block as man shows it."""
    out, i = [], 0
    esc = {'-': '-', 'e': '\\', '\\': '\\', '&': '', ' ': ' ', '~': ' ',
           '|': '', '^': '', '.': '.', "'": "'", '`': '`', '0': ' '}
    named = {'aq': "'", 'dq': '"', 'ti': '~', 'ha': '^', 'ga': '`',
             'rs': '\\', 'mu': '\u00d7', 'em': '\u2014', 'en': '\u2013',
             'hy': '-', 'ba': '|', 'lq': '"', 'rq': '"', 'oq': "'",
             'cq': "'", 'bu': '\u2022', 'co': '\u00a9', 'at': '@',
             'sh': '#', 'Do': '$'}
    while i < len(line):
        c = line[i]
        if c != '\\':
            out.append(c)
            i += 1
            continue
        n = line[i + 1] if i + 1 < len(line) else ''
        if n == 'f':
            i += 3 if line[i + 2:i + 3] != '(' else 5
        elif n == '(':
            nm = line[i + 2:i + 4]
            if nm not in named:
                raise DocError('unknown roff escape \\(%s' % nm)
            out.append(named[nm])
            i += 4
        elif n == '"':
            break
        elif n in esc:
            out.append(esc[n])
            i += 2
        else:
            raise DocError('unknown roff escape \\%s' % n)
    return ''.join(out)


def man_blocks(path):
    """.nf blocks of a man page: those of EXAMPLES and the marked ones."""
    lines = open(path, encoding='utf-8').read().split('\n')
    blocks, mark, section, i = [], None, '', 0
    while i < len(lines):
        ln = lines[i]
        where = '%s:%d' % (path, i + 1)
        if ln.startswith('.SH'):
            section = ln[3:].strip().strip('"')
        if re.match(r'^\.\\"\s*docs-test:', ln):
            mark = (where, parse_mark(ln, where))
        elif ln.startswith('.nf'):
            j = i + 1
            while j < len(lines) and not lines[j].startswith('.fi'):
                j += 1
            if section in ('EXAMPLES', 'EXAMPLE') or mark is not None:
                body = []
                for k in range(i + 1, j):
                    if lines[k].startswith('.\\"'):
                        continue
                    if lines[k].startswith('.'):
                        raise DocError('%s:%d: a request inside .nf' %
                                       (path, k + 1))
                    try:
                        body.append(unroff(lines[k]))
                    except DocError as e:
                        raise DocError('%s:%d: %s' % (path, k + 1, e))
                role = mark[1] if mark else 'run'
                blocks.append((i + 1, role, '\n'.join(body) + '\n'))
            mark = None
            i = j
        elif mark is not None and ln.strip() and ln.split()[0] not in (
                '.PP', '.RS', '.RE', '.IP', '.P', '.LP'):
            raise DocError('%s: docs-test marker of %s is not followed by a '
                           'block' % (where, mark[0]))
        i += 1
    return blocks


def blocks_of(path):
    if re.search(r'\.[1-8]$', path):
        return 'man', man_blocks(path)
    return 'md', md_blocks(path)


def cmd_list(path):
    _, blocks = blocks_of(path)
    for line, role, text in blocks:
        first = text.split('\n', 1)[0]
        print('%s:%d\t%s\t%s' % (path, line, role, first))


def cmd_run(path, tree):
    kind, blocks = blocks_of(path)
    tree = os.path.abspath(tree)
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
    ap = os.path.abspath(path)
    if kind == 'md':
        # The document's folder in TREE (a document outside the source
        # tree runs in its own folder).
        cwd = os.path.dirname(ap)
        for base in (tree, top):
            if ap.startswith(base + '/'):
                cwd = os.path.join(tree, os.path.dirname(
                    os.path.relpath(ap, base)))
                break
        env_path = '/usr/bin:/bin'
    else:
        cwd = os.path.join(tree, 'examples')
        env_path = os.path.join(tree, 'build', 'bin') + ':/usr/bin:/bin'
    if not os.path.isdir(cwd):
        raise DocError('%s: no folder %s to run the blocks in' % (path, cwd))
    d = tempfile.mkdtemp(prefix='docs-test.')
    home = os.path.join(d, 'home')
    os.mkdir(home)
    script = ['trap \'echo $? >"%s/rc"\' EXIT' % d, 'cd %s' % sh_quote(cwd)]
    runs, expect, skips = [], {}, []
    last = None
    for n, (line, role, text) in enumerate(blocks):
        if role == 'run':
            script.append('echo %d >"%s/cur"' % (n, d))
            script.append('{\n%s} >"%s/%d.out" 2>"%s/%d.err"' %
                          (text, d, n, d, n))
            runs.append(n)
            last = n
        elif role == 'output':
            if last is None or last in expect:
                raise DocError('%s:%d: an output block without a command '
                               'block before it' % (path, line))
            expect[last] = (line, text)
        elif role.startswith('file '):
            name = role.split(None, 1)[1]
            tag = '__DOCS_TEST_EOF'
            script.append("cat >%s <<'%s'\n%s%s" % (sh_quote(name), tag,
                                                     text, tag))
            last = None
        elif role.startswith('skip '):
            skips.append('%s:%d: skipped %s' % (path, line, role[5:]))
            last = None
        else:
            last = None
    script.append('echo %d >"%s/cur"' % (len(blocks), d))
    with open(os.path.join(d, 'script'), 'w') as f:
        f.write('\n'.join(script) + '\n')
    env = {'HOME': home, 'PATH': env_path, 'LANG': 'C.UTF-8',
           'TERM': 'dumb', 'TMPDIR': os.environ.get('TMPDIR', '/tmp')}
    try:
        subprocess.run(['/bin/bash', '--noprofile', '--norc', '-e', '-o',
                        'pipefail', os.path.join(d, 'script')],
                       env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                       timeout=300)
    except subprocess.TimeoutExpired:
        pass
    fails = []
    rc = read(d, 'rc').strip()
    cur = int(read(d, 'cur').strip() or '0')
    for n in runs:
        line = blocks[n][0]
        if n == cur and cur < len(blocks):
            fails.append('%s:%d: the block exited %s%s\n%s' % (
                path, line, rc or '(timeout after 300 s)',
                ' (command not found)' if rc == '127' else '',
                indent('stderr', read(d, '%d.err' % n))))
            break
        if n in expect:
            got = read(d, '%d.out' % n)
            want = expect[n][1]
            if got != want:
                diff = ''.join(difflib.unified_diff(
                    want.splitlines(True), got.splitlines(True),
                    'shown at %s:%d' % (path, expect[n][0]),
                    'output of the block at %s:%d' % (path, line)))
                fails.append('%s:%d: output differs from the text\n%s%s' % (
                    path, line, diff,
                    indent('stderr', read(d, '%d.err' % n))))
    for s in skips:
        print(s)
    print('%s: %d blocks run, %d outputs compared, %d skipped' % (
        path, len(runs), len(expect), len(skips)))
    if fails:
        print('\n'.join(fails))
        print('(the script and the outputs are in %s)' % d)
        return 1
    subprocess.run(['rm', '-rf', d])
    return 0


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def read(d, name):
    try:
        with open(os.path.join(d, name), encoding='utf-8',
                  errors='replace') as f:
            return f.read()
    except FileNotFoundError:
        return ''


def indent(what, text):
    if not text:
        return ''
    return ''.join('  %s: %s\n' % (what, ln) for ln in text.splitlines()[-20:])


def main(argv):
    try:
        if len(argv) == 3 and argv[1] == 'list':
            cmd_list(argv[2])
            return 0
        if len(argv) == 4 and argv[1] == 'run':
            return cmd_run(argv[2], argv[3])
    except DocError as e:
        print('docs_test: %s' % e, file=sys.stderr)
        return 1
    print('usage: docs_test.py list FILE | run FILE TREE', file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
