"""check_wheel.py - build the sluice-client wheel offline and check what it holds.

The source is copied to a temporary directory first, so that the build leaves nothing
(build/, *.egg-info) in clients/python. The build runs
``python -m pip wheel --no-deps --no-build-isolation`` with the interpreter running this
script when it has setuptools and wheel, else with the first python3 on PATH that has them
(Debian's python3-setuptools and python3-wheel; see scripts/deps). Exit 0 when the wheel
holds sluice/__init__.py and sluice/py.typed.

Usage: python3 clients/python/tools/check_wheel.py [SOURCE_DIR]
"""
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
NEEDED = ("sluice/__init__.py", "sluice/py.typed")
PROBE = "import setuptools, wheel, pip"


def interpreter():
    """A Python that can build wheels without the network."""
    candidates = [sys.executable]
    for d in os.environ.get("PATH", "").split(os.pathsep):
        for name in ("python3", "python3.11"):
            p = os.path.join(d, name)
            if os.path.isfile(p) and os.access(p, os.X_OK) and p not in candidates:
                candidates.append(p)
    for p in candidates:
        if subprocess.run([p, "-c", PROBE], capture_output=True).returncode == 0:
            return p
    sys.exit("check_wheel: no python3 with setuptools, wheel and pip; run scripts/deps")


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, ".."))
    tmp = tempfile.mkdtemp(prefix="sluice-wheel-")
    try:
        copy = os.path.join(tmp, "src")
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns(
            "build", "dist", "*.egg-info", "__pycache__", "tests", "tools"))
        out = os.path.join(tmp, "wheels")
        py = interpreter()
        cmd = [py, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
               "-w", out, copy]
        print("check_wheel:", " ".join(cmd), flush=True)
        env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
        subprocess.run(cmd, check=True, env=env)
        wheels = [f for f in os.listdir(out) if f.endswith(".whl")]
        if len(wheels) != 1 or not wheels[0].startswith("sluice_client-"):
            sys.exit(f"check_wheel: expected one sluice_client wheel, got {wheels}")
        with zipfile.ZipFile(os.path.join(out, wheels[0])) as z:
            names = set(z.namelist())
        missing = [n for n in NEEDED if n not in names]
        if missing:
            sys.exit(f"check_wheel: {wheels[0]} lacks {missing}; it holds {sorted(names)}")
        print(f"check_wheel: {wheels[0]} holds {', '.join(NEEDED)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
