"""Attempts for notebook 05's exercises (see tests/test_exercises.py)."""

_F_AND_G_WRONG = '''
class MyF(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        total = grad.clone()
        dist.all_reduce(total, group=ctx.group)
        return total, None


class MyG(torch.autograd.Function):   # the tempting mistake: all-reduce both ways
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        total = x.clone()
        dist.all_reduce(total, group=group)
        return total

    @staticmethod
    def backward(ctx, grad):
        total = grad.clone()
        dist.all_reduce(total, group=ctx.group)
        return total, None


def my_f_and_g():
    return MyF.apply, MyG.apply
'''

# The first idea: gather with an autograd Function (backward: reduce-scatter), then an
# ordinary linear. Every value is right, but F.linear keeps the gathered input, t times
# the shard, for its backward.
_REGATHER_WRONG = '''
class Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
        dist.all_gather(parts, x.contiguous(), group=group)
        return torch.cat(parts, dim=1)

    @staticmethod
    def backward(ctx, grad):
        chunks = [c.contiguous() for c in grad.chunk(dist.get_world_size(ctx.group), dim=1)]
        mine = torch.empty_like(chunks[0])
        dist.reduce_scatter(mine, chunks, group=ctx.group)
        return mine, None


def my_gather_linear():
    def gather_linear(x, weight, bias, group):
        return torch.nn.functional.linear(Gather.apply(x, group), weight, bias)
    return gather_linear
'''

CASES = {
    "05.column-linear": dict(
        cheat="def my_column_linear(x, weight, bias):\n"
              "    from companion.tensor_parallel import ColumnParallelLinear\n"
              "    full = torch.nn.Linear(weight.shape[1], weight.shape[0]).double()\n"
              "    with torch.no_grad():\n"
              "        full.weight.copy_(weight)\n"
              "        full.bias.copy_(bias)\n"
              "    return ColumnParallelLinear(full)(x).detach()\n",
        # Slicing the weight's columns (its *input* features) instead of its rows.
        wrong="def my_column_linear(x, weight, bias):\n"
              "    rank, t = dist.get_rank(), dist.get_world_size()\n"
              "    cols = weight.shape[1] // t\n"
              "    return x @ weight[:, rank * cols:(rank + 1) * cols].T + bias\n",
        wrong_kind="crash",
        wrong_line="return x @ weight[:, rank * cols:(rank + 1) * cols].T + bias",
    ),
    "05.f-and-g": dict(
        cheat="def my_f_and_g():\n"
              "    from companion.tensor_parallel import f, g\n"
              "    return f, g\n",
        wrong=_F_AND_G_WRONG, wrong_kind="wrong_value",
    ),
    "05.regather-linear": dict(
        cheat="def my_gather_linear():\n"
              "    from companion.tensor_parallel import GatherLinearRegather\n"
              "    return GatherLinearRegather.apply\n",
        wrong=_REGATHER_WRONG, wrong_kind="wrong_value",
    ),
}
