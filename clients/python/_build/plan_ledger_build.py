"""A PEP 517 build backend for plan-ledger-client, standard library only.

pip and ``python -m build`` load it from this directory (``backend-path`` in pyproject.toml), so a
wheel or an sdist builds offline, with no setuptools or wheel package: the package is pure Python
(``plan_ledger/``), and a wheel is a zip file with a ``.dist-info`` directory (PEP 427, PEP 491),
an sdist a tar.gz with ``PKG-INFO`` (PEP 517, core metadata 2.1).

Entries carry a fixed timestamp (``SOURCE_DATE_EPOCH`` when set), so the same tree builds the same bytes.
"""
from __future__ import annotations

import base64
import calendar
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "plan_ledger"
SDIST_FILES = ("pyproject.toml", "README.md", "CHANGELOG.md")
SDIST_DIRS = (PACKAGE, "_build", "tests", "examples")


def _project() -> Dict[str, str]:
    """The ``[project]`` fields this backend needs, read from pyproject.toml."""
    with open(os.path.join(ROOT, "pyproject.toml"), "r", encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib  # Python >= 3.11

        project = tomllib.loads(text)["project"]
        license_text = project.get("license", {}).get("text", "")
        fields = {k: project[k] for k in ("name", "version", "description", "requires-python")}
        fields["license"] = license_text
    except ImportError:  # Python 3.9 / 3.10: the simple `key = "value"` lines of [project]
        section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
        body = section.group(1) if section else ""
        fields = dict(re.findall(r'^([A-Za-z-]+)\s*=\s*"([^"]*)"\s*$', body, re.M))
        license_match = re.search(r'^license\s*=\s*\{\s*text\s*=\s*"([^"]*)"', body, re.M)
        fields["license"] = license_match.group(1) if license_match else ""
    with open(os.path.join(ROOT, PACKAGE, "__init__.py"), "r", encoding="utf-8") as f:
        match = re.search(r'^__version__\s*=\s*"([^"]+)"', f.read(), re.M)
    if not match or match.group(1) != fields["version"]:
        raise RuntimeError(f"pyproject.toml version {fields['version']} differs from {PACKAGE}.__version__ {match.group(1) if match else None}")
    return fields


def _dist_name(project: Dict[str, str]) -> str:
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project: Dict[str, str]) -> bytes:
    with open(os.path.join(ROOT, "README.md"), "r", encoding="utf-8") as f:
        readme = f.read()
    head = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"License: {project['license']}",
        f"Requires-Python: {project['requires-python']}",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Typing :: Typed",
        "Description-Content-Type: text/markdown",
    ]
    return ("\n".join(head) + "\n\n" + readme).encode("utf-8")


def _timestamp() -> Tuple[int, int, int, int, int, int]:
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "1704067200"))  # 2024-01-01 unless told
    return time.gmtime(max(epoch, 315532800))[:6]  # zip cannot date before 1980


def _package_files() -> List[str]:
    out = []
    for base, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith((".pyc", ".pyo")):
                out.append(os.path.relpath(os.path.join(base, name), ROOT).replace(os.sep, "/"))
    return out


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{path},sha256={digest},{len(data)}"


def _dist_info(project: Dict[str, str]) -> Dict[str, bytes]:
    return {
        "METADATA": _metadata(project),
        "WHEEL": b"Wheel-Version: 1.0\nGenerator: plan-ledger-build\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "top_level.txt": f"{PACKAGE}\n".encode("ascii"),
    }


def _write_wheel(wheel_directory: str, files: List[Tuple[str, bytes]], project: Dict[str, str]) -> str:
    name = f"{_dist_name(project)}-{project['version']}"
    info = f"{name}.dist-info"
    entries = list(files) + [(f"{info}/{k}", v) for k, v in _dist_info(project).items()]
    record = "\n".join(_record_line(p, d) for p, d in entries) + f"\n{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode("utf-8")))
    filename = f"{name}-py3-none-any.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    stamp = _timestamp()
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in entries:
            entry = zipfile.ZipInfo(path, stamp)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(entry, data)
    return filename


def _read(rel: str) -> bytes:
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()


# ---------------------------------------------------------------------------- PEP 517 hooks


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[dict] = None) -> str:
    project = _project()
    info = f"{_dist_name(project)}-{project['version']}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for name, data in _dist_info(project).items():
        with open(os.path.join(metadata_directory, info, name), "wb") as f:
            f.write(data)
    return info


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None, metadata_directory: Optional[str] = None) -> str:
    project = _project()
    return _write_wheel(wheel_directory, [(p, _read(p)) for p in _package_files()], project)


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None, metadata_directory: Optional[str] = None) -> str:
    """PEP 660: a wheel whose .pth file puts this source tree on sys.path."""
    project = _project()
    pth = (ROOT + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, [(f"__editable__.{_dist_name(project)}.pth", pth)], project)


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    project = _project()
    name = f"{_dist_name(project)}-{project['version']}"
    rels = [r for r in SDIST_FILES if os.path.exists(os.path.join(ROOT, r))]
    for d in SDIST_DIRS:
        for base, dirs, files in os.walk(os.path.join(ROOT, d)):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            rels.extend(os.path.relpath(os.path.join(base, f), ROOT).replace(os.sep, "/") for f in sorted(files) if not f.endswith((".pyc", ".pyo")))
    members = [(f"{name}/{r}", _read(r)) for r in rels] + [(f"{name}/PKG-INFO", _metadata(project))]
    filename = f"{name}.tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    mtime = calendar.timegm(_timestamp() + (0, 0, 0))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data in members:
            entry = tarfile.TarInfo(path)
            entry.size = len(data)
            entry.mtime = int(mtime)
            entry.mode = 0o644
            tar.addfile(entry, io.BytesIO(data))
    import gzip

    with open(os.path.join(sdist_directory, filename), "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=int(mtime)) as gz:
            gz.write(buffer.getvalue())
    return filename
