#!/usr/bin/env python3
"""Innermost loops of an assembly file (`rustc --emit asm`), for llvm-mca.

    mca_loops.py FILE.s list FUNC-SUBSTRING MNEMONIC...   # the innermost loops of matching
                                                           # functions that use every mnemonic
                                                           # (REGEX=N: exactly N instructions
                                                           # that match REGEX)
    mca_loops.py FILE.s body FUNC-SUBSTRING INDEX MNEMONIC...  # loop INDEX of that list, as
                                                           # plain instructions for llvm-mca

A loop is a label and the last branch back to it in the same function; innermost: no other
such back edge inside it. Its body (labels, directives and comments dropped) is what llvm-mca
runs as one iteration: the forward branches inside it are counted as instructions, and the
blocks between header and back edge as if all ran (a loop's cold exits are laid out after it).
"""
import re
import sys

LABEL = re.compile(r"^([.\w$]+):")
BRANCH = re.compile(r"^\s+(b(?:\.\w+)?|cbn?z|tbn?z|j\w+)\s+(.*)$")


def functions(lines):
    name, body = None, []
    for line in lines:
        m = re.match(r"^\s+\.type\s+([^,]+),@function", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
            continue
        if name:
            body.append(line)
    if name:
        yield name, body


def instructions(body):
    out = []
    for line in body:
        s = line.strip()
        if not s or s.startswith((".", "//", "#", "@")) or LABEL.match(s):
            continue
        # Comments: `//` on aarch64, `#` after a blank on x86 (aarch64's `#imm` follows a comma).
        s = re.sub(r"\s#(\s.*)?$", "", s.split("//")[0])
        out.append(s.strip())
    return out


def loops(body):
    labels = {}
    for i, line in enumerate(body):
        m = LABEL.match(line)
        if m:
            labels[m.group(1)] = i
    edges = {}
    for j, line in enumerate(body):
        m = BRANCH.match(line)
        if not m:
            continue
        target = m.group(2).split(",")[-1].strip()
        i = labels.get(target)
        if i is not None and i < j:
            edges[i] = max(edges.get(i, j), j)
    spans = sorted(edges.items())
    inner = [
        (i, j)
        for i, j in spans
        if not any((a, b) != (i, j) and i <= a and b <= j for a, b in spans)
    ]
    return inner


def mnemonic(ins):
    return ins.split()[0].split(".")[0]


def matching(path, func, wanted):
    with open(path) as f:
        lines = f.read().splitlines()
    found = []
    for name, body in functions(lines):
        if func not in name:
            continue
        for i, j in loops(body):
            ins = instructions(body[i : j + 1])
            names = {mnemonic(x) for x in ins}
            counts = [w.rsplit("=", 1) for w in wanted if "=" in w]
            if all(w in names for w in wanted if "=" not in w) and all(
                sum(1 for x in ins if re.search(r, x)) == int(c) for r, c in counts
            ):
                found.append((name, ins))
    return found


def main():
    path, mode, func = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "list":
        for n, (name, ins) in enumerate(matching(path, func, sys.argv[4:])):
            print(n, len(ins), name[:150])
    else:
        index = int(sys.argv[4])
        name, ins = matching(path, func, sys.argv[5:])[index]
        print("\n".join(ins))


main()
