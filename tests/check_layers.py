#!/usr/bin/env python3
"""Checks that servesim's folders are layers (../shared/ARCHITECTURE.md):

  python -> cli -> analysis -> sim -> scheduler -> models -> util;  sim -> traces -> util
  (python/ is the Python module's C++ half, _servesim: it runs the commands cli/ defines)

- every project include in a source folder points to its own folder or to a folder below it
  (traces and models sit side by side: neither includes the other);
- the folder a file includes is one its CMake library links, directly or through another;
- no two files include each other, directly or in a longer cycle;
- only cli/ includes Boost.Program_options.

Usage: check_layers.py ROOT            check the tree at ROOT, print the folder include graph
       check_layers.py --self-test     check that each rule catches a deliberate violation
Exits 1 when a rule is broken, naming the file and line.
"""
import os
import re
import sys
import tempfile

RANK = {"util": 0, "traces": 1, "models": 1, "scheduler": 2, "sim": 3, "analysis": 4, "cli": 5,
        "python": 6}
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]')
LINK = re.compile(r"target_link_libraries\(\s*servesim_(\w+)\s+([^)]*)\)", re.S)
MODULE_LINK = re.compile(r"target_link_libraries\(\s*_servesim\s+([^)]*)\)", re.S)


def sources(root):
    for folder in RANK:
        d = os.path.join(root, folder)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith((".hpp", ".cpp")):
                yield folder, f"{folder}/{name}"


def includes(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1) == "<", m.group(2)


def link_closure(root):
    """Each folder's library and the folder libraries it links, transitively."""
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
        text = f.read()
    direct = {folder: set() for folder in RANK}
    for lib, deps in LINK.findall(text):
        if lib in direct:
            direct[lib] |= {d for d in re.findall(r"servesim_(\w+)", deps) if d in RANK}
    for deps in MODULE_LINK.findall(text):  # the Python module's library, _servesim
        direct["python"] |= {d for d in re.findall(r"servesim_(\w+)", deps) if d in RANK}
    closure = {}
    for folder in RANK:
        seen, todo = set(), [folder]
        while todo:
            for dep in direct[todo.pop()]:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        closure[folder] = seen
    return closure


def check(root):
    errors, edges, graph = [], {}, {}
    closure = link_closure(root)
    for folder, path in sources(root):
        graph.setdefault(path, [])
        for line, system, target in includes(root, path):
            where = f"{path}:{line}"
            if system:
                if target.startswith("boost/program_options") and folder != "cli":
                    errors.append(f"{where}: <{target}>: only cli/ knows Boost.Program_options")
                continue
            to = target.split("/")[0]
            if to not in RANK:
                errors.append(f'{where}: "{target}" is not in a source folder')
                continue
            if os.path.exists(os.path.join(root, target)):
                graph[path].append(target)
            if to == folder:
                continue
            edges[(folder, to)] = edges.get((folder, to), 0) + 1
            if RANK[to] > RANK[folder]:
                errors.append(f'{where}: "{target}" points up ({folder}/ is below {to}/)')
            elif RANK[to] == RANK[folder]:
                errors.append(f'{where}: "{target}": {folder}/ and {to}/ sit side by side')
            elif to not in closure[folder]:
                errors.append(f'{where}: "{target}": servesim_{folder} does not link servesim_{to}')
    errors += file_cycles(graph)
    return errors, edges


def file_cycles(graph):
    """One message per include cycle between files (depth-first search)."""
    errors, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt]
                errors.append("include cycle: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return errors


def self_test():
    """Each rule must catch its violation in a small tree; the clean tree must pass."""
    cmake = (
        "target_link_libraries(servesim_traces PUBLIC servesim_util)\n"
        "target_link_libraries(servesim_models PUBLIC servesim_util)\n"
        "target_link_libraries(servesim_scheduler PUBLIC servesim_models)\n"
        "target_link_libraries(servesim_sim PUBLIC servesim_scheduler servesim_traces)\n"
        "target_link_libraries(servesim_analysis PUBLIC servesim_sim)\n"
    )
    clean = {
        "util/a.hpp": "",
        "models/m.hpp": '#include "util/a.hpp"\n',
        "traces/t.hpp": '#include "util/a.hpp"\n',
        "sim/s.hpp": '#include "models/m.hpp"\n#include "traces/t.hpp"\n',
        "cli/c.cpp": "#include <boost/program_options.hpp>\n",
    }
    cases = {
        "points up": {"util/b.hpp": '#include "sim/s.hpp"\n'},
        "side by side": {"traces/u.hpp": '#include "models/m.hpp"\n'},
        "does not link": {"analysis/r.hpp": "", "cli/d.cpp": '#include "analysis/r.hpp"\n'},
        "include cycle": {"sim/x.hpp": '#include "sim/y.hpp"\n', "sim/y.hpp": '#include "sim/x.hpp"\n'},
        "Program_options": {"sim/p.cpp": "#include <boost/program_options.hpp>\n"},
    }
    failures = 0
    for expect, extra in [("", {})] + list(cases.items()):
        with tempfile.TemporaryDirectory() as root:
            with open(os.path.join(root, "CMakeLists.txt"), "w") as f:
                f.write(cmake)
            for path, text in {**clean, **extra}.items():
                os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(root, path), "w") as f:
                    f.write(text)
            errors, _ = check(root)
            caught = any(expect in e for e in errors) if expect else not errors
            print(f"{'ok' if caught else 'MISSED'}: {expect or 'clean tree'}: {errors}")
            failures += not caught
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    errors, edges = check(sys.argv[1])
    print("folder include graph (includes per edge):")
    for (a, b), n in sorted(edges.items(), key=lambda e: (-RANK[e[0][0]], e[0][1])):
        print(f"  {a} -> {b}: {n}")
    for e in errors:
        print("error: " + e)
    print(f"{len(errors)} layering error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
