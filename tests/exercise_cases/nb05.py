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

_SP_WRONG = '''
class MySPGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
        dist.all_gather(parts, x.contiguous(), group=group)
        return torch.cat(parts, dim=1)

    @staticmethod
    def backward(ctx, grad):   # keeps its tokens' gradient but forgets to sum over ranks
        rank, t = dist.get_rank(ctx.group), dist.get_world_size(ctx.group)
        return grad.chunk(t, dim=1)[rank].contiguous(), None


class MySPScatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        chunks = [c.contiguous() for c in x.chunk(dist.get_world_size(group), dim=1)]
        mine = torch.empty_like(chunks[0])
        dist.reduce_scatter(mine, chunks, group=group)
        return mine

    @staticmethod
    def backward(ctx, grad):
        parts = [torch.empty_like(grad) for _ in range(dist.get_world_size(ctx.group))]
        dist.all_gather(parts, grad.contiguous(), group=ctx.group)
        return torch.cat(parts, dim=1), None


def my_sp_regions():
    return MySPGather.apply, MySPScatter.apply
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
    "05.sp-regions": dict(
        cheat="def my_sp_regions():\n"
              "    from companion.tensor_parallel import sp_all_gather, sp_reduce_scatter\n"
              "    return sp_all_gather, sp_reduce_scatter\n",
        wrong=_SP_WRONG, wrong_kind="wrong_value",
    ),
}
