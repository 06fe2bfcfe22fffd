"""A small causal language model trained on a recordio token dataset: batches, resume, ranks.

    python examples/lm_tokens.py --out runs/lm                  # writes data/, trains, prints the losses
    python examples/lm_tokens.py --out runs/lm --crash-after 40 # stops after step 40 (a checkpoint at 40)
    python examples/lm_tokens.py --out runs/lm                  # resumes from the checkpoint, exactly
    torchrun --nproc_per_node=2 examples/lm_tokens.py --out runs/lm2   # two ranks (gloo on CPU)

The corpus is made here: documents drawn from a fixed first-order Markov chain over 64 token ids
(so there is something to learn: the loss falls from ln 64 ≈ 4.16 towards the chain's entropy),
joined with an end-of-document id and cut into rows of ``seq_length + 1`` int32 ids, the layout
``recordio convert text`` / ``convert megatron --seq-length`` write. Training reads
``MindDataset(columns_list=["input_ids"]).batch(B)``: each batch is one ``(B, L)`` int32 array
(no per-row step), turned into torch's ``long`` once, on the device. Every ``--checkpoint-every``
steps the model, the optimizer and the pipeline's position are saved; a run started again resumes
after the last saved batch with the same data and the same losses as an uninterrupted run. Under
``torchrun`` each rank reads its own rows (MindDataset takes the rank from torch.distributed) and
the gradients are averaged (DistributedDataParallel).
"""

import argparse
import json
import os

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

import recordio

VOCAB, EOD = 64, 0


def make_corpus(path, rows, seq_length, seed=0):
    """Documents from a Markov chain, packed into ``rows`` rows of ``seq_length + 1`` ids."""
    rng = np.random.default_rng(seed)
    successors = rng.integers(1, VOCAB, (VOCAB, 3))               # each token has 3 likely successors
    need, ids = rows * (seq_length + 1), []
    while len(ids) < need:
        token = int(rng.integers(1, VOCAB))
        for _ in range(int(rng.integers(20, 200))):
            ids.append(token)
            token = int(successors[token, rng.integers(0, 3)]) if rng.random() < 0.9 else int(rng.integers(1, VOCAB))
        ids.append(EOD)
    grid = np.asarray(ids[:need], np.int32).reshape(rows, seq_length + 1)
    with recordio.FileWriter(path, shard_num=2, overwrite=True) as writer:
        writer.add_schema({"input_ids": {"type": "int32", "shape": [-1]}}, "markov tokens")
        writer.write_raw_data([{"input_ids": row} for row in grid])


class TinyLM(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        self.rnn = nn.GRU(width, width, batch_first=True)
        self.head = nn.Linear(width, VOCAB)

    def forward(self, ids):
        hidden, _ = self.rnn(self.embed(ids))
        return self.head(hidden)


def pipeline(path, batch, seed):
    recordio.config.set_seed(seed)
    return recordio.MindDataset(path + "0", columns_list=["input_ids"], shuffle=True).batch(batch, drop_remainder=True)


def train(args, device, rank, world):
    torch.manual_seed(0)
    model = TinyLM().to(device)
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    data = pipeline(os.path.join(args.out, "data", "tokens.mindrecord"), args.batch, args.seed)
    checkpoint = os.path.join(args.out, f"checkpoint-rank{rank}.pt")
    losses, step, epoch = [], 0, 0
    if os.path.exists(checkpoint):
        state = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        data.load_state_dict(state["data"])                          # the pipeline's position
        losses, step, epoch = state["losses"], state["step"], state["data"]["epoch"]
    iterator = data.create_tuple_iterator(num_epochs=args.epochs, output_numpy=True)
    for epoch in range(epoch, args.epochs):
        for (ids,) in iterator:                                      # one epoch
            batch = torch.from_numpy(ids).to(device).long()         # (B, L) int32 -> long, once
            logits = ddp(batch[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            losses.append(round(loss.item(), 6))
            if step % args.checkpoint_every == 0 or step == args.crash_after:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "losses": losses,
                            "step": step, "data": iterator.state_dict()}, checkpoint)
            if step == args.crash_after:
                return losses                                        # as if the process were killed here
    return losses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/lm_tokens")
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--checkpoint-every", type=int, default=20)
    parser.add_argument("--crash-after", type=int, default=None)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo" if args.device == "cpu" else "nccl")
    rank = dist.get_rank() if world > 1 else 0
    data = os.path.join(args.out, "data", "tokens.mindrecord")
    if rank == 0 and not os.path.exists(data + "0"):
        os.makedirs(os.path.dirname(data), exist_ok=True)
        make_corpus(data, args.rows, args.seq_length)
    if world > 1:
        dist.barrier()
    losses = train(args, torch.device(args.device), rank, world)
    first, last = float(np.mean(losses[:10])), float(np.mean(losses[-10:]))
    report = {"rank": rank, "world": world, "steps": len(losses), "losses": losses, "first": first, "last": last}
    with open(os.path.join(args.out, f"report-rank{rank}.json"), "w") as f:
        json.dump(report, f)
    print(f"rank {rank}/{world}: {len(losses)} steps, loss {first:.3f} -> {last:.3f}")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
