#!/usr/bin/env python3
"""Extracts cubins from an apnn cache dir (entry format: include/apnn/cache.h) whose label
matches every given substring, and prints each kernel's register use and SASS histogram
(cuobjdump must be on PATH). Usage: sass_summary.py CACHE_DIR SUBSTRING..."""
import collections, glob, os, re, struct, subprocess, sys, tempfile

root, needles = sys.argv[1], sys.argv[2:]
for path in sorted(glob.glob(os.path.join(root, "*", "*.apnnc"))):
    data = open(path, "rb").read()
    label_len = struct.unpack_from("<I", data, 12)[0]
    label = data[48:48 + label_len].decode()
    if not all(n in label for n in needles):
        continue
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(data[48 + label_len:])
    print("==", label)
    res = subprocess.run(["cuobjdump", "-res-usage", f.name], capture_output=True, text=True).stdout
    print("\n".join(l.strip() for l in res.splitlines() if "REG" in l or "Function" in l))
    sass = subprocess.run(["cuobjdump", "-sass", f.name], capture_output=True, text=True).stdout
    for kernel in re.split(r"\n\s*Function : ", sass)[1:]:
        name = kernel.split("\n", 1)[0].strip()
        ops = collections.Counter(m.group(1) for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", kernel))
        print(f"{name}: {sum(ops.values())} instructions; top:", ", ".join(f"{k} {v}" for k, v in ops.most_common(8)))
    os.unlink(f.name)
