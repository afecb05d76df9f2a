"""A real torch.distributed DDP pipeline for the real node (TestRealPyTorch).

train:    DDP (gloo) over phasegang's RANK, WORLD_SIZE, MASTER_ADDR and
          MASTER_PORT; a linear model on synthetic data; rank 0 saves the
          model to /data/model.pt.
validate: loads /data/model.pt, reports accuracy on held-out data.
test:     the same on other data.

Each phase writes its outputs (a JSON object) to /dev/termination-log,
where phasegang reads them.
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

torch.set_num_threads(1)
TRUE_W = torch.arange(10, dtype=torch.float32) / 10


def data(seed, n=256):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=g)
    return x, x @ TRUE_W + 0.01 * torch.randn(n, generator=g)


def report(**outputs):
    msg = json.dumps({k: str(v) for k, v in outputs.items()})
    with open("/dev/termination-log", "w") as f:
        f.write(msg)
    print("outputs:", msg, flush=True)


def train():
    t0 = time.time()
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world}: process group up after {time.time() - t0:.2f}s "
          f"(MASTER_ADDR={os.environ['MASTER_ADDR']})", flush=True)
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(10, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data(seed=rank)
    for step in range(60):
        loss = ((model(x).squeeze(1) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    # Mean loss over the ranks, and proof that DDP kept the replicas equal.
    t = torch.tensor([loss.item()])
    dist.all_reduce(t)
    w = model.module.weight.detach().clone()
    w_sum = w.clone()
    dist.all_reduce(w_sum)
    in_sync = torch.allclose(w_sum / world, w)
    print(f"rank {rank}: loss {t.item() / world:.6f}, replicas in sync: {in_sync}", flush=True)
    if rank == 0:
        torch.save(model.module.state_dict(), "/data/model.pt")
    report(loss=f"{t.item() / world:.6f}", in_sync=str(in_sync).lower(), world=world)
    dist.destroy_process_group()


def evaluate(seed):
    model = torch.nn.Linear(10, 1)
    model.load_state_dict(torch.load("/data/model.pt"))
    x, y = data(seed=seed)
    with torch.no_grad():
        err = (model(x).squeeze(1) - y).abs()
    accuracy = (err < 0.1).float().mean().item()
    print(f"{sys.argv[1]}: accuracy {accuracy:.4f} on {len(y)} samples", flush=True)
    report(accuracy=f"{accuracy:.4f}")


if __name__ == "__main__":
    {"train": train, "validate": lambda: evaluate(1000), "test": lambda: evaluate(2000)}[sys.argv[1]]()
