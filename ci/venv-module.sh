# Sourced by the wrappers ci/gate, ci/aa, ci/ab, ci/soak and ci/export once
# they set `needs`, the make target that prepares what they run (deps or
# build): runs the module ci.<the wrapper's name> in the repository's .venv
# with the wrapper's arguments, from any directory.
name=$(basename "$0")
root=$(cd "$(dirname "$0")/.." && pwd) || exit 2
py="$root/.venv/bin/python"
if [ ! -x "$py" ]; then
    if [ "$needs" = deps ]; then why=" (it makes the venv)"; else why=""; fi
    echo "ci/$name: $py missing: run \`make $needs\` first$why" >&2
    exit 2
fi
# -P: do not put the working directory on sys.path (a `ci` package of the
# caller's own must not shadow ours).
PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" exec "$py" -P -m "ci.$name" "$@"
