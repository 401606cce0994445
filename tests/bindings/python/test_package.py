"""The package as users get it: an sdist and a wheel from `python3 -m build
--no-isolation`, the wheel installed into a fresh venv and used there."""
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
PACKAGE = HERE.parents[2] / "bindings" / "python"


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == 0, "%s\n%s\n%s" % (args, r.stdout[-2000:], r.stderr[-2000:])
    return r


def test_wheel_installs_into_a_venv_and_works(tmp_path, library):
    # Built from a copy: the build writes beside its sources.
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns(
        "build", "dist", "*.egg-info", "__pycache__"))
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path / "dist"),
         str(src)])
    dist = sorted(p.name for p in (tmp_path / "dist").iterdir())
    assert dist == ["memtool-0.1.0-py3-none-any.whl", "memtool-0.1.0.tar.gz"]
    wheel = tmp_path / "dist" / dist[0]
    names = zipfile.ZipFile(wheel).namelist()
    for f in ("memtool/__init__.py", "memtool/_lib.py", "memtool/py.typed"):
        assert f in names

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    py = str(venv / "bin" / "python")
    run([py, "-m", "pip", "install", "--no-index", "--no-deps", str(wheel)])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["MEMTOOL_LIBRARY"] = library
    r = run([py, "-c", "import memtool, sys; "
             "t = memtool.MemtoolMemoryTool(store=sys.argv[1]); "
             "print(memtool.__file__); "
             "print(t.create({'path': '/memories/a.md', 'file_text': 'hi'}))",
             "sqlite:%s" % (tmp_path / "m.db")], env=env, cwd=str(tmp_path))
    where, result = r.stdout.splitlines()
    assert where.startswith(str(venv)), where
    assert result == "File created successfully at: /memories/a.md"
