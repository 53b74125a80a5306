"""CUDA-only behaviour of the gpuaug kernels: the vectorised and misaligned paths around the vector
width, the strided path with many dimensions, streams, CUDA graphs and devices other than the
current one (64-bit indexing: test_large.py). Everything here is skipped without a GPU."""
import pytest
import torch

from gpuaug_testing import (DTYPES, assert_close, assert_exact, assert_sum_close, make_input,
                            mul_ref, relu_grad_ref, relu_ref, requires_cuda, requires_two_gpus,
                            round_ste_ref)

pytestmark = requires_cuda
ops = torch.ops.gpuaug

# name -> (number of tensor arguments, reference). Arguments share one shape here.
CASES = {
    "relu": (1, relu_ref),
    "round_ste": (1, round_ste_ref),
    "mul": (2, mul_ref),
    "_relu_backward": (2, relu_grad_ref),
    "_mul_backward": (3, lambda g, a, b: (mul_ref(g, b), mul_ref(g, a))),
}


def check(name, *args):
    out = getattr(ops, name)(*args)
    ref = CASES[name][1](*(a.cpu() for a in args))
    if isinstance(out, tuple):
        for o, r in zip(out, ref):
            assert_exact(o.cpu(), r)
    else:
        assert_exact(out.cpu(), ref)


def inputs(name, n, dtype, offsets, seed=0):
    """CASES[name][0] tensors of n elements starting `offsets[i]` elements into their storage:
    offset 0 is 16-byte aligned (vectorised path), any other offset that is not a multiple of
    16 bytes sends the whole call down the element-wise path."""
    count = CASES[name][0]
    return [make_input((n + offsets[i],), dtype, "cuda", seed + i)[offsets[i]:] for i in range(count)]


# Elements per 16-byte vector: 4 (float32), 2 (float64), 8 (half types); a block covers
# 256 threads x 4 vectors. Sizes straddle those boundaries.
SIZES = [1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 255, 1023, 1024, 1025, 2047, 2048, 2049,
         4095, 4096, 4097, 8191, 8192, 8193, 3 * 8192 + 5, 100_003]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_sizes_and_alignment(name, dtype):
    for n in SIZES:
        check(name, *inputs(name, n, dtype, (0, 0, 0)))            # all aligned: vectorised
        check(name, *inputs(name, n, dtype, (1, 1, 1), seed=7))    # all misaligned
        check(name, *inputs(name, n, dtype, (0, 3, 1), seed=9))    # mixed
    # 8-byte but not 16-byte aligned float32 (2 elements in).
    check(name, *inputs(name, 4099, dtype, (2, 2, 2), seed=11))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(CASES))
def test_strided_sizes(name, dtype):
    # Every other element (not dense): the strided kernels, at sizes around their block sizes.
    for n in SIZES:
        check(name, *[make_input((n, 2), dtype, "cuda", seed=i)[:, 1] for i in range(CASES[name][0])])


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_sizes(dtype):
    # Zero strides: a 0-d operand on either side, and an outer product.
    for n in SIZES:
        x = make_input((n,), dtype, "cuda", seed=1)
        s = make_input((), dtype, "cuda", seed=2)
        assert_exact(ops.mul(x, s).cpu(), mul_ref(x.cpu(), s.cpu()))
        assert_exact(ops.mul(s, x).cpu(), mul_ref(s.cpu(), x.cpu()))
        col = make_input((n, 1), dtype, "cuda", seed=3)
        row = make_input((1, 3), dtype, "cuda", seed=4)
        assert_exact(ops.mul(col, row).cpu(), mul_ref(col.cpu(), row.cpu()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("name", list(CASES))
def test_large(name, dtype):
    for offsets in [(0, 0, 0), (1, 0, 1)]:
        check(name, *inputs(name, (1 << 22) + 3, dtype, offsets, seed=13))


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_many_dims(dtype):
    # Eight dimensions that TensorIterator cannot merge, with a step and a broadcast.
    base = make_input((2, 3, 2, 3, 2, 3, 2, 6), dtype, "cuda", seed=1)
    x = base.permute(7, 0, 6, 1, 5, 2, 4, 3)[::2]
    check("relu", x)
    check("round_ste", x)
    check("mul", x, make_input(x.shape, dtype, "cuda", seed=2))
    b = make_input((1, 2, 1, 3, 1, 2, 1), dtype, "cuda", seed=3)
    out = ops.mul(x, b)
    assert_exact(out.cpu(), mul_ref(x.cpu(), b.cpu()))
    check("_relu_backward", make_input(x.shape, dtype, "cuda", seed=4), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_mul_backward_broadcast_reduction(dtype):
    a = make_input((1, 300, 1), dtype, "cuda", seed=1)[:, 1:]       # misaligned, broadcast
    b = make_input((64, 1, 33), dtype, "cuda", seed=2)
    grad = make_input((64, 299, 33), dtype, "cuda", seed=3)
    ga, gb = ops._mul_backward(grad, a, b)
    assert ga.shape == a.shape and gb.shape == b.shape
    g = grad.cpu()
    assert_sum_close(ga.cpu(), mul_ref(g, b.cpu()).double())
    assert_sum_close(gb.cpu(), mul_ref(g, a.cpu()).double())


@pytest.mark.parametrize("name", list(CASES))
def test_runs_on_the_current_stream(name):
    # The side stream is kept busy before it writes the input; a kernel launched on any other
    # stream would read the zeros that were there before.
    n = 1 << 20
    src = inputs(name, n, torch.float32, (0, 0, 0), seed=21)
    args = [torch.zeros_like(s) for s in src]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        for a, s in zip(args, src):
            a.copy_(s)
        out = getattr(ops, name)(*args)
    side.synchronize()
    ref = CASES[name][1](*(s.cpu() for s in src))
    for o, r in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
        assert_exact(o.cpu(), r)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("offsets", [(0, 0, 0), (1, 0, 1)], ids=["aligned", "misaligned"])
def test_cuda_graph_capture(name, offsets):
    static = inputs(name, 5000, torch.float32, offsets, seed=31)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up outside the capture
        getattr(ops, name)(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = getattr(ops, name)(*static)
    for seed in (41, 51):
        fresh = inputs(name, 5000, torch.float32, (0, 0, 0), seed=seed)
        for s, f in zip(static, fresh):
            s.copy_(f)
        graph.replay()
        torch.cuda.synchronize()
        ref = CASES[name][1](*(f.cpu() for f in fresh))
        for o, r in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
            assert_exact(o.cpu(), r)


def test_cuda_graph_capture_broadcast_backward():
    # mul_backward with a reduction (a temporary, at::sum and a copy inside the capture).
    grad = make_input((32, 17), torch.float32, "cuda", seed=1)
    a = make_input((32, 1), torch.float32, "cuda", seed=2)
    b = make_input((17,), torch.float32, "cuda", seed=3)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ga, gb = ops._mul_backward(grad, a, b)
    grad.copy_(make_input((32, 17), torch.float32, "cuda", seed=4))
    graph.replay()
    torch.cuda.synchronize()
    g = grad.cpu()
    assert_sum_close(ga.cpu(), mul_ref(g, b.cpu()).double())
    assert_sum_close(gb.cpu(), mul_ref(g, a.cpu()).double())


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(make_input((24,), torch.float32, "cuda", seed=5))

    def forward(self, x):
        return ops.round_ste(ops.mul(ops.relu(x), self.weight))


def test_graphed_forward_and_backward():
    block = Block()
    sample = make_input((8, 24), torch.float32, "cuda", seed=6, requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(block, (sample,))
    x = make_input((8, 24), torch.float32, "cuda", seed=7, requires_grad=True)
    w = make_input((8, 24), torch.float32, "cuda", seed=8)
    block.weight.grad = None
    y = graphed(x)
    y.backward(w)
    weight = block.weight.detach()
    assert_exact(y.detach(), round_ste_ref(mul_ref(relu_ref(x), weight)))
    # round_ste passes w through, mul scales it, relu masks it.
    assert_close(x.grad, torch.where(x.detach() > 0, w * weight, torch.zeros_like(w)))
    assert_close(block.weight.grad, (w * relu_ref(x)).sum(0))


@requires_two_gpus
@pytest.mark.parametrize("name", list(CASES))
def test_second_gpu(name):
    # Tensors on cuda:1 while cuda:0 is current: outputs on cuda:1, kernels on cuda:1's stream.
    src = [s.to("cuda:1") for s in inputs(name, 1 << 20, torch.float32, (0, 1, 0), seed=61)]
    with torch.cuda.device(0):
        out = getattr(ops, name)(*src)
    for o in out if isinstance(out, tuple) else (out,):
        assert o.device == torch.device("cuda:1")
    check(name, *src)
    # cuda:1's current stream is a busy side stream; the op must launch there even with cuda:0
    # current.
    args = [torch.zeros_like(s) for s in src]
    side = torch.cuda.Stream(device="cuda:1")
    side.wait_stream(torch.cuda.current_stream("cuda:1"))
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        for a, s in zip(args, src):
            a.copy_(s)
        with torch.cuda.device(0):
            out = getattr(ops, name)(*args)
    side.synchronize()
    ref = CASES[name][1](*(s.cpu() for s in src))
    for o, r in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
        assert o.device == torch.device("cuda:1")
        assert_exact(o.cpu(), r)


@requires_two_gpus
def test_second_gpu_autograd_and_device_mismatch():
    x = make_input((5, 7), torch.float32, "cuda:1", seed=71, requires_grad=True)
    b = make_input((7,), torch.float32, "cuda:1", seed=72, requires_grad=True)
    w = make_input((5, 7), torch.float32, "cuda:1", seed=73)
    ops.round_ste(ops.mul(ops.relu(x), b)).backward(w)
    assert x.grad.device == torch.device("cuda:1")
    assert_close(x.grad, torch.where(x.detach() > 0, w * b.detach(), torch.zeros_like(w)))
    with pytest.raises(RuntimeError, match=r"gpuaug::mul: expected 'b' on the device of 'a' \(cuda:1\), but got cuda:0"):
        ops.mul(torch.ones(3, device="cuda:1"), torch.ones(3, device="cuda:0"))
