#!/usr/bin/env python3
"""Add lock entries for optional platform packages the registry mirror does not serve.

The npm mirror of these machines has only the Linux builds of optional per-platform packages
(@msgpackr-extract/*-darwin-*, @unrs/resolver-binding-win32-*, ...: E404 for the others). `npm
install` therefore leaves them out of package-lock.json, and `npm ci` then refuses the lock as
"out of sync". Entries with the package's os/cpu/libc let `npm ci` skip them on Linux without
fetching anything, and install them as usual elsewhere. Run after any `npm install` that changes
the lock:  python3 scripts/lock-foreign-platforms.py package-lock.json
"""
import json, re, sys
p = sys.argv[1]
lock = json.load(open(p))
pkgs = lock['packages']
OS = ['darwin','linux','win32','android','freebsd','openharmony','sunos','aix','netbsd','openbsd']
CPU = ['arm64','x64','arm','ia32','loong64','ppc64','riscv64','s390x','wasm32','mips64el','loong64']
added = []
for path, meta in list(pkgs.items()):
    for dep, ver in (meta.get('optionalDependencies') or {}).items():
        key = 'node_modules/' + dep
        if key in pkgs: continue
        parts = re.split(r'[-/]', dep.split('/')[-1])
        os_ = next((o for o in OS if o in parts), None)
        cpu = next((c for c in CPU if c in parts), None)
        if not os_ or not cpu:
            print('cannot infer platform of', dep, file=sys.stderr); continue
        entry = {'version': ver, 'optional': True, 'os': [os_], 'cpu': [cpu]}
        if 'musl' in parts or 'musleabihf' in parts: entry['libc'] = ['musl']
        elif 'gnu' in parts or 'gnueabihf' in parts: entry['libc'] = ['glibc']
        pkgs[key] = entry
        added.append(dep)
lock['packages'] = dict(sorted(pkgs.items(), key=lambda kv: kv[0]))
json.dump(lock, open(p, 'w'), indent=2); open(p, 'a').write('\n')
print('added', len(added))
