#!/usr/bin/env bash
# The test command: installs what the tests need on a fresh machine, then runs pytest.
#   - the package with its test extras (every optional extra and the docs tools included), at the
#     exact versions of uv.lock, in .venv (uv, itself installed by pip at a pinned version;
#     `uv sync --locked` fails if uv.lock is out of date with pyproject.toml). Refresh the lock with
#     `uv lock --upgrade`, then run this script before committing the new uv.lock;
#   - a PostgreSQL server on 127.0.0.1:5432 that user postgres reaches without a password (the store
#     tests create and drop their own databases on it): started if installed and stopped, installed
#     from Debian's packages if missing.
#   - Debian's chromium and chromium-driver when /usr/bin/chromium is missing (the dashboard test drives
#     it headless through Playwright's Python package; no browser is downloaded by Playwright).
# Without arguments it first builds the documentation site (`mkdocs build --strict`, into a temporary
# directory that is removed; any warning, such as a broken link or a docstring mkdocstrings cannot
# read, fails the build and the command), then runs the default suite in two phases: every test but
# the `realtime` ones on four worker processes (pytest-xdist, a test file to a worker: the machine has
# two cores, and much of this phase waits on servers and subprocesses it starts), then the `realtime`
# ones alone (end-to-end crawls graded on the wall clock, which need the whole machine). `-p no:benchmark`: where
# pytest-benchmark is installed it warns under xdist, and the suite turns warnings into errors. With
# arguments: `python -m pytest ARGS` (no docs build).
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION=0.13.9
if ! command -v uv >/dev/null 2>&1 || [ "$(uv --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
  python3 -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
fi
export UV_PYTHON_DOWNLOADS=never  # the machine's Python 3.11+, never a downloaded interpreter
uv sync --locked --extra test
export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH"
# The suite starts hundreds of Python processes (the command line, crawls, servers): each one would
# compile every module it imports from source again (about 2 s each) where bytecode may not be written.
unset PYTHONDONTWRITEBYTECODE

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
if ! pg_up; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql postgresql-client
    version=$(ls /etc/postgresql | sort -V | tail -n 1)
    # loopback only, user postgres without a password: a server for tests, never for data
    echo "host all postgres 127.0.0.1/32 trust" > /tmp/pg_hba_tests.conf
    cat "/etc/postgresql/$version/main/pg_hba.conf" >> /tmp/pg_hba_tests.conf
    cp /tmp/pg_hba_tests.conf "/etc/postgresql/$version/main/pg_hba.conf"
  fi
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  pg_up || { echo "PostgreSQL did not start on 127.0.0.1:5432; the store tests need it" >&2; exit 1; }
fi

if [ ! -x /usr/bin/chromium ]; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver
fi

if [ "$#" -gt 0 ]; then
  exec python -m pytest "$@"
fi
start=$(date +%s)
status=0  # the docs build and both phases run; the command fails if any does
site_dir=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet --site-dir "$site_dir" || status=$?
rm -rf "$site_dir"
[ "$status" -eq 0 ] || echo "mkdocs build --strict failed" >&2
python -m pytest -n 4 --dist loadfile -p no:benchmark -m "not slow and not realtime" --durations=15 || status=$?
python -m pytest -p no:xdist -m "realtime and not slow" --durations=10 || status=$?
echo "test run: $(( $(date +%s) - start )) s (docs build and both phases)"
exit "$status"
