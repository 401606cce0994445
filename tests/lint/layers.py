#!/usr/bin/env python3
"""The layer rule (docs/ARCHITECTURE.md), checked on the sources and the built objects.

The layers and front ends are the mt_layer() and mt_front_end() calls of the
top CMakeLists.txt: each names its folders and the layers it may use
(BELOW). A file may include, and an object may call, only its own layer and
the layers its BELOW names: not one above it, not a sibling, not one further
down that it skips to. Above the core, calls to the library's public API
are allowed whichever layer defines them. Also: every folder of src/ is in one layer, and no
two sources share a name.

usage: layers.py SOURCE_DIR BUILD_DIR
"""
import json
import os
import re
import subprocess
import sys

# A source may be longer than this only when it holds one idea, said here.
MAX_LINES = 1000
LONG_FILES = {
    "src/db/db_pg.c": "one idea: the PostgreSQL driver (its SQL, connection and notices)",
}


def layers_of(src_dir):
    """{layer: (folders, below)}, in the order declared."""
    text = open(os.path.join(src_dir, "CMakeLists.txt"), encoding="utf-8").read()
    layers = {}
    for m in re.finditer(r"^mt_(?:layer|front_end)\(([^)]*)\)", text, re.M):
        words = m.group(1).split()
        name, rest = words[0], words[1:]
        below = rest[rest.index("BELOW") + 1:] if "BELOW" in rest else []
        folders = rest[:rest.index("BELOW")] if "BELOW" in rest else rest
        layers[name] = ([f[len("src/"):] for f in folders], below)
    return layers


def main():
    src_dir, build_dir = sys.argv[1], sys.argv[2]
    layers = layers_of(src_dir)
    folder_layer = {}
    for name, (folders, _) in layers.items():
        for f in folders:
            folder_layer[f] = name
    problems = []

    def closure(name, seen=None):
        seen = set() if seen is None else seen
        for b in layers[name][1]:
            if b not in seen:
                seen.add(b)
                closure(b, seen)
        return seen

    def allowed(a, b):
        return a == b or b in layers[a][1]

    # Above the core, the library's public API (include/, exported by
    # libmemtool.so) may be called whatever layer defines it.
    above_core = {n for n in layers if "core" in closure(n)}
    exported = set()
    lib = os.path.join(build_dir, "libmemtool.so")
    if os.path.exists(lib):
        nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                            check=True).stdout
        exported = {line.split()[-1] for line in nm.splitlines() if line.strip()}
    else:
        problems.append("%s: not built" % lib)

    # Every folder in a layer; no two sources of one name.
    names = {}
    for folder in sorted(os.listdir(os.path.join(src_dir, "src"))):
        path = os.path.join(src_dir, "src", folder)
        if not os.path.isdir(path):
            continue
        if folder not in folder_layer:
            problems.append("src/%s is in no layer: add it to an mt_layer() or "
                            "mt_front_end() of CMakeLists.txt" % folder)
        for f in os.listdir(path):
            if f.endswith((".c", ".h")):
                names.setdefault(f, []).append("src/%s/%s" % (folder, f))
    for f, where in sorted(names.items()):
        if len(where) > 1:
            problems.append("%s: one name for two files; name each for its job" % ", ".join(where))

    # Includes.
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for folder, layer in sorted(folder_layer.items()):
        path = os.path.join(src_dir, "src", folder)
        for f in sorted(os.listdir(path)):
            if not f.endswith((".c", ".h")):
                continue
            rel = "src/%s/%s" % (folder, f)
            text = open(os.path.join(path, f), encoding="utf-8").read()
            if f.endswith(".c") and text.count("\n") > MAX_LINES and rel not in LONG_FILES:
                problems.append("%s: %d lines, over %d: split it by idea" %
                                (rel, text.count("\n"), MAX_LINES))
            for m in include.finditer(text):
                target = m.group(1)
                if "/" not in target:
                    problems.append('%s: #include "%s": name the folder ("%s/%s")' %
                                    (rel, target, folder, target))
                    continue
                to = target.split("/")[0]
                if to not in folder_layer:
                    continue  # generated, or a header beside the build
                if not allowed(layer, folder_layer[to]):
                    problems.append('%s (%s) includes "%s" (%s): not a layer it may use (%s)' %
                                    (rel, layer, target, folder_layer[to],
                                     " ".join(layers[layer][1]) or "none"))

    # Calls, from the objects the build made of these sources.
    commands = json.load(open(os.path.join(build_dir, "compile_commands.json")))
    objects = {}
    for c in commands:
        source = os.path.relpath(c["file"], src_dir)
        out = c.get("output") or re.search(r"-o (\S+)", c["command"]).group(1)
        parts = source.split("/")
        if parts[0] != "src" or len(parts) != 3 or parts[1] not in folder_layer:
            continue
        if out.startswith("tests/") or source in objects:
            continue
        objects[source] = os.path.join(c.get("directory", build_dir), out)
    if not objects:
        problems.append("no objects of src/ in %s/compile_commands.json" % build_dir)
    defined, needed = {}, {}
    for source, obj in objects.items():
        if not os.path.exists(obj):
            problems.append("%s: not built (%s)" % (source, obj))
            continue
        nm = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        needed[source] = set()
        for line in nm.splitlines():
            p = line.split()
            if len(p) == 2 and p[0] == "U":
                needed[source].add(p[1])
            elif len(p) == 3 and p[1] in "TDBRVWG":
                defined[p[2]] = source
    for source, syms in sorted(needed.items()):
        layer = folder_layer[source.split("/")[1]]
        for s in sorted(syms):
            if s not in defined:
                continue
            to = folder_layer[defined[s].split("/")[1]]
            if not allowed(layer, to) and not (layer in above_core and s in exported):
                problems.append("%s (%s) calls %s of %s (%s): not a layer it may use (%s)" %
                                (source, layer, s, defined[s], to, " ".join(layers[layer][1]) or "none"))

    for p in problems:
        print(p)
    checked = len(objects)
    if problems:
        print("layers: %d problem(s) in %d objects and their sources" % (len(problems), checked))
        return 1
    print("layers: %d layers, %d objects and their sources keep the rule" % (len(layers), checked))
    return 0


if __name__ == "__main__":
    sys.exit(main())
