"""``recordio doctor``: which compiled parts (C extensions) are active, and how to get the missing ones."""

import json
import os
import warnings

HELP = ("list the compiled parts (the integer codec, the vision kernels, the JPEG region decoder) and whether "
        "each is active, missing or disabled by its self-check, with what a missing one costs and how to build "
        "it; exit 1 if one is not active")
EXAMPLE = "recordio doctor   # or: recordio --version"


def add_arguments(parser):
    parser.add_argument("--json", action="store_true", help="print {module: state} as JSON")


def run(args):
    from recordio import compiled

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # the states below say it all
        vision = _import_vision()
        states = compiled.report(run_checks=vision)
    if args.json:
        print(json.dumps(states, indent=2))
    else:
        for module, state in states.items():
            part = compiled.PARTS[module]
            word, _, why = state.partition(": ")
            print(f"{word:<8}  {module}  ({part.what}){f': {why}' if why else ''}")
            if word not in ("active", "unused"):
                print(f"          cost: {part.cost}\n          to get it: {part.advice()}")
        if not vision:
            print("(OpenCV is not installed: the JPEG decoder's self-check did not run)")
        if os.environ.get("RECORDIO_CODEC") == "numpy":
            print("RECORDIO_CODEC=numpy: the numpy integer codec runs on purpose")
        print(f"{compiled.ALLOW_SLOW}=1 silences the warnings a missing part gives at its first use")
    return 0 if all(s.split(":")[0] in ("active", "unused") for s in states.values()) else 1


def _import_vision():
    """Whether recordio.vision imports (it registers the JPEG decoder's self-check); needs OpenCV."""
    try:
        import recordio.vision  # noqa: F401
    except ImportError:
        return False
    return True
