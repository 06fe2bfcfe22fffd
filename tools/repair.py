"""``recordio repair PATH``: finish or undo an append whose writer died during its commit."""

from recordio.mindrecord.write.recovery import repair
from recordio.tools._common import PATH_HELP, dataset_path

HELP = ("finish (or undo) an append interrupted by a crash, after checking its journal names only this "
        "dataset's files; readers refuse such a dataset until it is repaired (reading never writes)")
EXAMPLE = "recordio repair out/train.mindrecord0"


def add_arguments(parser):
    parser.add_argument("path", type=dataset_path, help=PATH_HELP)


def run(args):
    found = repair(args.path)
    print(f"{args.path}: {'interrupted append finished' if found else 'nothing to repair'}")
    return 0
