"""The resume state of a pipeline (``state_dict`` / ``load_state_dict``).

    {"version": 1, "order": 2, "seed": 5489, "epoch": 3, "delivered": 120,
     "source": {"epoch": 3, "consumed": 3840} | None}

``epoch`` is the iterator's epoch and ``delivered`` the outputs it delivered in it. ``source`` is
where the source stands, described for the whole job: ``consumed`` positions of the data epoch's
global order were delivered across *all* shards (ranks in lockstep, as in synchronous training:
every rank saves at the same step). A pipeline whose source can restart at a position (no shuffle
buffer, take/skip, zip or concat) resumes there without reading what was delivered, under any
number of shards; the others replay the epoch and drop the first ``delivered`` outputs, which needs
the same sharding.

``order`` is the version of the shuffled orders (``order.ORDER_VERSION``, or ``"mindspore"`` under
``config.set_order_mode("mindspore")``; a state without it is of version 1): a state saved inside an
epoch resumes only under the order that saved it, since its positions name other rows under
another; a state at an epoch's start resumes under any.
"""

from recordio.dataset.order.shuffle import order_version
from recordio.errors import PipelineError

__all__ = ["check_state", "initial_state"]

VERSION = 1


def initial_state(seed):
    return {"version": VERSION, "order": order_version(), "seed": seed, "epoch": 0, "delivered": 0, "source": None}


def check_state(state):
    """Validate a state before it is used; returns a clean copy."""
    if not isinstance(state, dict) or state.get("version") != VERSION:
        raise PipelineError(f"load_state_dict: not a recordio pipeline state (version {VERSION}): {state!r}")
    try:
        clean = {"version": VERSION, "seed": int(state["seed"]), "epoch": int(state["epoch"]),
                 "delivered": int(state["delivered"]), "source": None, "shards": state.get("shards")}
        if state.get("source") is not None:
            clean["source"] = {"epoch": int(state["source"]["epoch"]),
                               "consumed": int(state["source"]["consumed"])}
    except (KeyError, TypeError, ValueError) as e:
        raise PipelineError(f"load_state_dict: malformed state {state!r}: {e}") from None
    if clean["epoch"] < 0 or clean["delivered"] < 0:
        raise PipelineError(f"load_state_dict: negative epoch or count in {state!r}")
    _check_order(state.get("order", 1), clean)
    clean["order"] = order_version()
    return clean


def _check_order(order, clean):
    current = order_version()
    if order == current or (clean["delivered"] == 0 and clean["source"] is None):
        return
    if "mindspore" in (order, current):
        how = (f"order mode {'mindspore' if order == 'mindspore' else 'recordio'!r}, but the order mode is now "
               f"{'mindspore' if current == 'mindspore' else 'recordio'!r} (config.set_order_mode)")
    else:
        how = (f"order version {order!r}, but this recordio draws shuffled epochs with order version {current} "
               f"(a keyed Feistel permutation instead of a stored numpy permutation)")
    raise PipelineError(f"load_state_dict: this state was saved inside epoch {clean['epoch']} under shuffle {how}: "
                        f"its positions would name other rows. Resume as it was saved, or restart at the next "
                        f"epoch: state['epoch'] += 1, state['delivered'] = 0, state['source'] = None")
