#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compares what the host driver received from a program run directly with
what it received from gpud's worker serving the same program: two records
of the host-call recorder (tests/hostrec/hostrec.c).

Every difference must be one that docs/architecture.md lists, in its table
"What the host driver receives": a row whose second column is a rule, in
backticks, of one of these forms (CALL a command's name; PATH a member's
path as the recorder writes it, where `*` stands for any text and `?` for
one character):

  CALL PATH                  the value there may differ
  CALL +PATH                 gpud's side may have it, the direct side not
                             (where both have it, its value may differ)
  CALL -PATH                 the direct side may have it, gpud's not
  CALL +extension NAME       gpud enables the extension too
  CALL +call                 calls gpud's worker makes of its own
  CALL -call                 calls gpud's worker does not make (the ICD
                             answers them in the application)

Each rule may end with `if PATH = VALUE[, PATH = VALUE]`: it applies to
the calls of gpud's side whose lines say so (VALUE as a pattern).
  hostrec_compare.py [--rules FILE] [--unordered] --program NAME
                     --direct REC... --gpud REC...

prints the differences left and exits with 1 where there are any."""

import argparse
import functools
import os
import re
import sys


@functools.lru_cache(maxsize=None)
def pattern_re(pattern):
    return re.compile(''.join('.*' if c == '*' else '.' if c == '?' else re.escape(c)
                              for c in pattern))


def match(text, pattern):
    """Whether text is what pattern says, `*` standing for any text and
    `?` for one character."""
    return pattern_re(pattern).fullmatch(text) is not None


class Block:
    def __init__(self, call):
        self.call = call
        self.lines = []

    def values(self):
        out = {}
        for line in self.lines:
            path, _, value = line.partition(' = ')
            out[path] = value
        return out

    def __repr__(self):
        return '@ ' + self.call + '\n' + '\n'.join(self.lines)


def read_record(path):
    blocks = []
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('@ '):
                blocks.append(Block(line[2:]))
            elif blocks:
                blocks[-1].lines.append(line)
    return blocks


def program_blocks(blocks, program):
    """The blocks from the program's own first vkCreateInstance on (its
    application name starts with `program`; a worker made an instance of
    its own before it had a client)."""
    want = f'pCreateInfo.pApplicationInfo.pApplicationName = "{program}'
    for i, b in enumerate(blocks):
        if b.call == 'vkCreateInstance' and any(x.startswith(want) for x in b.lines):
            return blocks[i:]
    return None


def program_records(paths, program):
    """The blocks of the program in the records given (a worker's each),
    one record after the other in the order of their first lines' time."""
    out = []
    for path in sorted(paths, key=os.path.getmtime):
        blocks = program_blocks(read_record(path), program)
        if blocks:
            out += blocks
    return out or None


class Rule:
    def __init__(self, text, why):
        self.text = text
        self.why = why
        self.used = 0
        parts = text.split(None, 1)
        if len(parts) != 2:
            raise ValueError(f'a rule needs a command and what differs: {text!r}')
        self.call, rest = parts
        self.conditions = {}
        rest, _, conds = rest.partition(' if ')
        for cond in conds.split(','):
            if cond.strip():
                path, eq, value = cond.partition('=')
                if not eq:
                    raise ValueError(f'a condition is PATH = VALUE: {text!r}')
                self.conditions[path.strip()] = value.strip()
        if rest.startswith('+extension '):
            self.kind = 'extension'
            self.name = rest.split(None, 1)[1].strip()
        elif rest.strip() == '+call':
            self.kind = 'own-call'
        elif rest.strip() == '-call':
            self.kind = 'icd-call'
        elif rest.startswith('+'):
            self.kind = 'added'
            self.path = rest[1:].strip()
        elif rest.startswith('-'):
            self.kind = 'removed'
            self.path = rest[1:].strip()
        else:
            self.kind = 'value'
            self.path = rest.strip()

    def applies(self, block):
        """Whether the rule is about this call of gpud's side (its
        conditions hold there)."""
        if not match(block.call, self.call):
            return False
        vals = block.values()
        return all(match(vals.get(p, '\0'), v) for p, v in self.conditions.items())


def read_rules(path):
    """The rules of the table under "What the host driver receives"."""
    rules = []
    inside = False
    with open(path) as f:
        for line in f:
            if line.startswith('#'):
                inside = 'What the host driver receives' in line
                continue
            if not inside or not line.startswith('|'):
                continue
            cols = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cols) < 3:
                continue
            m = re.fullmatch(r'`([^`]+)`', cols[1])
            if not m:
                continue
            rules.append(Rule(m.group(1), cols[2]))
    if not rules:
        raise SystemExit(f'hostrec_compare: {path} lists no rules')
    return rules


def strip_extensions(lines, names):
    """The lines without the extensions named, their count lowered to match."""
    ext = re.compile(r'pCreateInfo\.ppEnabledExtensionNames\[\d+\]')
    kept = [x for x in lines
            if not (ext.fullmatch(x.partition(' = ')[0]) and
                    x.partition(' = ')[2].strip('"') in names)]
    dropped = len(lines) - len(kept)
    if not dropped:
        return lines, False
    out, n = [], 0
    for line in kept:
        path, _, value = line.partition(' = ')
        if ext.fullmatch(path):
            line = f'pCreateInfo.ppEnabledExtensionNames[{n}] = {value}'
            n += 1
        elif path == 'pCreateInfo.enabledExtensionCount':
            line = f'{path} = {int(value) - dropped}'
            if int(value) == dropped:
                out.append(line)
                line = 'pCreateInfo.ppEnabledExtensionNames = 0'
        out.append(line)
    return out, True


def path_of(line):
    return line.partition(' = ')[0]


def mask(lines, pattern):
    return [path_of(x) + ' = *' if match(path_of(x), pattern) else x for x in lines]


def pair_lines(x, y, rules):
    """The lines of x (the direct side's call) and y (gpud's) as the rules
    let them differ; y's values decide which rules apply."""
    xl, yl = list(x.lines), list(y.lines)
    for r in rules:
        if not r.applies(y):
            continue
        if r.kind == 'extension':
            yl, hit = strip_extensions(yl, {r.name})
            r.used += hit
        elif r.kind in ('added', 'removed'):
            # only on one side: gone; on both: its value may differ
            xs = {path_of(a) for a in xl}
            ys = {path_of(b) for b in yl}
            mine, other = (yl, xs) if r.kind == 'added' else (xl, ys)
            kept = [a for a in mine
                    if not (match(path_of(a), r.path) and path_of(a) not in other)]
            r.used += len(kept) != len(mine)
            if r.kind == 'added':
                yl = kept
            else:
                xl = kept
            xl, yl = mask(xl, r.path), mask(yl, r.path)
        elif r.kind == 'value':
            xl, yl = mask(xl, r.path), mask(yl, r.path)
    return xl, yl


def same(x, y, rules):
    xl, yl = pair_lines(x, y, rules)
    return xl == yl


def is_kind(block, rules, kind):
    for r in rules:
        if r.kind == kind and (r.applies(block) if kind == 'own-call' else
                               match(block.call, r.call)):
            r.used += 1
            return True
    return False


def compare_unordered(xs, ys, rules, call):
    """The calls of one command as a multiset, for programs that make them
    on several threads: each of gpud's calls must equal one made directly."""
    left = list(xs)
    # (calls that may be gpud's own last: a twin takes no call of the
    # program's from the buffer made as asked)
    for y in sorted(ys, key=lambda b: is_kind(b, rules, 'own-call')):
        for k, x in enumerate(left):
            if same(x, y, rules):
                del left[k]
                break
        else:
            if not is_kind(y, rules, 'own-call'):
                return [f'{call}: a call through gpud that the program did not make: '
                        f'{y.lines[:6]}']
    left = [x for x in left if not is_kind(x, rules, 'icd-call')]
    if left:
        return [f'{call}: {len(left)} of {len(xs)} calls made directly not made through gpud, '
                f'such as {left[0].lines[:6]}']
    return []


def align(xs, ys, rules):
    """Whether the calls of one command line up: a path from the start of
    both lists to their ends where each step pairs two calls the rules make
    equal, passes over a call of gpud's own, or over one the ICD answers
    itself.  None when they do, else (i, j), the furthest pair reached."""
    own = [is_kind(y, rules, 'own-call') for y in ys]
    icd = [is_kind(x, rules, 'icd-call') for x in xs]
    memo = {}

    def eq(i, j):
        if (i, j) not in memo:
            memo[(i, j)] = same(xs[i], ys[j], rules)
        return memo[(i, j)]

    stack, seen, far = [(0, 0)], set(), (0, 0)
    while stack:
        i, j = stack.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i + j > far[0] + far[1]:
            far = (i, j)
        if i == len(xs) and j == len(ys):
            return None
        # (the last pushed is tried first: a pair before a pass)
        if i < len(xs) and icd[i]:
            stack.append((i + 1, j))
        if j < len(ys) and own[j]:
            stack.append((i, j + 1))
        if i < len(xs) and j < len(ys) and eq(i, j):
            stack.append((i + 1, j + 1))
    return far


def compare(direct, gpud, rules, ordered=True):
    """The differences left, as lines of text: each command's calls in
    order on both sides, lined up (align) or, for a program of several
    threads, as a multiset."""
    by_call_d, by_call_g = {}, {}
    for b in direct:
        by_call_d.setdefault(b.call, []).append(b)
    for b in gpud:
        by_call_g.setdefault(b.call, []).append(b)
    problems = []
    for call in sorted(set(by_call_d) | set(by_call_g)):
        xs, ys = by_call_d.get(call, []), by_call_g.get(call, [])
        if not ordered:
            problems += compare_unordered(xs, ys, rules, call)
            continue
        far = align(xs, ys, rules)
        if far is None:
            continue
        i, j = far
        if i < len(xs) and j < len(ys):
            x, y = pair_lines(xs[i], ys[j], rules)
            only_d = [line for line in x if line not in y]
            only_g = [line for line in y if line not in x]
            problems.append(f'{call} #{i + 1}: directly {only_d[:6]}, '
                            f'through gpud {only_g[:6]}')
        elif i < len(xs):
            problems.append(f'{call}: {len(xs) - i} of {len(xs)} calls made directly '
                            'not made through gpud')
        else:
            problems.append(f'{call}: {len(ys) - j} calls through gpud '
                            'that the program did not make')
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--rules', default='docs/architecture.md')
    ap.add_argument('--program', required=True)
    ap.add_argument('--unordered', action='store_true',
                    help='the program makes its calls on several threads')
    ap.add_argument('--direct', nargs='+', required=True, help='the direct run\'s records')
    ap.add_argument('--gpud', nargs='+', required=True, help='the workers\' records')
    args = ap.parse_args()
    rules = read_rules(args.rules)
    direct = program_records(args.direct, args.program)
    gpud = program_records(args.gpud, args.program)
    if direct is None or gpud is None:
        print(f'hostrec_compare: no instance of {args.program} in '
              f'{" ".join(args.direct if direct is None else args.gpud)}')
        return 1
    problems = compare(direct, gpud, rules, not args.unordered)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
